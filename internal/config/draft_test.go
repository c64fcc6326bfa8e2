package config

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestDraftSettersMatchKeywords: an instance built with the setters (as
// Kubernetes mode builds it) resolves exactly like the keepalived.conf
// instance with the same keywords.
func TestDraftSettersMatchKeywords(t *testing.T) {
	conf := `vrrp_instance web {
  interface eth0
  virtual_router_id 7
  priority 200
  state BACKUP
  version 2
  advert_int 3
  nopreempt
  unicast_src_ip 10.99.0.1
  unicast_peer {
    10.99.0.2
  }
  authentication {
    auth_type PASS
    auth_pass secret
  }
  virtual_ipaddress {
    10.99.0.100
  }
  garp_master_repeat 2
}
`
	want, _, err := Parse("k.conf", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDraft("web", Position{File: "KeepalivedGroup ns/g"})
	d.SetInterface("eth0")
	d.SetVRID(7)
	d.SetPriority(200)
	d.SetState(StateBackup)
	d.SetVersion(vrrp.Version2)
	d.SetAdvertInterval(3 * time.Second)
	d.SetPreempt(false)
	d.SetUnicast(netip.MustParseAddr("10.99.0.1"), []netip.Addr{netip.MustParseAddr("10.99.0.2")})
	if note := d.SetAuthPass("secret", "password"); note != "" {
		t.Errorf("note %q", note)
	}
	d.AddVIP(VIP{Prefix: netip.MustParsePrefix("10.99.0.100/32")})
	if notes, err := d.SetKeyword("garp_master_repeat", []string{"2"}); err != nil || len(notes) != 0 {
		t.Fatal(notes, err)
	}
	got, ws, err := Resolve(d, DefaultGlobals(), Options{})
	if err != nil || len(ws) != 0 {
		t.Fatal(err, ws)
	}
	if !got.Equal(want.Instances[0]) {
		t.Errorf("setters:\n%+v\nkeywords:\n%+v", got, want.Instances[0])
	}
}

// TestSetKeywordBadValueChangesNothing: a bad value is an error and leaves
// the draft or globals as they were, so a caller may ignore it (Kubernetes
// mode does, with a warning).
func TestSetKeywordBadValueChangesNothing(t *testing.T) {
	d := NewDraft("x", Position{})
	if _, err := d.SetKeyword("preempt_delay", []string{"2"}); err != nil {
		t.Fatal(err)
	}
	before := *d
	for _, kw := range [][]string{{"preempt_delay", "soon"}, {"mcast_dst_ip", "10.0.0.1"}, {"garp_master_repeat", "-1"}, {"priority", "0"}, {"state", "LEADER"}} {
		if _, err := d.SetKeyword(kw[0], kw[1:]); err == nil || errors.Is(err, ErrUnknownKeyword) {
			t.Errorf("%v: %v", kw, err)
		}
	}
	if d.preemptDelay != before.preemptDelay || d.mcast != before.mcast || d.garp != before.garp || d.priority != nil || d.state != "" {
		t.Errorf("bad values changed the draft: %+v", d)
	}
	if _, err := d.SetKeyword("track_src_ip", nil); !errors.Is(err, ErrUnknownKeyword) {
		t.Errorf("track_src_ip: %v", err)
	}
	g := DefaultGlobals()
	if _, err := g.SetKeyword("vrrp_garp_master_delay", []string{"soon"}); err == nil || g != DefaultGlobals() {
		t.Errorf("bad global value: %v, %+v", err, g)
	}
	if notes, err := g.SetKeyword("vrrp_garp_master_repeat", []string{"0"}); err != nil || len(notes) != 1 || g.garp.MasterRepeat != 1 {
		t.Errorf("repeat 0: %v %v %d", notes, err, g.garp.MasterRepeat)
	}
}

// TestResolveMissingPassword: without a password, a VRRPv2 instance that
// asks for authentication runs without it (keepalived's warning), unless
// the source says that is an error (Kubernetes mode); VRRPv3 ignores
// authentication either way.
func TestResolveMissingPassword(t *testing.T) {
	draft := func(v vrrp.Version) *Draft {
		d := NewDraft("a", Position{File: "src"})
		d.SetInterface("eth0")
		d.SetVRID(1)
		d.SetVersion(v)
		d.AddVIP(VIP{Prefix: netip.MustParsePrefix("10.99.0.100/32")})
		d.SetAuthPass("", "password")
		return d
	}
	in, ws, err := Resolve(draft(vrrp.Version2), DefaultGlobals(), Options{})
	if err != nil || in.AuthType != vrrp.AuthNone || len(ws) != 1 || !strings.Contains(ws[0].Message, "no password given") {
		t.Errorf("file: %v %v %v", in.AuthType, ws, err)
	}
	opt := Options{MissingPassword: "no password in Secret s"}
	if _, _, err := Resolve(draft(vrrp.Version2), DefaultGlobals(), opt); err == nil || err.Error() != "src: (a) no password in Secret s" {
		t.Errorf("Kubernetes: %v", err)
	}
	if _, ws, err := Resolve(draft(vrrp.Version3), DefaultGlobals(), opt); err != nil || len(ws) != 1 || !strings.Contains(ws[0].Message, "version 3 does not support authentication") {
		t.Errorf("v3: %v %v", ws, err)
	}
}
