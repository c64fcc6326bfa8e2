package transport

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Buffer geometry of one batch slot.
const (
	// oobSize holds IPV6_PKTINFO plus IPV6_HOPLIMIT (IPv6) and SCM_TIMESTAMPNS, with room
	// to spare for a control message we did not ask for.
	oobSize = 128
)

// receiver drains the socket with recvmmsg into buffers it owns.
//
// golang.org/x/net's ReadBatch allocates a net.Addr per packet, which at 255 instances and
// 10 adverts a second each is thousands of garbage objects a second on the hottest path; so
// the batch is read with recvmmsg directly through the socket's syscall.RawConn (which keeps
// the runtime poller and Close semantics), and sources, destinations, TTL and interface are
// decoded in place.
type receiver struct {
	c     *Conn
	hs    []unix.Mmsghdr
	iovs  []unix.Iovec
	bufs  []byte
	oob   []byte
	names []unix.RawSockaddrInet6 // IPv6 sources; IPv4 reads them from the IP header
	slot  int                     // bytes per packet in bufs: maxPacket of the family

	// Per-call state, shared with the bound callback so RawConn.Read does not allocate.
	vlen  int
	n     int
	operr error
	fn    func(fd uintptr) bool
}

func (r *receiver) init(c *Conn, batch int) {
	r.c = c
	r.slot = maxPacket(c.fam)
	r.hs = make([]unix.Mmsghdr, batch)
	r.iovs = make([]unix.Iovec, batch)
	r.bufs = make([]byte, batch*r.slot)
	r.oob = make([]byte, batch*oobSize)
	if c.fam == IPv6 {
		r.names = make([]unix.RawSockaddrInet6, batch)
	}
	for i := range r.hs {
		r.iovs[i].Base = &r.bufs[i*r.slot]
		r.iovs[i].SetLen(r.slot)
		h := &r.hs[i].Hdr
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
		h.Control = &r.oob[i*oobSize]
	}
	r.fn = r.recvmmsg
}

// recvmmsg runs under RawConn.Read; returning false parks the goroutine until the socket
// is readable. The call is raw (no entersyscall): with MSG_DONTWAIT it never blocks, and
// the runtime's bookkeeping of a blocking call woke the sleeping sysmon thread on every
// batch, which was a sixth of a backup's CPU at 50 instances (issue 12).
func (r *receiver) recvmmsg(fd uintptr) bool {
	var n uintptr
	var errno unix.Errno
	for {
		n, _, errno = unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.hs[0])),
			uintptr(r.vlen), unix.MSG_DONTWAIT, 0, 0)
		// Retry at once on a signal: packets may be queued already, and the edge-triggered
		// poller would not wake us for them.
		if errno != unix.EINTR {
			break
		}
	}
	if errno == unix.EAGAIN || errno == unix.EWOULDBLOCK {
		return false
	}
	r.n, r.operr = int(n), nil
	if errno != 0 {
		r.n, r.operr = 0, errno
	}
	return true
}

// ReadBatch blocks until at least one packet has arrived, then fills pkts with as many as
// are queued (at most len(pkts) and Options.BatchSize) and returns how many it filled.
// Payloads point into the Conn's buffers and are overwritten by the next ReadBatch.
//
// After Close it returns ErrClosed. Packets larger than the family's largest VRRP packet
// (MaxPacketSize for IPv6, MaxPacketSize4 for IPv4), with a broken IPv4
// header, or from another interface are dropped and counted in Stats.Dropped; ReadBatch
// then keeps waiting rather than return zero packets.
func (c *Conn) ReadBatch(pkts []Packet) (int, error) {
	r := &c.recv
	vlen := min(len(pkts), len(r.hs))
	if vlen == 0 {
		return 0, nil
	}
	for {
		if c.closed.Load() {
			return 0, ErrClosed
		}
		for i := 0; i < vlen; i++ {
			h := &r.hs[i].Hdr
			h.SetControllen(oobSize)
			h.Flags = 0
			if r.names != nil {
				h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
				h.Namelen = unix.SizeofSockaddrInet6
			}
			r.hs[i].Len = 0
		}
		r.vlen = vlen
		if err := c.raw.Read(r.fn); err != nil {
			return 0, c.wrap("read", err)
		}
		if r.operr != nil {
			if c.closed.Load() {
				return 0, ErrClosed
			}
			return 0, c.wrap("recvmmsg", r.operr)
		}
		ifindex := c.ifIndex()
		out := 0
		for i := 0; i < r.n; i++ {
			if c.decode(i, &pkts[out], ifindex) {
				out++
			} else {
				c.dropped.Add(1)
			}
		}
		if out > 0 {
			c.received.Add(uint64(out))
			return out, nil
		}
	}
}

