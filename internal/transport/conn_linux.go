package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// A Conn is the VRRP socket of one interface and one address family. ReadBatch must be
// called from one goroutine at a time (the daemon's reader); Send, Source, Refresh, Stats
// and Close are safe to call from any goroutine.
type Conn struct {
	ifname string
	fam    Family
	group  netip.Addr
	opt    Options

	ipc  *net.IPConn
	raw  syscall.RawConn
	p4   *ipv4.PacketConn // socket options only; reads and writes go through raw
	p6   *ipv6.PacketConn
	nl   *netlink.Handle // opened in the Conn's namespace, so Refresh works from anywhere
	recv receiver

	closed atomic.Bool

	mu      sync.Mutex // guards the fields below and the send scratch
	ifindex int
	source  netip.Addr
	srcErr  error // why source is invalid, when it is
	send    sender
	batch   sendBatch   // SendBatch's scratch
	link    *linkSender // multicast adverts as frames (linksend_linux.go); nil: the IP stack
	linkErr error       // why link is nil although Options.PacketSocket is set
	ether   bool        // the interface has Ethernet headers (refresh)
	mtu     int         // the interface's MTU (refresh)

	received atomic.Uint64
	dropped  atomic.Uint64
}

// drainSocket reads and discards whatever the non-blocking socket fd has queued, and
// returns how many packets that was.
func drainSocket(fd int) int {
	var buf [1]byte
	n := 0
	for {
		_, _, err := unix.Recvfrom(fd, buf[:], unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n
		}
		n++
	}
}

// Open opens the VRRP socket of interface ifname for family fam: bound to the device, joined
// to the VRRP group on it, multicast loopback off, TTL / hop limit 255 for both multicast and
// unicast, and the kernel asked to report each packet's arrival time and, for IPv6 (whose
// raw sockets deliver no IP header), its destination, interface and hop limit.
//
// Open fails with ErrNoInterface when ifname does not exist, and with ErrNoAddress when no
// source address can be found (an interface without IPv4 address yet, or whose IPv6
// link-local address is still tentative); the caller retries later.
func Open(ifname string, fam Family, opt Options) (*Conn, error) {
	if fam != IPv4 && fam != IPv6 {
		return nil, fmt.Errorf("transport: open %s: %w: %v", ifname, errFamily, fam)
	}
	opt.Group, opt.Source = opt.Group.Unmap(), opt.Source.Unmap()
	group := opt.Group
	if !group.IsValid() {
		group = fam.Multicast()
	}
	if vrrp.FamilyOf(group) != fam || !group.IsMulticast() {
		return nil, fmt.Errorf("transport: open %s: group %v is not an %v multicast address: %w", ifname, group, fam, errFamily)
	}
	if opt.Source.IsValid() && vrrp.FamilyOf(opt.Source) != fam {
		return nil, fmt.Errorf("transport: open %s: source %v: %w", ifname, opt.Source, errFamily)
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = DefaultBatchSize
	}

	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("transport: open %s: netlink: %w", ifname, err)
	}
	c := &Conn{ifname: ifname, fam: fam, group: group.WithZone(""), opt: opt, nl: nl}
	if err := c.refresh(); err != nil {
		nl.Close()
		return nil, err
	}
	if err := c.openSocket(); err != nil {
		nl.Close()
		return nil, err
	}
	if opt.PacketSocket && c.ether {
		// A host that refuses the packet socket (a security module, a sandbox) still
		// has the IP stack, the default: fall back, and say why. Interfaces that are not
		// Ethernet (tunnels, tun) always use the IP stack.
		c.link, c.linkErr = openLinkSender(c.ifindex, fam, c.group)
	}
	c.recv.init(c, opt.BatchSize)
	c.send.init(c)
	return c, nil
}

func (c *Conn) openSocket() error {
	network, laddr := "ip4:112", "0.0.0.0"
	if c.fam == IPv6 {
		network, laddr = "ip6:112", "::"
	}
	// Bind to the device at once. A raw socket receives from its creation, so packets of
	// other interfaces may be queued in the instant before SO_BINDTODEVICE: they are read
	// and thrown away here, before anyone reads the socket. After that the kernel queues
	// only this interface's packets (but one that another CPU was delivering at that very
	// instant, a window of well under a microsecond at open), and IPv4 needs no
	// IP_PKTINFO to say where each came from (IPv6 keeps it for the destination address);
	// IP_PKTINFO cost every packet a control message in the sender's softirq and in
	// recvmmsg, about 3 % of a backup's CPU at 50 instances (issue 12).
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, c.ifname)
			if serr == nil {
				c.dropped.Add(uint64(drainSocket(int(fd)))) // counted like ReadBatch's drops
			}
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("SO_BINDTODEVICE: %w", err)
		}
		return nil
	}}
	pc, err := lc.ListenPacket(bgContext, network, laddr)
	if err != nil {
		return c.wrap("listen", err)
	}
	c.ipc = pc.(*net.IPConn)
	c.raw, err = c.ipc.SyscallConn()
	if err != nil {
		c.ipc.Close()
		return c.wrap("syscall conn", err)
	}
	if err := c.configure(); err != nil {
		c.ipc.Close()
		return err
	}
	return nil
}

