package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const scriptsConf = `global_defs {
    notify_fifo /run/vrrpd.fifo
    script_user nobody nogroup
    enable_script_security
}
vrrp_script chk_web {
    script "/usr/bin/curl -sf 'http://127.0.0.1/a b'"
    interval 3
    timeout 1
    weight -30
    rise 2
    fall 3
    init_fail
    user www-data
}
vrrp_script chk_up {
    script /bin/true
    weight 10 reverse
}
vrrp_script unused {
    script /bin/false
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority 100
    track_script {
        chk_web
        chk_up weight 20
        nosuch
    }
    notify_master "/etc/n.sh master" root
    notify_backup /etc/b.sh
    notify_fault "/etc/f.sh"
    notify_stop /etc/s.sh
    notify /etc/all.sh
    virtual_ipaddress {
        10.99.0.100/24
    }
}
`

func TestKeepalivedScripts(t *testing.T) {
	cfg, ws, err := Parse("s.conf", []byte(scriptsConf))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.Error())
	}
	want := []string{`s.conf:30: (VI_1) track_script nosuch: no vrrp_script of that name; ignored`}
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if cfg.ScriptSettings != (ScriptSettings{User: "nobody", Group: "nogroup", Security: true, NotifyFIFO: "/run/vrrpd.fifo"}) {
		t.Errorf("script settings %+v", cfg.ScriptSettings)
	}
	if len(cfg.Scripts) != 2 {
		t.Fatalf("scripts %+v: want the two tracked ones", cfg.Scripts)
	}
	up, web := cfg.Scripts[0], cfg.Scripts[1]
	if !slices.Equal(web.Command, []string{"/usr/bin/curl", "-sf", "http://127.0.0.1/a b"}) ||
		web.Interval != 3*time.Second || web.Timeout != time.Second || web.Weight != -30 ||
		web.Rise != 2 || web.Fall != 3 || !web.InitFail || web.User != "www-data" || web.Source.Line != 6 {
		t.Errorf("chk_web %+v", web)
	}
	if up.Name != "chk_up" || up.Interval != time.Second || up.Weight != 10 || !up.Reverse || up.Rise != 1 || up.Fall != 1 {
		t.Errorf("chk_up %+v", up)
	}
	in := cfg.Instances[0]
	wantTrack := []TrackScript{{Script: "chk_web", Weight: -30}, {Script: "chk_up", Weight: 20}}
	if !slices.Equal(in.TrackScripts, wantTrack) {
		t.Errorf("track %+v, want %+v", in.TrackScripts, wantTrack)
	}
	n := in.Notify
	if !slices.Equal(n.Master.Args, []string{"/etc/n.sh", "master"}) || n.Master.User != "root" ||
		!slices.Equal(n.Backup.Args, []string{"/etc/b.sh"}) || !slices.Equal(n.Fault.Args, []string{"/etc/f.sh"}) ||
		!slices.Equal(n.Stop.Args, []string{"/etc/s.sh"}) || !slices.Equal(n.Generic.Args, []string{"/etc/all.sh"}) {
		t.Errorf("notify %+v", n)
	}
	// A changed hook or weight makes the instance differ on reload.
	other := in
	other.TrackScripts = slices.Clone(in.TrackScripts)
	other.TrackScripts[0].Weight = -10
	if in.Equal(other) {
		t.Error("a changed track weight compares equal")
	}
	other = in
	other.Notify.Stop.Args = []string{"/etc/other.sh"}
	if in.Equal(other) {
		t.Error("a changed notify hook compares equal")
	}
}

