package config

import (
	"strings"
	"testing"
)

// TestDownTimerAdverts: keepalived's down_timer_adverts (1..100; RFC 5798's 3, held as 0,
// when unset),
// one keyword table entry read by keepalived.conf, YAML and a Service's verbatim keywords
// alike, reaching the state machine; strict mode keeps the RFC's 3, as keepalived does.
func TestDownTimerAdverts(t *testing.T) {
	inst := "instances:\n- name: T\n  interface: eth0\n  vrid: 51\n  vips: [10.99.0.100/24]\n"
	for _, tt := range []struct {
		name, file, conf string
		want             int
		warn, err        string
	}{
		{"default", "d.conf", kaConf("", ""), 0, "", ""},
		{"the RFC's", "d.conf", kaConf("", "down_timer_adverts 3"), 0, "", ""},
		{"conf", "d.conf", kaConf("", "down_timer_adverts 5"), 5, "", ""},
		{"conf 1", "d.conf", kaConf("", "down_timer_adverts 1"), 1, "", ""},
		{"YAML", "d.yaml", inst + "  downTimerAdverts: 7\n", 7, "", ""},
		{"global", "d.conf", kaConf("vrrp_down_timer_adverts 4", ""), 4, "", ""},
		{"instance over global", "d.conf", kaConf("vrrp_down_timer_adverts 4", "down_timer_adverts 6"), 6, "", ""},
		{"YAML defaults", "d.yaml", "defaults:\n  downTimerAdverts: 2\n" + inst, 2, "", ""},
		{"strict", "d.conf", kaConf("", "strict_mode\ndown_timer_adverts 5"), 0,
			"down_timer_adverts is incompatible with strict mode; using 3", ""},
		// keepalived 2.2.7 reports a bad value and goes on without it
		// (vrrp_down_timer_adverts_handler); so does vrrpd in keepalived.conf, YAML refuses it.
		{"conf 0", "d.conf", kaConf("", "down_timer_adverts 0"), 0,
			`d.conf:4: down_timer_adverts "0" is not a number between 1 and 100; line skipped, as keepalived skips it`, ""},
		{"conf 101", "d.conf", kaConf("", "down_timer_adverts 101"), 0,
			`d.conf:4: down_timer_adverts "101" is not a number between 1 and 100; line skipped, as keepalived skips it`, ""},
		{"YAML 0", "d.yaml", inst + "  downTimerAdverts: 0\n", 0, "",
			`d.yaml:6: instance "T": downTimerAdverts "0" is not a number between 1 and 100`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ws, err := Parse(tt.file, []byte(tt.conf))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in := cfg.Instances[0]
			if in.DownTimerAdverts != tt.want || in.StateMachineConfig(in.VIPs[0].Prefix.Addr()).DownTimerAdverts != tt.want {
				t.Errorf("DownTimerAdverts %d, want %d", in.DownTimerAdverts, tt.want)
			}
			if text := FormatWarnings(ws); (tt.warn == "") != (text == "") || !strings.Contains(text, tt.warn) {
				t.Errorf("warnings %q, want %q", text, tt.warn)
			}
		})
	}
	// A Service's verbatim keyword sets it as the file's does; a bad one changes nothing.
	d := NewDraft("A", Position{})
	if _, err := d.SetKeyword("down_timer_adverts", []string{"2"}); err != nil || d.downTimerAdverts != 2 {
		t.Errorf("verbatim: %v, %d", err, d.downTimerAdverts)
	}
	if _, err := d.SetKeyword("down_timer_adverts", []string{"200"}); err == nil || d.downTimerAdverts != 2 {
		t.Errorf("verbatim 200: %v, %d", err, d.downTimerAdverts)
	}
}