func (c *Conn) configure() error {
	ifi := &net.Interface{Index: c.ifindex, Name: c.ifname}
	group := &net.IPAddr{IP: net.IP(c.group.AsSlice())}
	var sockopts []sockopt
	switch c.fam {
	case IPv4:
		c.p4 = ipv4.NewPacketConn(c.ipc)
		if err := c.p4.SetMulticastInterface(ifi); err != nil {
			return c.wrap("IP_MULTICAST_IF", err)
		}
		if err := c.p4.SetMulticastLoopback(false); err != nil {
			return c.wrap("IP_MULTICAST_LOOP", err)
		}
		if err := c.p4.SetMulticastTTL(255); err != nil {
			return c.wrap("IP_MULTICAST_TTL", err)
		}
		if err := c.p4.SetTTL(255); err != nil {
			return c.wrap("IP_TTL", err)
		}
		if !c.opt.NoJoin {
			if err := c.p4.JoinGroup(ifi, group); err != nil {
				return c.wrap("join "+c.group.String(), err)
			}
		}
		// TTL, source and destination come from the IPv4 header the raw socket delivers,
		// and the arrival interface is the bound device (openSocket): no control message.
		sockopts = []sockopt{
			// Without this Linux delivers multicast of every group any socket on the host
			// joined, e.g. another daemon's vrrp_mcast_group4.
			{unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0, "IP_MULTICAST_ALL", false},
		}
	case IPv6:
		c.p6 = ipv6.NewPacketConn(c.ipc)
		// We compute and verify the VRRP checksum ourselves (see the package doc).
		if err := c.p6.SetChecksum(false, 0); err != nil {
			return c.wrap("IPV6_CHECKSUM", err)
		}
		if err := c.p6.SetMulticastInterface(ifi); err != nil {
			return c.wrap("IPV6_MULTICAST_IF", err)
		}
		if err := c.p6.SetMulticastLoopback(false); err != nil {
			return c.wrap("IPV6_MULTICAST_LOOP", err)
		}
		if err := c.p6.SetMulticastHopLimit(255); err != nil {
			return c.wrap("IPV6_MULTICAST_HOPS", err)
		}
		if err := c.p6.SetHopLimit(255); err != nil {
			return c.wrap("IPV6_UNICAST_HOPS", err)
		}
		if !c.opt.NoJoin {
			if err := c.p6.JoinGroup(ifi, group); err != nil {
				return c.wrap("join "+c.group.String(), err)
			}
		}
		// A raw IPv6 socket delivers no header: the destination and interface
		// (IPV6_RECVPKTINFO) and the hop limit (IPV6_RECVHOPLIMIT) come as control
		// messages, which recv_linux.go parses.
		if err := c.p6.SetControlMessage(ipv6.FlagDst|ipv6.FlagInterface|ipv6.FlagHopLimit, true); err != nil {
			return c.wrap("IPV6_RECVPKTINFO, IPV6_RECVHOPLIMIT", err)
		}
		sockopts = []sockopt{
			// Linux 4.20+; older kernels simply deliver more, which the VRID demux absorbs.
			// Neither this, IP_MULTICAST_ALL, SO_TIMESTAMPNS nor SO_RCVBUFFORCE is
			// offered by x/net.
			{unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL, 0, "IPV6_MULTICAST_ALL", false},
		}
	}
	// The arrival time of every packet (Packet.Arrived); a kernel without it leaves the
	// reader to time packets when it reads them.
	sockopts = append(sockopts, sockopt{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS", false})
	for _, o := range sockopts {
		if err := c.setsockopt(o.level, o.name, o.value); err != nil && o.required {
			return c.wrap(o.desc, err)
		}
	}
	// Root (CAP_NET_ADMIN) may exceed rmem_max; otherwise settle for what SO_RCVBUF allows.
	if err := c.setsockopt(unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, readBuffer); err != nil {
		_ = c.ipc.SetReadBuffer(readBuffer)
	}
	return nil
}

type sockopt struct {
	level, name, value int
	desc               string
	required           bool
}

func (c *Conn) setsockopt(level, name, value int) error {
	var serr error
	err := c.raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), level, name, value)
	})
	if err != nil {
		return err
	}
	return serr
}

