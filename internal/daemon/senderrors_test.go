package daemon

import (
	"strings"
	"testing"
	"time"
)

// TestSendErrorsCountedAndWarned: every advertisement the socket refuses is counted in
// the instance's SendErrors (vrrpd_advert_send_errors_total), and warned of once per
// sendFailedWarnEvery, not once per advert: a mute master is never silent, and a master
// on a cut link does not fill the log.
func TestSendErrorsCountedAndWarned(t *testing.T) {
	h := newFakeHost()
	h.batchSockets = true
	d := newRecordingDaemon(t, h)
	startDaemon(t, d, testInstance("VI_1", 1, 100, "10.99.0.100/24"), testInstance("VI_2", 2, 100, "10.99.0.101/24"))
	advance(d, takeover(100))
	if s := snapOf(t, d, "VI_1"); s.SendErrors != 0 {
		t.Fatalf("SendErrors %d before any failure", s.SendErrors)
	}
	h.failVRID = 1
	const intervals = 5
	advance(d, takeover(100).Add(intervals*time.Second)) // testInstance adverts every second
	d.publish(takeover(100).Add(intervals * time.Second))
	if s := snapOf(t, d, "VI_1"); s.SendErrors != intervals {
		t.Errorf("VI_1 SendErrors %d after %d refused adverts", s.SendErrors, intervals)
	}
	if s := snapOf(t, d, "VI_2"); s.SendErrors != 0 {
		t.Errorf("VI_2 SendErrors %d, its adverts all went", s.SendErrors)
	}
	warned := 0
	for _, e := range h.events {
		if strings.Contains(e, "(VI_1) advertisement not sent") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings for %d failures within %v, want 1", warned, intervals, sendFailedWarnEvery)
	}
	// Past the interval the next failure is warned of again, with the suppressed count.
	in := d.byName["VI_1"]
	if in.sendSuppressed != intervals-1 {
		t.Errorf("%d failures suppressed, want %d", in.sendSuppressed, intervals-1)
	}
	in.sendWarned = in.sendWarned.Add(-sendFailedWarnEvery)
	advance(d, takeover(100).Add((intervals+1)*time.Second))
	warned = 0
	for _, e := range h.events {
		if strings.Contains(e, "(VI_1) advertisement not sent") {
			warned++
		}
	}
	if warned != 2 || in.sendSuppressed != 0 {
		t.Errorf("after the interval: %d warnings, %d suppressed; want 2 and 0", warned, in.sendSuppressed)
	}
}