func TestKeepalivedScriptRules(t *testing.T) {
	// The address owner keeps a weight-0 script but not a weighted one.
	conf := strings.Replace(scriptsConf, "priority 100", "priority 255", 1)
	cfg, ws, err := Parse("s.conf", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if tr := cfg.Instances[0].TrackScripts; len(tr) != 0 {
		t.Errorf("owner tracks %+v, want no weighted script", tr)
	}
	if !strings.Contains(FormatWarnings(ws), "s.conf:28: (VI_1) track_script chk_web: an address owner (priority 255) cannot have a weighted script") {
		t.Errorf("warnings:\n%s", FormatWarnings(ws))
	}
	errs := []struct{ edit, want string }{
		{"weight -30", "weight -254"},
		{"rise 2", "rise 0"},
		{"interval 3", "interval x"},
		{"chk_up weight 20", "chk_up weight 300"},
		{`script /bin/true`, `script "/bin/true 'x"`},
	}
	for _, e := range errs {
		bad := strings.Replace(scriptsConf, e.edit, e.want, 1)
		_, _, err := Parse("s.conf", []byte(bad))
		if err == nil || !strings.HasPrefix(err.Error(), "s.conf:") {
			t.Errorf("%q: err %v, want a file:line error", e.want, err)
		}
	}
}

const scriptsYAML = `notifyFifo: /run/vrrpd.fifo
scriptUser: nobody
scriptGroup: nogroup
enableScriptSecurity: true
scripts:
  - name: chk_web
    command: "/usr/bin/curl -sf 'http://127.0.0.1/a b'"
    interval: 3s
    timeout: 1s
    weight: -30
    rise: 2
    fall: 3
    initFail: true
    user: www-data
  - name: chk_up
    command: /bin/true
    weight: 10
    reverse: true
instances:
  - name: VI_1
    interface: eth0
    vrid: 51
    priority: 100
    trackScripts:
      - name: chk_web
      - name: chk_up
        weight: 20
    notify:
      master: /etc/n.sh master
      backup: /etc/b.sh
      fault: /etc/f.sh
      stop: /etc/s.sh
      all: /etc/all.sh
    vips: [10.99.0.100/24]
`

// The YAML keys give what the keepalived.conf keywords give.
func TestYAMLScripts(t *testing.T) {
	y, _, err := Parse("s.yaml", []byte(scriptsYAML))
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := Parse("s.conf", []byte(scriptsConf))
	if err != nil {
		t.Fatal(err)
	}
	if y.ScriptSettings != k.ScriptSettings || len(y.Scripts) != len(k.Scripts) {
		t.Fatalf("yaml %+v %+v, conf %+v %+v", y.ScriptSettings, y.Scripts, k.ScriptSettings, k.Scripts)
	}
	for i := range y.Scripts {
		a, b := y.Scripts[i], k.Scripts[i]
		a.Source, b.Source = Position{}, Position{}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("yaml script %+v, conf %+v", a, b)
		}
	}
	yi, ki := y.Instances[0], k.Instances[0]
	ki.Notify.Master.User = "" // the conf names a user for this one hook
	if !slices.Equal(yi.TrackScripts, ki.TrackScripts) || !yi.Notify.Equal(ki.Notify) {
		t.Errorf("yaml instance %+v %+v, conf %+v %+v", yi.TrackScripts, yi.Notify, ki.TrackScripts, ki.Notify)
	}
	for _, bad := range []struct{ from, to, line string }{
		{"weight: -30", "weight: -300", "s.yaml:10:"},
		{"rise: 2", "rise: 0", "s.yaml:11:"},
		{"interval: 3s", "interval: 1ns", "s.yaml:8:"},   // not started over without a pause
		{"interval: 3s", "interval: 5000s", "s.yaml:8:"}, // at most maxScriptSeconds, as keepalived.conf
		{"timeout: 1s", "timeout: 0s", "s.yaml:9:"},
		{"command: /bin/true", "command: \"'x\"", "s.yaml:16:"},
		{"        weight: 20", "        weight: 999", "s.yaml:27:"},
		{"      all: /etc/all.sh", "      all: \"\\\"x\"", "s.yaml:33:"},
	} {
		_, _, err := Parse("s.yaml", []byte(strings.Replace(scriptsYAML, bad.from, bad.to, 1)))
		if err == nil || !strings.HasPrefix(err.Error(), bad.line) {
			t.Errorf("%q: err %v, want one at %s", bad.to, err, bad.line)
		}
	}
}

// An unknown user or group fails the whole configuration at its line, in both forms:
// keepalived would run the scripts of an unknown script_user as root, or drop the hook.
func TestUnknownScriptUser(t *testing.T) {
	const nouser = "vrrpd-no-such-user"
	for _, c := range []struct{ name, from, to, at string }{
		{"s.conf", "script_user nobody nogroup", "script_user " + nouser, "s.conf:3:"},
		{"s.conf", "script_user nobody nogroup", "script_user nobody vrrpd-no-such-group", "s.conf:3:"},
		{"s.conf", "user www-data", "user " + nouser, "s.conf:14:"},
		{"s.conf", `notify_master "/etc/n.sh master" root`, `notify_master "/etc/n.sh master" ` + nouser, "s.conf:32:"},
		{"s.conf", `notify_stop /etc/s.sh`, `notify_stop /etc/s.sh root vrrpd-no-such-group`, "s.conf:35:"},
		{"s.yaml", "scriptUser: nobody", "scriptUser: " + nouser, "s.yaml:2:"},
		{"s.yaml", "scriptGroup: nogroup", "scriptGroup: vrrpd-no-such-group", "s.yaml:2:"},
		{"s.yaml", "user: www-data", "user: " + nouser, "s.yaml:6:"},
		{"s.yaml", "      all: /etc/all.sh\n", "      all: /etc/all.sh\n      user: " + nouser + "\n", "s.yaml:20:"},
	} {
		src := scriptsConf
		if strings.HasSuffix(c.name, ".yaml") {
			src = scriptsYAML
		}
		bad := strings.Replace(src, c.from, c.to, 1)
		if bad == src {
			t.Fatalf("%s: %q not found", c.name, c.from)
		}
		cfg, _, err := Parse(c.name, []byte(bad))
		if err == nil || cfg != nil {
			t.Errorf("%s %q: cfg %v err %v, want an error and nothing", c.name, c.to, cfg != nil, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.at) || !strings.Contains(err.Error(), "never run as root") {
			t.Errorf("%s %q: %v, want it at %s", c.name, c.to, err, c.at)
		}
	}
}