// Refresh re-reads the interface: its index, whether it is up, and (unless Options.Source
// was given) the source address. It returns ErrNoInterface, ErrInterfaceDown or
// ErrNoAddress (wrapped) when the Conn cannot send, so the daemon can hold its instances
// in FAULT until a later Refresh succeeds. If the interface was deleted and re-created the
// Conn must be closed and opened again (the error says so).
func (c *Conn) Refresh() error {
	if c.closed.Load() {
		return ErrClosed
	}
	oldIndex := c.ifIndex()
	if err := c.refresh(); err != nil {
		return err
	}
	if idx := c.ifIndex(); idx != oldIndex {
		return fmt.Errorf("transport: %s was re-created (index %d, was %d): reopen: %w", c.ifname, idx, oldIndex, ErrNoInterface)
	}
	return nil
}

// refresh looks the interface up through the Conn's own netlink handle.
func (c *Conn) refresh() error {
	link, err := c.nl.LinkByName(c.ifname)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("transport: %s: %w", c.ifname, ErrNoInterface)
		}
		return fmt.Errorf("transport: look up %s: %w", c.ifname, err)
	}
	attrs := link.Attrs()
	src, srcErr := c.opt.Source, error(nil)
	if !src.IsValid() {
		srcLink := link
		if c.opt.SourceInterface != "" {
			if srcLink, err = c.nl.LinkByName(c.opt.SourceInterface); err != nil {
				return fmt.Errorf("transport: source interface %s: %w", c.opt.SourceInterface, ErrNoInterface)
			}
		}
		src, srcErr = c.pickSource(srcLink)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ifindex == 0 {
		c.ifindex = attrs.Index
	}
	if attrs.Index != c.ifindex {
		// Reported by Refresh; keep the old index for the socket's sake.
		return nil
	}
	c.source, c.srcErr = src, srcErr
	c.ether = attrs.EncapType == "ether" && len(attrs.HardwareAddr) == 6
	c.mtu = attrs.MTU
	if attrs.RawFlags&unix.IFF_UP == 0 {
		return fmt.Errorf("transport: %s: %w (administratively down)", c.ifname, ErrInterfaceDown)
	}
	// keepalived goes to FAULT on carrier loss too (IFF_RUNNING), e.g. a pulled cable.
	if attrs.RawFlags&unix.IFF_RUNNING == 0 {
		return fmt.Errorf("transport: %s: %w (no carrier)", c.ifname, ErrInterfaceDown)
	}
	return srcErr
}

// pickSource chooses the address adverts are sent from when none is configured: for IPv4
// the interface's primary address, skipping secondaries because the virtual addresses vrrpd
// adds in the same subnet become secondaries and must not be the source (they move); for
// IPv6 the link-local address (RFC 5798 §5.1.2.1), once duplicate address detection has
// finished with it.
func (c *Conn) pickSource(link netlink.Link) (netip.Addr, error) {
	src, missing, err := c.readSource(link)
	if missing && c.Source().IsValid() {
		// The source we had is not in a dump the kernel did not flag as interrupted.
		// Under heavy churn (a thousand IPv6 adds and removes) an address dump can
		// still miss an entry unflagged (the kernel's dump resumes by position, and
		// a removal before that position shifts the rest), so one read does not
		// take a source away: a second must agree. A source that really went is
		// missing from both.
		src, _, err = c.readSource(link)
	}
	return src, err
}

