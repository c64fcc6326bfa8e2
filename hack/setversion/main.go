// Command setversion writes a release's version into every file of the install that names
// it, for make release:
//
//	setversion [-root DIR] [-check] vX.Y.Z[-PRERELEASE]
//
// The files and lines:
//   - deploy/helm/vrrp-operator/Chart.yaml: version X.Y.Z[-PRERELEASE] (the chart's SemVer)
//     and appVersion vX.Y.Z (the images' tag, which image.tag and vrrpd.image.tag default to);
//   - deploy/operator/kustomization.yaml: the operator image's newTag;
//   - deploy/operator/deployment.yaml: the operator's --vrrpd-image;
//   - deploy/operator/policy/policy_configmap.yaml: the admission policy's vrrpdImage.
//
// Each is one line, found by a pattern that must match exactly once (a file reshaped so
// that it matches none or two is an error, not a release that names two versions), and
// replaced in place: the files' comments and layout stay as they are, which a YAML
// decode and encode would not keep. -check changes nothing and fails unless every file
// names the version already.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// version is a release's version: a v and a SemVer 2 version without build metadata (a
// + cannot be in an image tag).
var version = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// edit is one line of one file that names the version.
type edit struct {
	file    string
	pattern *regexp.Regexp
	// line is the line's new text for version v.
	line func(v string) string
}

var edits = []edit{
	{"deploy/helm/vrrp-operator/Chart.yaml", regexp.MustCompile(`(?m)^version: .*$`),
		func(v string) string { return "version: " + strings.TrimPrefix(v, "v") }},
	{"deploy/helm/vrrp-operator/Chart.yaml", regexp.MustCompile(`(?m)^appVersion: .*$`),
		func(v string) string { return "appVersion: " + v }},
	{"deploy/operator/kustomization.yaml", regexp.MustCompile(`(?m)^- name: ghcr\.io/vrrp-operator/operator\n  newTag: .*$`),
		func(v string) string { return "- name: ghcr.io/vrrp-operator/operator\n  newTag: " + v }},
	{"deploy/operator/deployment.yaml", regexp.MustCompile(`(?m)^        - --vrrpd-image=ghcr\.io/vrrp-operator/vrrpd:.*$`),
		func(v string) string { return "        - --vrrpd-image=ghcr.io/vrrp-operator/vrrpd:" + v }},
	{"deploy/operator/policy/policy_configmap.yaml", regexp.MustCompile(`(?m)^  vrrpdImage: ghcr\.io/vrrp-operator/vrrpd:.*$`),
		func(v string) string { return "  vrrpdImage: ghcr.io/vrrp-operator/vrrpd:" + v }},
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "setversion:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("setversion", flag.ContinueOnError)
	root := fs.String("root", ".", "the repository's root")
	check := fs.Bool("check", false, "change nothing; fail unless every file names the version")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: setversion [-root DIR] [-check] vX.Y.Z")
	}
	return set(*root, fs.Arg(0), *check)
}

// set rewrites the files for version v, or with check only compares. Every file is read
// and every pattern matched before anything is written: a bad file leaves all unchanged.
func set(root, v string, check bool) error {
	if !version.MatchString(v) {
		return fmt.Errorf("version %q: want v and a SemVer version, e.g. v0.2.0 or v0.2.0-rc.1", v)
	}
	files := map[string][]byte{}
	var order []string
	var stale []string
	for _, e := range edits {
		data, ok := files[e.file]
		if !ok {
			b, err := os.ReadFile(filepath.Join(root, e.file))
			if err != nil {
				return err
			}
			data = b
			order = append(order, e.file)
		}
		if n := len(e.pattern.FindAllIndex(data, -1)); n != 1 {
			return fmt.Errorf("%s: %d lines match %s, want exactly one", e.file, n, e.pattern)
		}
		loc := e.pattern.FindIndex(data)
		if string(data[loc[0]:loc[1]]) != e.line(v) {
			stale = append(stale, fmt.Sprintf("%s: %q", e.file, data[loc[0]:loc[1]]))
		}
		var out bytes.Buffer
		out.Write(data[:loc[0]])
		out.WriteString(e.line(v))
		out.Write(data[loc[1]:])
		files[e.file] = out.Bytes()
	}
	if check {
		if len(stale) > 0 {
			return fmt.Errorf("not at %s:\n  %s", v, strings.Join(stale, "\n  "))
		}
		return nil
	}
	for _, f := range order {
		p := filepath.Join(root, f)
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, files[f], st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
