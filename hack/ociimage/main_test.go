package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// smallBinaries builds an empty Go program, static, for each architecture (-trimpath, as
// make cross and cross-check build, so the standard library comes from their cache).
func smallBinaries(t *testing.T, arches ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, arch := range arches {
		bin := filepath.Join(dir, "small-"+arch)
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build for %s: %v\n%s", arch, err, b)
		}
		out[arch] = bin
	}
	return out
}

// TestImageIndex builds a two-architecture image from small static binaries and reads
// the layout back with go-containerregistry: the index names the image, validates, holds
// one image per platform in order, each with the platform's architecture, the entrypoint,
// user, port and labels asked for, and one OCI layer holding exactly the binary, root's,
// mode 0755. The same inputs give the same digest.
func TestImageIndex(t *testing.T) {
	bins := smallBinaries(t, "amd64", "arm64")
	created := "2026-11-28T12:00:00Z"
	args := func(out string) []string {
		return []string{"-out", out, "-name", "ghcr.io/vrrp-operator/vrrpd:v1.2.3", "-path", "/vrrpd",
			"-user", "65532:65532", "-port", "9650", "-label", "org.opencontainers.image.version=v1.2.3",
			"-created", created, "linux/amd64=" + bins["amd64"], "linux/arm64=" + bins["arm64"]}
	}
	out := filepath.Join(t.TempDir(), "layout")
	if err := run(args(out)); err != nil {
		t.Fatal(err)
	}

	top, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json lists %+v, want one OCI image index", tm.Manifests)
	}
	if a := tm.Manifests[0].Annotations; a["io.containerd.image.name"] != "ghcr.io/vrrp-operator/vrrpd:v1.2.3" || a["org.opencontainers.image.ref.name"] != "v1.2.3" {
		t.Errorf("annotations %v", a)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Errorf("validate.Index: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("%d manifests, want 2", len(im.Manifests))
	}
	wantTime, _ := time.Parse(time.RFC3339, created)
	for i, arch := range []string{"amd64", "arm64"} {
		d := im.Manifests[i]
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != arch || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("manifest %d: platform %+v media type %s, want linux/%s OCI", i, d.Platform, d.MediaType, arch)
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.OS != "linux" || !cf.Created.Time.Equal(wantTime) {
			t.Errorf("%s: config %s/%s created %v", arch, cf.OS, cf.Architecture, cf.Created)
		}
		c := cf.Config
		if !reflect.DeepEqual(c.Entrypoint, []string{"/vrrpd"}) || c.User != "65532:65532" || len(c.Cmd) != 0 ||
			!reflect.DeepEqual(c.ExposedPorts, map[string]struct{}{"9650/tcp": {}}) ||
			!reflect.DeepEqual(c.Labels, map[string]string{"org.opencontainers.image.version": "v1.2.3"}) {
			t.Errorf("%s: config %+v", arch, c)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		if len(layers) != 1 {
			t.Fatalf("%s: %d layers", arch, len(layers))
		}
		if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
			t.Errorf("%s: layer media type %s", arch, mt)
		}
		want, err := os.ReadFile(bins[arch])
		if err != nil {
			t.Fatal(err)
		}
		checkFiles(t, img, want)
	}

	again := filepath.Join(t.TempDir(), "layout")
	if err := run(args(again)); err != nil {
		t.Fatal(err)
	}
	top2, err := layout.ImageIndexFromPath(again)
	if err != nil {
		t.Fatal(err)
	}
	tm2, err := top2.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if tm2.Manifests[0].Digest != tm.Manifests[0].Digest {
		t.Errorf("the same inputs gave %s, then %s", tm.Manifests[0].Digest, tm2.Manifests[0].Digest)
	}
}

// checkFiles: the image's file system (mutate.Extract flattens its layers) is the binary
// alone, at /vrrpd, root's, 0755.
func checkFiles(t *testing.T, img v1.Image, want []byte) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		got, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "vrrpd" || h.Typeflag != tar.TypeReg || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !bytes.Equal(got, want) {
			t.Errorf("file %s: type %c mode %o uid %d gid %d, %d bytes (want %d)", h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, len(got), len(want))
		}
	}
	if len(names) != 1 {
		t.Errorf("files %v, want only vrrpd", names)
	}
}

// TestRefusals: what would make a broken image or overwrite one is refused.
func TestRefusals(t *testing.T) {
	bins := smallBinaries(t, "amd64")
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte(strings.Repeat("#!/bin/sh\necho\n", 10)), 0o755); err != nil {
		t.Fatal(err)
	}
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-name", "ghcr.io/x/vrrpd:v1", "-path", "/vrrpd", "linux/arm64=" + bins["amd64"]}, "not an executable for linux/arm64"},
		{[]string{"-name", "ghcr.io/x/vrrpd:v1", "-path", "/vrrpd", "linux/amd64=" + notELF}, "bad magic"},
		{[]string{"-name", "ghcr.io/x/vrrpd:v1", "-path", "/vrrpd", "linux/riscv64=" + bins["amd64"]}, "want linux/amd64"},
		{[]string{"-name", "ghcr.io/x/vrrpd", "-path", "/vrrpd", "linux/amd64=" + bins["amd64"]}, "want REPOSITORY:TAG"},
		{[]string{"-name", "ghcr.io/x/vrrpd:v1", "-path", "vrrpd", "linux/amd64=" + bins["amd64"]}, "want an absolute path"},
		{[]string{"-name", "ghcr.io/x/vrrpd:v1", "-path", "/vrrpd", "linux/amd64=" + bins["amd64"], "linux/amd64=" + bins["amd64"]}, "given twice"},
		{[]string{"-name", "ghcr.io/x/vrrpd:v1", "-path", "/vrrpd"}, "no PLATFORM=BINARY"},
	} {
		args := append([]string{"-out", filepath.Join(t.TempDir(), "layout")}, tc.args...)
		if err := run(args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
	err := run([]string{"-out", full, "-name", "ghcr.io/x/vrrpd:v1", "-path", "/vrrpd", "linux/amd64=" + bins["amd64"]})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a non-empty -out: %v", err)
	}
}