// readSource is one read of pickSource: the addresses of link, dumped again while the
// kernel flags the dump as interrupted, and the source among them; missing says a dump
// the kernel did not flag lists no source at all.
func (c *Conn) readSource(link netlink.Link) (src netip.Addr, missing bool, err error) {
	nlfam := netlink.FAMILY_V4
	if c.fam == IPv6 {
		nlfam = netlink.FAMILY_V6
	}
	addrs, err := c.nl.AddrList(link, nlfam)
	for tries := 0; errors.Is(err, netlink.ErrDumpInterrupted) && tries < dumpRetries; tries++ {
		addrs, err = c.nl.AddrList(link, nlfam)
	}
	if errors.Is(err, netlink.ErrDumpInterrupted) {
		// Still changing: what the dump lists was there, but what it does not list may be
		// there too. A list that may be incomplete never changes the source, nor takes
		// it away: that would put every instance on the interface in FAULT for a
		// moment's churn. A source that really went is found at the next Refresh (the
		// next address event, a send that fails, the daemon's link poll).
		if prev := c.Source(); prev.IsValid() {
			return prev, false, nil
		}
		if src, _, ok := c.sourceIn(addrs); ok {
			return src, false, nil
		}
		return netip.Addr{}, false, fmt.Errorf("transport: list addresses of %s: %w (%w)", c.ifname, ErrNoAddress, err)
	}
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("transport: list addresses of %s: %w", c.ifname, err)
	}
	src, tentative, ok := c.sourceIn(addrs)
	if ok {
		return src, false, nil
	}
	if tentative {
		return netip.Addr{}, false, fmt.Errorf("transport: %s: link-local address still tentative (DAD): %w", c.ifname, ErrNoAddress)
	}
	if c.fam == IPv4 {
		return netip.Addr{}, true, fmt.Errorf("transport: %s has no primary IPv4 address: %w", c.ifname, ErrNoAddress)
	}
	return netip.Addr{}, true, fmt.Errorf("transport: %s has no IPv6 link-local address: %w", c.ifname, ErrNoAddress)
}

// dumpRetries is how many times pickSource reads the addresses again when the kernel
// flags a dump as interrupted (NLM_F_DUMP_INTR: an address of the namespace changed while
// it was read; the library filters by interface after the dump, so any interface's
// count). A master that took over an instance of a thousand IPv6 VIPs sees its own adds
// go on after the last one returned: the kernel announces each from a work queue (dumps
// were still interrupted 9 ms after on the test machine, longer under load), and every
// announcement wakes a Refresh. A read of a thousand addresses takes a few milliseconds.
const dumpRetries = 3

// sourceIn picks the source among addrs (see pickSource); tentative says a link-local
// address was passed over because duplicate address detection is not done with it.
func (c *Conn) sourceIn(addrs []netlink.Addr) (src netip.Addr, tentative, ok bool) {
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		switch c.fam {
		case IPv4:
			if !ip.Is4() || a.Flags&unix.IFA_F_SECONDARY != 0 {
				continue
			}
			return ip, tentative, true
		case IPv6:
			if !ip.Is6() || !ip.IsLinkLocalUnicast() {
				continue
			}
			if a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
				tentative = true
				continue
			}
			return ip, tentative, true
		}
	}
	return netip.Addr{}, tentative, false
}

// Source is the address adverts are sent from; the VRRP checksum's pseudo-header must use
// it. It is invalid (the zero Addr) when the interface has no usable address.
func (c *Conn) Source() netip.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.source
}

// MTU is the interface's MTU as last seen (Open, Refresh): an advertisement longer than
// it, with its IP header, is refused by the kernel (EMSGSIZE), never fragmented.
func (c *Conn) MTU() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mtu
}

// Group is the multicast group this Conn joined (or would have, with NoJoin).
func (c *Conn) Group() netip.Addr { return c.group }

// ifIndex is the index of the Conn's interface.
func (c *Conn) ifIndex() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ifindex
}

// Stats returns the Conn's counters.
func (c *Conn) Stats() Stats {
	return Stats{Received: c.received.Load(), Dropped: c.dropped.Load()}
}

// Close closes the socket; a ReadBatch blocked in another goroutine returns ErrClosed.
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	err := c.ipc.Close()
	c.nl.Close()
	c.mu.Lock()
	if c.link != nil {
		c.link.close()
		c.link = nil
	}
	c.mu.Unlock()
	return err
}

// wrap turns a socket error into one that names the interface and step, mapping the errnos
// that mean "the interface is not usable right now" to this package's sentinel errors.
func (c *Conn) wrap(step string, err error) error {
	switch {
	case errors.Is(err, net.ErrClosed):
		return ErrClosed
	case errors.Is(err, unix.ENETDOWN):
		return fmt.Errorf("transport: %s %v %s: %w (%v)", c.ifname, c.fam, step, ErrInterfaceDown, err)
	case errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENXIO):
		return fmt.Errorf("transport: %s %v %s: %w (%v)", c.ifname, c.fam, step, ErrNoInterface, err)
	case errors.Is(err, unix.EADDRNOTAVAIL):
		return fmt.Errorf("transport: %s %v %s: %w (%v)", c.ifname, c.fam, step, ErrNoAddress, err)
	}
	return fmt.Errorf("transport: %s %v %s: %w", c.ifname, c.fam, step, err)
}

var bgContext = context.Background()
