package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
)

// corpusRefused are the corpus files vrrpd refuses, with what it says. Each is one
// keepalived refuses too (its -t reports a configuration error), so refusing it breaks no
// working setup; the test below checks that for every file keepalived accepts.
var corpusRefused = map[string]string{
	// "auth_type PASS;": keepalived reports "unknown authentication type 'PASS;'" and
	// runs without authentication, which its PASS-speaking peers ignore.
	"pub-takawatp-semicolons.conf": `pub-takawatp-semicolons.conf:15: unknown auth_type "PASS;" (want PASS)`,
}

// corpusInterfaces are the interfaces the corpus files name: keepalived -t refuses an
// instance on an interface that does not exist, so the lab has them all.
var corpusInterfaces = []string{"eth1", "eth2", "eth3", "ens160", "ens192", "eth0.0", "eth0.1"}

// Every file of testdata/keepalived-corpus (public keepalived.conf files, each naming its
// source in its first line) goes through "vrrpd check", once per config id its
// "# config-ids:" line lists. Where keepalived is installed (under CI=true it must be),
// keepalived -t checks each too, in a network namespace that has the interfaces the files
// name, and every file keepalived accepts (exit 0) vrrpd must accept. A file keepalived
// refuses may go either way; its exit code is logged. keepalived -t exits 6 when scripts
// run as root without enable_script_security, which says nothing about the rest of the
// file, so only 0 counts as accepted.
func TestCheckKeepalivedCorpus(t *testing.T) {
	files, err := filepath.Glob(fixture.Path("keepalived-corpus", "*.conf"))
	if err != nil || len(files) < 15 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	keepalived := keepalivedTester(t)
	accepted := 0
	for _, f := range files {
		base := filepath.Base(f)
		ids := corpusHeader(t, f)
		for _, id := range ids {
			var out, errb bytes.Buffer
			code := run([]string{"check", "--config", f, "--config-id", id}, &out, &errb)
			want, refused := corpusRefused[base]
			switch {
			case refused && (code != exitConfig || !strings.Contains(errb.String(), want)):
				t.Errorf("%s (id %s): exit %d, want %d with %q\n%s", base, id, code, exitConfig, want, errb.String())
			case !refused && code != exitOK:
				t.Errorf("%s (id %s): vrrpd check exit %d\n%s", base, id, code, errb.String())
			}
			if keepalived == nil {
				continue
			}
			kcode, kout := keepalived(f, id)
			t.Logf("%s (id %s): keepalived -t exit %d, vrrpd check exit %d", base, id, kcode, code)
			if kcode == 0 {
				accepted++
				if code != exitOK {
					t.Errorf("%s (id %s): keepalived accepts it, vrrpd refuses it:\n%s", base, id, errb.String())
				}
			} else if kcode != 5 && kcode != 6 {
				t.Errorf("%s (id %s): keepalived -t exit %d is not a verdict on the file:\n%s", base, id, kcode, kout)
			}
		}
	}
	if keepalived != nil && accepted < 10 {
		t.Errorf("keepalived accepted only %d files: the lab is probably missing something", accepted)
	}
}

// corpusHeader checks that a corpus file names its source on its first line, and returns
// the config ids to check it with ("# config-ids: high low"), or the one id "none".
func corpusHeader(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	ids := []string{"none"}
	for n := 0; sc.Scan() && n < 10; n++ {
		line := sc.Text()
		if n == 0 && !strings.HasPrefix(line, "# source: github.com/") {
			t.Errorf("%s: the first line does not name the source: %q", path, line)
		}
		if v, ok := strings.CutPrefix(line, "# config-ids: "); ok {
			ids = strings.Fields(v)
		}
	}
	return ids
}

// keepalivedTester returns a function that runs keepalived -t on a file in a lab
// namespace, or nil when keepalived cannot run here (then the test checks vrrpd alone,
// except under CI=true, where that is a failure).
func keepalivedTester(t *testing.T) func(path, id string) (int, string) {
	const bin = "/usr/sbin/keepalived"
	_, statErr := os.Stat(bin)
	if statErr != nil || netlab.Usable() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but keepalived -t cannot run: %v / %v", statErr, netlab.Usable())
		}
		t.Logf("keepalived -t not run (%v / %v); checking vrrpd alone", statErr, netlab.Usable())
		return nil
	}
	lab := netlabtest.New(t, "ka")
	h := lab.Host("ka")
	for _, name := range corpusInterfaces {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for _, args := range [][]string{
			{"link", "add", name, "type", "veth", "peer", "name", "p" + name},
			{"link", "set", name, "up"},
		} {
			if out, err := h.Command(ctx, "ip", args...).CombinedOutput(); err != nil {
				cancel()
				t.Fatalf("ip %v: %v: %s", args, err, out)
			}
		}
		cancel()
	}
	return func(path, id string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := h.Command(ctx, bin, "-t", "-f", path, "-i", id).CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out)
		case errors.As(err, &ee):
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("keepalived -t %s: %v", path, err)
		return -1, ""
	}
}
