package transport_test

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/netlabtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport"
)

// TestPacketSocketFrames sends one advertisement through the IP stack (the default) and
// the same through the packet socket (Options.PacketSocket), and checks that the receiving
// host gets the same frame from both: the same IP header byte for byte (but IPv4's
// identification and so its checksum, which must verify, and IPv6's flow label, which the
// kernel fills with a hash of the flow and the packet socket leaves 0), the same source
// MAC, the same multicast destination and the same message.
func TestPacketSocketFrames(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a", "b")
	a, b := lab.Host("a"), lab.Host("b")
	for _, tc := range []struct {
		fam   transport.Family
		group netip.Addr
		proto uint16
	}{
		{transport.IPv4, group4, unix.ETH_P_IP},
		{transport.IPv6, group6, unix.ETH_P_IPV6},
	} {
		t.Run(tc.fam.String(), func(t *testing.T) {
			viaIP := open(t, a, tc.fam, transport.Options{})
			viaPacket := open(t, a, tc.fam, transport.Options{PacketSocket: true})
			cb := open(t, b, tc.fam, transport.Options{})
			ipFrames, ipWhy := viaIP.SendsFrames()
			pkFrames, pkWhy := viaPacket.SendsFrames()
			if ipFrames || !pkFrames || ipWhy != nil || pkWhy != nil {
				t.Fatalf("SendsFrames: %v (%v) by default, %v (%v) with PacketSocket; want false, true", ipFrames, ipWhy, pkFrames, pkWhy)
			}
			warmUp(t, viaPacket, cb, tc.group)
			capture := captureSocket(t, b, tc.proto)
			msg := []byte{0x31, 42, 100, 1, 0, 100, 0x12, 0x34, 10, 99, 0, 100}
			var frames [2]capturedFrame
			for i, c := range []*transport.Conn{viaIP, viaPacket} {
				if err := c.Send(msg, tc.group); err != nil {
					t.Fatalf("Send: %v", err)
				}
				frames[i] = readVRRPFrame(t, capture, msg)
				// And the receiving Conn takes it like any other.
				if p := readOne(t, cb); !bytes.Equal(p.Payload, msg) || p.TTL != 255 || p.Dst != tc.group {
					t.Errorf("received %x TTL %d to %v, want %x TTL 255 to %v", p.Payload, p.TTL, p.Dst, msg, tc.group)
				}
			}
			ip, pk := frames[0], frames[1]
			if tc.fam == transport.IPv4 {
				if sum := checksum16(pk.header); sum != 0xffff {
					t.Errorf("IPv4 header checksum does not verify: %#x", sum)
				}
				// The identification (meaningless with DF set) and so the checksum differ.
				for _, h := range [][]byte{ip.header, pk.header} {
					clear(h[4:6])
					clear(h[10:12])
				}
			} else {
				// The packet socket's own header, on the wire: no flow label.
				if label := binary.BigEndian.Uint32(pk.header[0:4]) & 0xfffff; label != 0 {
					t.Errorf("flow label %#x through the packet socket, want 0", label)
				}
				// Version and traffic class must match; the flow label may not.
				ip.header[1] &^= 0x0f
				ip.header[2], ip.header[3] = 0, 0
				pk.header[1] &^= 0x0f
				pk.header[2], pk.header[3] = 0, 0
			}
			if !bytes.Equal(ip.header, pk.header) {
				t.Errorf("IP header through the packet socket %x, through the IP stack %x", pk.header, ip.header)
			}
			if ip.srcMAC != pk.srcMAC || ip.pktType != pk.pktType || pk.pktType != unix.PACKET_MULTICAST {
				t.Errorf("frames from %x (type %d) through the packet socket, %x (type %d) through the IP stack; want the same, multicast",
					pk.srcMAC, pk.pktType, ip.srcMAC, ip.pktType)
			}
			// The packet socket is bound to the family's EtherType to send with it, and
			// its drop-all filter keeps it from queueing the interface's traffic: here b's
			// adverts to a, of that very EtherType.
			for range 20 {
				if err := cb.Send(msg, tc.group); err != nil {
					t.Fatalf("Send from b: %v", err)
				}
			}
			if _, err := readTimeout(viaIP, make([]transport.Packet, 32), 5*time.Second); err != nil { // a heard them
				t.Fatalf("a heard none of b's adverts: %v", err)
			}
			if n, ok, err := viaPacket.PacketSocketQueued(); !ok || err != nil || n != 0 {
				t.Errorf("the packet socket queued %d packets (has one: %v, %v), want 0", n, ok, err)
			}
		})
	}
}

