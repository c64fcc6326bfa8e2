package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const goodConf = `global_defs {
  router_id h1
  vrrp_version 3
}
vrrp_instance VI_1 {
  state BACKUP
  interface eth0
  virtual_router_id 51
  priority 100
  advert_int 0.1
  virtual_ipaddress {
    10.99.0.100/24
  }
}
`

func TestCheck(t *testing.T) {
	cases := []struct {
		name     string
		conf     string
		code     int
		stdout   string
		stderr   []string
		noStderr bool
	}{
		{name: "ok", conf: goodConf, code: 0, stdout: "1 instance(s), 0 warning(s): OK", noStderr: true},
		{name: "unknown keyword is a warning with file:line", conf: strings.Replace(goodConf, "  priority 100\n", "  priority 100\n  frobnicate 3\n", 1),
			code: 0, stdout: "1 warning(s): OK", stderr: []string{"keepalived.conf:10:", "warning:", "frobnicate"}},
		{name: "syntax error exits 2 with file:line", conf: strings.Replace(goodConf, "  priority 100\n", "  priority 100 {\n", 1),
			code: 2, stderr: []string{"keepalived.conf:"}},
		{name: "bad value exits 2 with file:line", conf: strings.Replace(goodConf, "virtual_router_id 51", "virtual_router_id 300", 1),
			code: 2, stderr: []string{"keepalived.conf:8:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"check", "--config", writeFile(t, tc.conf)}, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.stdout)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errb.String(), s) {
					t.Errorf("stderr %q lacks %q", errb.String(), s)
				}
			}
			if tc.noStderr && errb.Len() > 0 {
				t.Errorf("unexpected stderr %q", errb.String())
			}
		})
	}
}

func TestCheckRealKeepalivedConfigs(t *testing.T) {
	files, _ := fixture.KeepalivedConfigs()
	if len(files) == 0 {
		t.Fatal("no configs found")
	}
	for _, f := range files {
		var out, errb bytes.Buffer
		if code := run([]string{"check", "--config", f}, &out, &errb); code != 0 {
			t.Errorf("%s: exit %d: %s", f, code, errb.String())
		}
	}
}

// A warning repeated in every instance is one line with a count.
func TestCheckGroupsWarnings(t *testing.T) {
	var conf strings.Builder
	for i := 1; i <= 3; i++ {
		conf.WriteString(strings.NewReplacer("VI_1", fmt.Sprintf("VI_%d", i), "virtual_router_id 51", fmt.Sprintf("virtual_router_id %d", i),
			"10.99.0.100", fmt.Sprintf("10.99.0.%d", i), "  priority 100\n", "  priority 100\n  track_process {\n    eth9\n  }\n").Replace(goodConf[strings.Index(goodConf, "vrrp_instance"):]))
	}
	path := writeFile(t, conf.String())
	var out, errb bytes.Buffer
	if code := run([]string{"check", "--config", path}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// The rules' warnings about an instance group the same way (without the global_defs
	// of goodConf, advert_int 0.1 is VRRPv2's and rounded).
	want := path + `:6: warning: "track_process" block in vrrp_instance VI_1 is not supported by vrrpd yet; ignored: the VIP will not follow the process (3 times; the last at ` + path + ":32)\n" +
		path + ":9: warning: (VI_1) VRRPv2 advertisement interval 100ms must be whole seconds; rounding to 1s (3 times; the last at " + path + ":35)\n"
	if errb.String() != want || !strings.Contains(out.String(), "3 instance(s), 2 warning(s): OK") {
		t.Errorf("stderr:\n%s\nwant:\n%s\nstdout: %s", errb.String(), want, out.String())
	}
}

// --config-id (and -i) selects keepalived.conf's "@ID" lines, as keepalived's -i does.
func TestCheckConfigID(t *testing.T) {
	conf := writeFile(t, strings.Replace(goodConf, "  interface eth0\n", "@a  interface eth0\n@^a  @b interface eth1\n", 1))
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"-i", "a"}, exitOK, "1 instance(s), 0 warning(s): OK"},
		{[]string{"--config-id", "a"}, exitOK, "1 instance(s), 0 warning(s): OK"},
		// On any other router the "@^a" line stays, as "@b interface eth1": keepalived
		// does not look at a second '@', so the keyword is "@b".
		{[]string{"--config-id", "c"}, exitConfig, "(VI_1) no interface given"},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"check", "--config", conf}, tc.args...), &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.out) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", tc.args, code, tc.code, tc.out, out.String(), errb.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	cases := map[string][]string{
		"no config":                   {},
		"kubernetes mode":             {"--group", "ns/name", "--node", "n1"},
		"stray argument":              {"--config", "x", "extra"},
		"check no config":             {"check"},
		"bad log level":               {"--config", "x", "--log-level", "loud"},
		"password file without group": {"--config", "x", "--password-file", "/etc/vrrpd/password/password"},
		"metrics host not an address": {"--config", "x", "--metrics-host", "node1.example"},
		"metrics host every address":  {"--config", "x", "--metrics-host", "::"},
		"status metrics host":         {"status", "--metrics-host", "node1"},
	}
	for name, args := range cases {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitConfig {
			t.Errorf("%s: exit %d, want %d (%s)", name, code, exitConfig, errb.String())
		}
		if errb.Len() == 0 {
			t.Errorf("%s: no message", name)
		}
	}
}

func TestLocalURL(t *testing.T) {
	for in, want := range map[string]string{
		":9650":         "http://127.0.0.1:9650",
		"0.0.0.0:9650":  "http://127.0.0.1:9650",
		"10.0.0.1:9100": "http://10.0.0.1:9100",
		"[::1]:9650":    "http://[::1]:9650",
		"[::]:9650":     "http://127.0.0.1:9650",
	} {
		if got := localURL(in); got != want {
			t.Errorf("localURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestListenAddress(t *testing.T) {
	for _, tc := range []struct{ addr, host, want string }{
		{":9650", "", ":9650"},
		{"", "10.0.0.1", ""}, // disabled stays disabled
		{":9650", "10.0.0.1", "10.0.0.1:9650"},
		{"0.0.0.0:9100", "10.0.0.1", "10.0.0.1:9100"},
		{":9650", "fd00:99::1", "[fd00:99::1]:9650"}, // status.hostIP has no brackets
		{":9650", "[fd00:99::1]", "[fd00:99::1]:9650"},
		{":9650", "::ffff:10.0.0.1", "[::ffff:10.0.0.1]:9650"},
	} {
		got, err := listenAddress(tc.addr, tc.host)
		if err != nil || got != tc.want {
			t.Errorf("listenAddress(%q, %q) = %q, %v; want %q", tc.addr, tc.host, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ addr, host string }{
		{":9650", "node1"},
		{":9650", "0.0.0.0"},
		{":9650", "::"},
		{":9650", "fe80::1%eth0"},
		{"9650", "10.0.0.1"},
	} {
		if got, err := listenAddress(tc.addr, tc.host); err == nil {
			t.Errorf("listenAddress(%q, %q) = %q, want an error", tc.addr, tc.host, got)
		}
	}
}
