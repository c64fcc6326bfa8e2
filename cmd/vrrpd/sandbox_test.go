package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/privtest"
	"github.com/vrrp-operator/vrrp-operator/internal/track"
)

// vrrpd check says what the default unit's sandbox would break, and where the drop-in
// is; a configuration without scripts or files gets no such warning.
func TestCheckWarnsAboutTheUnitSandbox(t *testing.T) {
	t.Setenv("INVOCATION_ID", "")
	check1 := func(conf string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run([]string{"check", "--config", writeFile(t, conf)}, &out, &errb); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String(), errb.String()
	}
	if _, e := check1(goodConf); strings.Contains(e, "vrrpd-scripts.conf") {
		t.Errorf("no scripts, yet:\n%s", e)
	}
	defUser := "root"
	if _, err := track.LookupCredential(track.DefaultScriptUser, ""); err == nil {
		defUser = track.DefaultScriptUser
	}
	conf := strings.Replace(goodConf, "  router_id h1\n", "  router_id h1\n  notify_fifo /tmp/vrrpd.fifo\n  vrrp_notify_fifo /run/vrrpd/ok.fifo\n", 1) + `
vrrp_script chk {
  script /bin/true
  user nobody
}
vrrp_script chk_root {
  script /root/check.sh
}
vrrp_instance VI_2 {
  interface eth0
  virtual_router_id 52
  priority 100
  virtual_ipaddress {
    10.99.0.101/24
  }
  track_script {
    chk
    chk_root
  }
  notify_master /bin/true daemon
}
`
	out, e := check1(conf)
	for _, want := range []string{
		"vrrp_script chk runs as user nobody, which needs CAP_SETUID and CAP_SETGID",
		"(VI_2) notify_master runs as user daemon",
		"vrrp_script chk_root runs as " + defUser,
		"/root/check.sh, under /home or /root",
		"vrrp_script chk_root: lstat /root/check.sh: no such file or directory; only a warning",
		"notify FIFO /tmp/vrrpd.fifo: the default unit's /tmp is private",
		"install deploy/vrrpd/vrrpd-scripts.conf as /etc/systemd/system/vrrpd.service.d/scripts.conf",
	} {
		if !strings.Contains(e, want) {
			t.Errorf("stderr lacks %q:\n%s", want, e)
		}
	}
	if strings.Contains(e, "/run/vrrpd/ok.fifo") {
		t.Errorf("a FIFO under /run/vrrpd was warned about:\n%s", e)
	}
	if !strings.Contains(out, "OK") || !strings.Contains(e, "keepalived.conf:") {
		t.Errorf("stdout %q; warnings without file:line:\n%s", out, e)
	}
	// The drop-in's unit (root) runs vrrpd check as its ExecStartPre: nothing to say of
	// the sandbox then, but still of the scripts' paths.
	if os.Geteuid() == 0 {
		t.Setenv("INVOCATION_ID", "0123")
		if _, e := check1(conf); strings.Contains(e, "vrrpd-scripts.conf") || !strings.Contains(e, "lstat /root/check.sh") {
			t.Errorf("under a root unit:\n%s", e)
		}
	}
}

// The unit and its drop-in parse (systemd-analyze verify, where systemd is installed),
// and the drop-in grants what scripts need and no more.
func TestSystemdUnits(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/vrrpd/vrrpd.service")
	if err != nil {
		t.Fatal(err)
	}
	drop, err := os.ReadFile("../../deploy/vrrpd/vrrpd-scripts.conf")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, l := range strings.Split(string(drop), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
			settings[k] = v
		}
	}
	for k, want := range map[string]string{
		"DynamicUser": "no", "User": "root", "PrivateTmp": "no", "ProtectSystem": "full",
		"CapabilityBoundingSet": "CAP_NET_ADMIN CAP_NET_RAW CAP_SETUID CAP_SETGID",
	} {
		if settings[k] != want {
			t.Errorf("drop-in %s=%q, want %q", k, settings[k], want)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no systemd-analyze (package systemd, which .ci/run installs)")
		}
		t.Skip("no systemd-analyze")
	}
	dir := t.TempDir()
	// ExecStart must name an executable for verify; the unit's path is the installed one.
	text := strings.ReplaceAll(string(unit), "/usr/local/sbin/vrrpd", "/bin/true")
	if err := os.WriteFile(filepath.Join(dir, "vrrpd.service"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "vrrpd.service.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vrrpd.service.d", "scripts.conf"), drop, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", "vrrpd.service")
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":")
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// vrrpd check reports a script whose path someone else could change (here a link in a
// directory everyone may write), and that enable_script_security will not run it.
func TestCheckReportsInsecureScripts(t *testing.T) {
	dir := privtest.SharedDir(t)
	link := filepath.Join(dir, "check")
	if err := os.Symlink("/bin/true", link); err != nil {
		t.Fatal(err)
	}
	conf := strings.Replace(goodConf, "  router_id h1\n", "  router_id h1\n  enable_script_security\n  script_user nobody\n", 1) +
		"vrrp_script chk {\n  script " + link + "\n}\n"
	conf = strings.Replace(conf, "  priority 100\n", "  priority 100\n  track_script {\n    chk\n  }\n", 1)
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", writeFile(t, conf)}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "vrrp_script chk: " + dir; !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "enable_script_security: it will not run") {
		t.Errorf("stderr lacks %q and the verdict:\n%s", want, errb.String())
	}
}