// captureSocket is a packet socket in h's namespace that reads every frame of protocol
// proto on h's link, network header first, with a two-second read timeout.
func captureSocket(t *testing.T, h *netlab.Host, proto uint16) int {
	t.Helper()
	var fd int
	err := h.Do(func() error {
		var err error
		be := proto<<8 | proto>>8
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(be))
		if err != nil {
			return err
		}
		ifi, err := h.Netlink()
		if err != nil {
			return err
		}
		defer ifi.Close()
		l, err := ifi.LinkByName(h.Link)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: be, Ifindex: l.Attrs().Index}); err != nil {
			return err
		}
		tv := unix.NsecToTimeval((2 * time.Second).Nanoseconds())
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	})
	if err != nil {
		t.Fatalf("capture socket in %s: %v", h.Name, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

type capturedFrame struct {
	header  []byte // the IP header
	srcMAC  [6]byte
	pktType uint8
}

// readVRRPFrame reads frames from fd until one carries msg, and returns it.
func readVRRPFrame(t *testing.T, fd int, msg []byte) capturedFrame {
	t.Helper()
	buf := make([]byte, 2048)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			t.Fatalf("capture: %v", err)
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok || n < 1 {
			continue
		}
		hl := 40
		if buf[0]>>4 == 4 {
			hl = int(buf[0]&0x0f) * 4
		}
		if n < hl || !bytes.Equal(buf[hl:n], msg) {
			continue
		}
		f := capturedFrame{header: append([]byte(nil), buf[:hl]...), pktType: ll.Pkttype}
		copy(f.srcMAC[:], ll.Addr[:6])
		return f
	}
	t.Fatalf("no frame carrying %x captured", msg)
	return capturedFrame{}
}

// checksum16 is the ones' complement sum of b: 0xffff over a header whose checksum is right.
func checksum16(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return uint16(sum)
}

// TestPacketSocketNotOnTunnels: an interface without an Ethernet header (here a tun
// device, link type "none") keeps the IP stack even when the packet socket is asked
// for, with no error to report, and its adverts
// go out through it: the test reads the one it sends from the tun device's other end.
func TestPacketSocketNotOnTunnels(t *testing.T) {
	netlabtest.Require(t)
	lab := netlabtest.New(t, "a")
	a := lab.Host("a")
	var tun *os.File
	if err := a.Do(func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0) // in the poller: deadlines
		if err != nil {
			return err
		}
		ifr, err := unix.NewIfreq("tun1")
		if err != nil {
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return err
		}
		tun = os.NewFile(uintptr(fd), "tun1")
		return nil
	}); err != nil {
		t.Fatalf("tun device in %s: %v", a.Name, err)
	}
	defer tun.Close()
	for _, args := range [][]string{{"addr", "add", "10.99.1.1/30", "dev", "tun1"}, {"link", "set", "tun1", "up"}} {
		if out, err := a.Command(t.Context(), "ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	var c *transport.Conn
	if err := a.Do(func() (err error) {
		c, err = transport.Open("tun1", transport.IPv4, transport.Options{PacketSocket: true})
		return err
	}); err != nil {
		t.Fatalf("Open(tun1): %v", err)
	}
	defer c.Close()
	if frames, why := c.SendsFrames(); frames || why != nil {
		t.Errorf("SendsFrames on a tun device = %v, %v; want false, nil", frames, why)
	}
	msg := []byte{0x31, 7, 100, 1, 0, 100, 0x12, 0x34, 10, 99, 1, 2}
	if err := c.Send(msg, group4); err != nil {
		t.Fatalf("Send on a tun device: %v", err)
	}
	if err := tun.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	for {
		n, err := tun.Read(buf)
		if err != nil {
			t.Fatalf("nothing of protocol 112 came out of the tun device: %v", err)
		}
		// Other packets (IPv6 router solicitations, MLD) may come first.
		if n >= 20 && buf[0]>>4 == 4 && buf[9] == 112 {
			if got := buf[int(buf[0]&0x0f)*4 : n]; !bytes.Equal(got, msg) || buf[8] != 255 {
				t.Errorf("the tun device got %x with TTL %d, want %x with TTL 255", got, buf[8], msg)
			}
			return
		}
	}
}
