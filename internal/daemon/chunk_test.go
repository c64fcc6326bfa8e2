package daemon

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/config"
)

// TestManyVIPsAddedInChunks (issue 31): an instance taking over with hundreds of
// addresses (its excluded VIPs here) adds them holdChunk at a time, each chunk one Hold
// after one Reserve of them all (the crash record written once, ahead), and the adverts
// that fall due meanwhile go out between the chunks: another master at 10 ms, whose
// advert would otherwise wait for every address of the slow add.
func TestManyVIPsAddedInChunks(t *testing.T) {
	h := newFakeHost()
	d := newRecordingDaemon(t, h)
	fast := testInstance("VI_1", 1, 150, "10.99.0.100/24")
	fast.AdvertInterval = 10 * time.Millisecond
	many := testInstance("VI_2", 2, 100, "10.99.0.101/24")
	const n = 300
	for i := range n {
		many.ExcludedVIPs = append(many.ExcludedVIPs, config.VIP{Prefix: netip.MustParsePrefix(fmt.Sprintf("10.99.%d.%d/32", 1+i/250, 1+i%250)), Dev: "eth0"})
	}
	startDaemon(t, d, fast, many)
	advance(d, takeover(100).Add(-time.Millisecond)) // VI_1 master, advertising
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=BACKUP" {
		t.Fatalf("before VI_2's takeover: %s", s)
	}
	h.events, h.reserved = nil, nil
	h.addDelay = 4 * time.Millisecond // each Hold: ~ 64 netlink adds
	advance(d, takeover(100))
	if s := publishedStates(d); s != "VI_1=MASTER VI_2=MASTER" {
		t.Fatalf("after VI_2's takeover: %s", s)
	}
	var adds []int // how many addresses each Hold of the excluded ones was given
	firstAdd, lastAdd, between := -1, -1, 0
	for i, e := range h.events {
		if strings.HasPrefix(e, "add ") && strings.Contains(e, "/32") {
			adds = append(adds, strings.Count(e, "/32"))
			if firstAdd < 0 {
				firstAdd = i
			}
			lastAdd = i
		}
	}
	for _, e := range h.events[max(firstAdd, 0):max(lastAdd, 0)] {
		if e == "advert vrid 1 priority 150" {
			between++
		}
	}
	total := 0
	for _, a := range adds {
		total += a
		if a > holdChunk {
			t.Errorf("a Hold of %d addresses, want at most %d", a, holdChunk)
		}
	}
	if total != n || len(adds) != (n+holdChunk-1)/holdChunk {
		t.Errorf("the excluded VIPs were added in %d Holds of %v, want %d addresses in %d", len(adds), adds, n, (n+holdChunk-1)/holdChunk)
	}
	reservedExcluded := 0
	for _, r := range h.reserved {
		if strings.Count(r, "/32") == n {
			reservedExcluded++
		}
	}
	if reservedExcluded != 1 {
		t.Errorf("Reserve calls %q: want one of all %d excluded VIPs", h.reserved, n)
	}
	if between == 0 {
		t.Errorf("no advert of VI_1 (10 ms) between the chunks of VI_2's %d addresses, %v of adds:\n%s", n, time.Duration(len(adds))*h.addDelay, strings.Join(h.events, "\n"))
	}
	if h.turns != 0 {
		t.Errorf("%d turns left open", h.turns)
	}
}