// decode fills p from batch slot i and reports whether the packet is to be delivered.
func (c *Conn) decode(i int, p *Packet, ifindex int) bool {
	r := &c.recv
	h := &r.hs[i]
	if h.Hdr.Flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		return false
	}
	n := int(h.Len)
	b := r.bufs[i*r.slot : i*r.slot+n]
	oob := r.oob[i*oobSize : i*oobSize+int(h.Hdr.Controllen)]
	*p = Packet{}
	if c.fam == IPv4 {
		if !decodeIPv4(b, p) {
			return false
		}
	} else {
		p.Payload = b
		p.Src = netip.AddrFrom16(r.names[i].Addr)
		p.TTL = -1
	}
	if err := parseControl(oob, p); err != nil {
		return false
	}
	// IPv6's IPV6_PKTINFO names the interface: drop what came from another one (only
	// possible at open, see openSocket). IPv4 asks for no control message: the bound device.
	if p.IfIndex != 0 && p.IfIndex != ifindex {
		return false
	}
	if p.IfIndex == 0 {
		p.IfIndex = ifindex
	}
	return true
}

// decodeIPv4 parses the IPv4 header that raw IPv4 sockets deliver, and points p.Payload
// past it (options included).
func decodeIPv4(b []byte, p *Packet) bool {
	if len(b) < 20 || b[0]>>4 != 4 {
		return false
	}
	ihl := int(b[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(b[2:4]))
	if ihl < 20 || ihl > len(b) || total < ihl {
		return false
	}
	end := min(total, len(b))
	p.Payload = b[ihl:end]
	p.TTL = int(b[8])
	p.Src = netip.AddrFrom4([4]byte(b[12:16]))
	p.Dst = netip.AddrFrom4([4]byte(b[16:20]))
	return true
}

var errControl = errors.New("malformed control message")

// parseControl decodes the control messages we asked for, in place.
func parseControl(oob []byte, p *Packet) error {
	hdrLen := unix.CmsgLen(0)
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdrLen || l > len(oob) {
			return errControl
		}
		data := oob[hdrLen:l]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			p.IfIndex = int(int32(binary.NativeEndian.Uint32(data[0:4])))
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			p.Dst = netip.AddrFrom16([16]byte(data[0:16]))
			p.IfIndex = int(binary.NativeEndian.Uint32(data[16:20]))
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_HOPLIMIT && len(data) >= 4:
			p.TTL = int(int32(binary.NativeEndian.Uint32(data[0:4])))
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= 16:
			// struct timespec of two 64-bit fields: every platform vrrpd builds for is
			// 64-bit (the Makefile's PLATFORMS).
			sec := int64(binary.NativeEndian.Uint64(data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(data[8:16]))
			p.Arrived = time.Unix(sec, nsec)
		}
		next := cmsgAlign(l)
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return nil
}

func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}

// Pending reports whether a packet waits in the socket's receive queue, unread: the
// daemon asks before it acts on a Master_Down_Timer, since an advertisement that arrived
// before the deadline but is not yet read (the reader or the whole process was not
// scheduled in time) proves the master alive. One ioctl (SIOCINQ: the size of the next
// queued datagram), no read, so it is safe while another goroutine is in ReadBatch.
func (c *Conn) Pending() bool {
	if c.closed.Load() {
		return false
	}
	var n int
	var ierr error
	err := c.raw.Control(func(fd uintptr) {
		n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	})
	return err == nil && ierr == nil && n > 0
}
