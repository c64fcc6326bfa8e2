package main

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
)

// echo sends one ICMP (or ICMPv6) echo request from host h to dst and waits up to
// timeout for its reply; it returns the round-trip time. It is the demo's ping, in Go, so
// that the demo needs no ping command: a raw ICMP socket opened inside h's namespace
// (the demo runs as root), matched to its reply by identifier and sequence number.
func echo(h *netlab.Host, dst netip.Addr, seq int, timeout time.Duration) (time.Duration, error) {
	network, listen, proto := "ip4:icmp", "0.0.0.0", 1
	var reqType, replyType icmp.Type = ipv4.ICMPTypeEcho, ipv4.ICMPTypeEchoReply
	if dst.Is6() {
		network, listen, proto = "ip6:ipv6-icmp", "::", 58
		reqType, replyType = ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply
	}
	var c *icmp.PacketConn
	if err := h.Do(func() (err error) {
		c, err = icmp.ListenPacket(network, listen)
		return err
	}); err != nil {
		return 0, fmt.Errorf("ICMP socket in %s: %w", h.Name, err)
	}
	defer c.Close()

	id := os.Getpid() & 0xffff
	msg := icmp.Message{Type: reqType, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("vrrpd demo")}}
	b, err := msg.Marshal(nil) // the kernel fills in the ICMPv6 checksum
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := c.WriteTo(b, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
		return 0, fmt.Errorf("echo request to %s: %w", dst, err)
	}
	if err := c.SetReadDeadline(start.Add(timeout)); err != nil {
		return 0, err
	}
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return 0, fmt.Errorf("no echo reply from %s within %v: %w", dst, timeout, err)
		}
		// A raw socket sees every ICMP message of the host: keep only our reply.
		m, err := icmp.ParseMessage(proto, buf[:n])
		if err != nil || m.Type != replyType {
			continue
		}
		e, ok := m.Body.(*icmp.Echo)
		src, _ := netip.AddrFromSlice(from.(*net.IPAddr).IP)
		if !ok || e.ID != id || e.Seq != seq || src.Unmap() != dst {
			continue
		}
		return time.Since(start), nil
	}
}
