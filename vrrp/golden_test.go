package vrrp_test

import (
	"bufio"
	"bytes"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vrrp-operator/vrrp-operator/internal/testing/fixture"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/pcapfile"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

// capturedAdvert is one VRRP message from a capture, with the IP header fields it needs.
type capturedAdvert struct {
	index    int // packet number in the file, from 1 as tcpdump and wireshark count
	src, dst netip.Addr
	ttl      uint8
	msg      []byte
}

// readAdverts returns every VRRP message of a capture in testdata/keepalived, and the number of
// packets in the file.
func readAdverts(t testing.TB, file string) ([]capturedAdvert, int) {
	t.Helper()
	pkts, err := pcapfile.ReadFile(fixture.Keepalived(file))
	if err != nil {
		t.Fatal(err)
	}
	var out []capturedAdvert
	for i, p := range pkts {
		ip, ok := pcapfile.ParseIP(p.LinkType, p.Data)
		if !ok || ip.Protocol != vrrp.IPProtocol {
			continue
		}
		out = append(out, capturedAdvert{index: i + 1, src: ip.Src, dst: ip.Dst, ttl: ip.TTL, msg: ip.Payload})
	}
	return out, len(pkts)
}

// authPass reads auth_type and auth_pass from a keepalived config in testdata/keepalived, so
// the golden test checks the password the capture was made with, not a copy of it.
func authPass(t *testing.T, conf string) (vrrp.AuthType, [8]byte) {
	t.Helper()
	f, err := os.Open(fixture.Keepalived(conf))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	typ := vrrp.AuthNone
	var pass [8]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		switch fields[0] {
		case "auth_type":
			if fields[1] == "PASS" {
				typ = vrrp.AuthSimple
			}
		case "auth_pass":
			pass, _ = vrrp.SimplePassword(fields[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return typ, pass
}

// The golden vectors: what each keepalived 2.2.7 capture holds (see testdata/keepalived/README.md),
// counted independently with tcpdump.
var goldenCaptures = []struct {
	file       string
	conf       string // a config of the capture, for the auth settings
	packets    int    // packets in the file
	adverts    int    // VRRP advertisements among them
	priZero    int    // of which priority 0 (each side resigning when stopped)
	version    vrrp.Version
	vrid       uint8
	interval   time.Duration
	addresses  []string
	priorities map[uint8]bool
}{
	{
		file: "keepalived-v2-ipv4-auth.pcap", conf: "v2-auth-h1.conf",
		packets: 5, adverts: 5, priZero: 2,
		version: vrrp.Version2, vrid: 51, interval: time.Second,
		addresses:  []string{"10.99.0.100"},
		priorities: map[uint8]bool{0: true, 100: true, 150: true},
	},
	{
		file: "keepalived-v3-ipv4.pcap", conf: "v3-ipv4-h1.conf",
		packets: 127, adverts: 127, priZero: 2,
		version: vrrp.Version3, vrid: 51, interval: 50 * time.Millisecond,
		addresses:  []string{"10.99.0.100", "10.99.0.101"},
		priorities: map[uint8]bool{0: true, 100: true, 150: true},
	},
	{
		file: "keepalived-v3-ipv4-unicast.pcap", conf: "v3-unicast-h1.conf",
		packets: 63, adverts: 63, priZero: 2,
		version: vrrp.Version3, vrid: 51, interval: 100 * time.Millisecond,
		addresses:  []string{"10.99.0.100"},
		priorities: map[uint8]bool{0: true, 100: true, 150: true},
	},
	{
		file: "keepalived-v3-ipv6.pcap", conf: "v3-ipv6-h1.conf",
		packets: 62, adverts: 62, priZero: 2,
		version: vrrp.Version3, vrid: 52, interval: 100 * time.Millisecond,
		addresses:  []string{"fd00:99::100"},
		priorities: map[uint8]bool{0: true, 100: true, 150: true},
	},
	{
		// Gratuitous ARPs and neighbour advertisements only: no advertisement to check,
		// and the test proves that nothing in it is mistaken for one.
		file: "keepalived-garp-na.pcap", packets: 8, adverts: 0,
	},
}

// TestGoldenCaptures decodes every VRRP packet keepalived 2.2.7 sent in the captures,
// verifies its checksum and authentication, and re-encodes it to identical bytes.
func TestGoldenCaptures(t *testing.T) {
	for _, g := range goldenCaptures {
		t.Run(g.file, func(t *testing.T) {
			adverts, packets := readAdverts(t, g.file)
			if packets != g.packets || len(adverts) != g.adverts {
				t.Fatalf("%d packets with %d advertisements, want %d with %d", packets, len(adverts), g.packets, g.adverts)
			}
			if g.adverts == 0 {
				return
			}
			authType, pass := authPass(t, g.conf)
			var a vrrp.Advertisement
			priZero := 0
			for _, c := range adverts {
				if err := a.Unmarshal(c.msg, c.src, c.dst); err != nil {
					t.Fatalf("packet %d: %v", c.index, err)
				}
				if a.ChecksumForm != vrrp.ChecksumPseudoHeader {
					t.Errorf("packet %d: checksum form %v, keepalived sends %v", c.index, a.ChecksumForm, vrrp.ChecksumPseudoHeader)
				}
				if err := a.CheckAuth(authType, pass); err != nil {
					t.Errorf("packet %d: CheckAuth with the config's settings: %v", c.index, err)
				}
				if c.ttl != 255 {
					t.Errorf("packet %d: TTL %d", c.index, c.ttl)
				}
				if a.Version != g.version || a.VRID != g.vrid || a.Interval() != g.interval || !g.priorities[a.Priority] {
					t.Errorf("packet %d: version %d VRID %d interval %v priority %d", c.index, a.Version, a.VRID, a.Interval(), a.Priority)
				}
				if len(a.Addresses) != len(g.addresses) {
					t.Fatalf("packet %d: addresses %v, want %v", c.index, a.Addresses, g.addresses)
				}
				for i, want := range g.addresses {
					if a.Addresses[i] != netip.MustParseAddr(want) {
						t.Errorf("packet %d: addresses %v, want %v", c.index, a.Addresses, g.addresses)
					}
				}
				if a.Priority == 0 {
					priZero++
				}
				wire := a.Checksum
				out, err := a.AppendMarshal(nil, c.src, c.dst)
				if err != nil {
					t.Fatalf("packet %d: re-encoding: %v", c.index, err)
				}
				if !bytes.Equal(out, c.msg) || a.Checksum != wire {
					t.Errorf("packet %d: re-encoded\n %x\nwant\n %x", c.index, out, c.msg)
				}
			}
			t.Logf("%d advertisements decoded, verified and re-encoded", len(adverts))
			if priZero != g.priZero {
				t.Errorf("%d priority-0 advertisements, want %d", priZero, g.priZero)
			}
		})
	}
}

// A v2 advertisement with the right password fails authentication with any other.
func TestGoldenWrongPassword(t *testing.T) {
	adverts, _ := readAdverts(t, "keepalived-v2-ipv4-auth.pcap")
	var a vrrp.Advertisement
	if err := a.Unmarshal(adverts[0].msg, adverts[0].src, adverts[0].dst); err != nil {
		t.Fatal(err)
	}
	wrong, _ := vrrp.SimplePassword("secret2")
	if err := a.CheckAuth(vrrp.AuthSimple, wrong); err != vrrp.ErrAuthFailure {
		t.Errorf("CheckAuth with a wrong password: %v, want ErrAuthFailure", err)
	}
	if err := a.CheckAuth(vrrp.AuthNone, [8]byte{}); err != vrrp.ErrAuthTypeMismatch {
		t.Errorf("CheckAuth expecting no auth: %v, want ErrAuthTypeMismatch", err)
	}
}
