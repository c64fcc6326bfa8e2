package daemon

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/transport"
	"github.com/vrrp-operator/vrrp-operator/vip"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// TestPollReadsLinksSparingly: between netlink events the loop's poll reads the
// interfaces and the masters' VIPs from the kernel only every linkPollInterval (ten
// seconds), but at every poll while an interface is down or a VIP could not be added.
func TestPollReadsLinksSparingly(t *testing.T) {
	h := newFakeHost()
	d := newTestDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"))
	at := takeover(100)
	advance(d, at)
	if st := d.byName["VI_1"].sm.State(); st != vrrp.StateMaster {
		t.Fatalf("%v, want MASTER", st)
	}
	d.mu.Lock() // the loop's: checkInterfacesUnlocking lets go of it around Missing
	defer d.mu.Unlock()
	reads := func() [2]int { return [2]int{h.running, h.missing} }
	d.checkInterfacesUnlocking(at) // an event's check
	after := reads()
	if after[0] == 0 || after[1] == 0 {
		t.Fatalf("the interface check read running %d, missing %d times, want both", after[0], after[1])
	}
	for _, s := range []time.Duration{1, 5, 9} {
		d.poll(at.Add(s * time.Second))
	}
	if got := reads(); got != after {
		t.Errorf("polls within ten seconds of the check read the kernel: %v, was %v", got, after)
	}
	d.poll(at.Add(10 * time.Second))
	if got := reads(); got[0] != after[0]+1 || got[1] != after[1]+1 {
		t.Errorf("the poll ten seconds after the check read %v, was %v: want one more of each", got, after)
	}

	// A VIP taken off that could not be put back: the next poll, a second later, tries again.
	now := at.Add(10 * time.Second)
	v := vip.VIP{Prefix: netip.MustParsePrefix("10.99.0.100/24"), Dev: "eth0"}
	delete(h.held, v)
	h.holdErr = errors.New("netlink: no buffer space")
	d.checkInterfacesUnlocking(now.Add(100 * time.Millisecond))
	h.holdErr = nil
	delete(h.held, v) // the failed add added nothing
	d.poll(now.Add(1100 * time.Millisecond))
	if !h.held[v] {
		t.Error("the poll after a failed add did not put the VIP back")
	}
	now = now.Add(1100 * time.Millisecond)
	before := reads()
	d.poll(now.Add(time.Second))
	if got := reads(); got != before {
		t.Errorf("a poll after the trouble cleared read the kernel: %v, was %v", got, before)
	}

	// An interface down is read at every poll until it is back.
	h.linkErr["eth0"] = transport.ErrInterfaceDown
	d.checkInterfacesUnlocking(now.Add(1500 * time.Millisecond))
	if st := d.byName["VI_1"].sm.State(); st != vrrp.StateFault {
		t.Fatalf("%v with eth0 down, want FAULT", st)
	}
	for i := 2; i <= 4; i++ {
		before := h.running
		d.poll(now.Add(time.Duration(i) * time.Second))
		if h.running != before+1 {
			t.Errorf("poll %d with eth0 down did not read it", i)
		}
	}
	delete(h.linkErr, "eth0")
	d.poll(now.Add(5 * time.Second))
	if st := d.byName["VI_1"].sm.State(); st == vrrp.StateFault {
		t.Error("still FAULT after the poll that found eth0 back")
	}
	before = reads()
	d.poll(now.Add(6 * time.Second))
	if got := reads(); got != before {
		t.Errorf("a poll after eth0 came back read the kernel: %v, was %v", got, before)
	}
}
