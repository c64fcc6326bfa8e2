package pcapfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// LinkType is a capture's link-layer header type (the LINKTYPE_ values of tcpdump.org).
type LinkType uint16

// The link types this project meets.
const (
	LinkTypeEthernet LinkType = 1
	LinkTypeRaw      LinkType = 101 // bare IPv4 or IPv6 packets
	LinkTypeLinuxSLL LinkType = 113 // Linux "any" device cooked capture
)

// A Packet is one captured frame.
type Packet struct {
	Timestamp time.Time
	LinkType  LinkType
	// Interface is the index of the pcapng interface the frame was captured on (always 0
	// in a classic pcap file).
	Interface int
	// Data is the captured bytes, possibly fewer than OriginalLength. It is owned by the
	// Packet: the reader does not reuse it.
	Data           []byte
	OriginalLength int
}

// ErrFormat reports a file that is not a capture this package reads, or is damaged.
var ErrFormat = errors.New("pcapfile: not a readable pcap or pcapng file")

// maxBlock bounds a single record or block, so a damaged length cannot make the reader
// allocate gigabytes.
const maxBlock = 16 << 20

const (
	magicMicro     = 0xa1b2c3d4
	magicNano      = 0xa1b23c4d
	blockSHB       = 0x0a0d0d0a
	blockIDB       = 0x00000001
	blockSPB       = 0x00000003
	blockEPB       = 0x00000006
	byteOrderMagic = 0x1a2b3c4d
)

// A Reader reads packets from a capture one at a time.
type Reader struct {
	r     *bufio.Reader
	order binary.ByteOrder
	ng    bool

	// classic pcap
	linkType LinkType
	nano     bool

	// pcapng: the interfaces of the current section, in order.
	ifaces []iface
}

type iface struct {
	linkType LinkType
	snapLen  uint32
	// tsUnit is the length of one timestamp tick (if_tsresol; microseconds by default).
	tsUnit time.Duration
	// tsDiv is set instead of tsUnit when ticks are shorter than a nanosecond.
	tsDiv uint64
}

// NewReader reads the file header from r and returns a Reader positioned at the first
// packet.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{r: bufio.NewReader(r)}
	var head [4]byte
	if _, err := io.ReadFull(rd.r, head[:]); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	switch {
	case binary.BigEndian.Uint32(head[:]) == blockSHB:
		rd.ng = true
		if err := rd.readSHB(); err != nil {
			return nil, err
		}
		return rd, nil
	case binary.LittleEndian.Uint32(head[:]) == magicMicro:
		rd.order = binary.LittleEndian
	case binary.BigEndian.Uint32(head[:]) == magicMicro:
		rd.order = binary.BigEndian
	case binary.LittleEndian.Uint32(head[:]) == magicNano:
		rd.order, rd.nano = binary.LittleEndian, true
	case binary.BigEndian.Uint32(head[:]) == magicNano:
		rd.order, rd.nano = binary.BigEndian, true
	default:
		return nil, fmt.Errorf("%w: unknown magic %x", ErrFormat, head)
	}
	// version (4), thiszone (4), sigfigs (4), snaplen (4), network (4)
	var rest [20]byte
	if _, err := io.ReadFull(rd.r, rest[:]); err != nil {
		return nil, fmt.Errorf("%w: short file header: %v", ErrFormat, err)
	}
	rd.linkType = LinkType(rd.order.Uint32(rest[16:]) & 0xffff)
	return rd, nil
}

// Next returns the next packet, or io.EOF after the last one.
func (r *Reader) Next() (Packet, error) {
	if r.ng {
		return r.nextNG()
	}
	var h [16]byte
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		if err == io.EOF {
			return Packet{}, io.EOF
		}
		return Packet{}, fmt.Errorf("%w: short record header: %v", ErrFormat, err)
	}
	sec, frac := r.order.Uint32(h[0:]), r.order.Uint32(h[4:])
	capLen, origLen := r.order.Uint32(h[8:]), r.order.Uint32(h[12:])
	if capLen > maxBlock {
		return Packet{}, fmt.Errorf("%w: record of %d bytes", ErrFormat, capLen)
	}
	data := make([]byte, capLen)
	if _, err := io.ReadFull(r.r, data); err != nil {
		return Packet{}, fmt.Errorf("%w: short record: %v", ErrFormat, err)
	}
	ns := int64(frac) * 1000
	if r.nano {
		ns = int64(frac)
	}
	return Packet{
		Timestamp:      time.Unix(int64(sec), ns).UTC(),
		LinkType:       r.linkType,
		Data:           data,
		OriginalLength: int(origLen),
	}, nil
}

// readSHB reads the rest of a section header block whose type has just been read, and
// starts a new section: byte order from the block, no interfaces yet.
func (r *Reader) readSHB() error {
	var h [8]byte // block total length, byte-order magic
	if _, err := io.ReadFull(r.r, h[:]); err != nil {
		return fmt.Errorf("%w: short section header: %v", ErrFormat, err)
	}
	switch {
	case binary.LittleEndian.Uint32(h[4:]) == byteOrderMagic:
		r.order = binary.LittleEndian
	case binary.BigEndian.Uint32(h[4:]) == byteOrderMagic:
		r.order = binary.BigEndian
	default:
		return fmt.Errorf("%w: bad byte-order magic %x", ErrFormat, h[4:])
	}
	total := r.order.Uint32(h[:4])
	if total < 28 || total%4 != 0 || total > maxBlock {
		return fmt.Errorf("%w: section header of %d bytes", ErrFormat, total)
	}
	// The rest (version, section length, options, trailing length) says nothing we need.
	if _, err := r.r.Discard(int(total) - 12); err != nil {
		return fmt.Errorf("%w: short section header: %v", ErrFormat, err)
	}
	r.ifaces = r.ifaces[:0]
	return nil
}

func (r *Reader) nextNG() (Packet, error) {
	for {
		var h [8]byte
		if _, err := io.ReadFull(r.r, h[:4]); err != nil {
			if err == io.EOF {
				return Packet{}, io.EOF
			}
			return Packet{}, fmt.Errorf("%w: short block header: %v", ErrFormat, err)
		}
		// A section header's type reads the same in both byte orders.
		if binary.BigEndian.Uint32(h[:4]) == blockSHB {
			if err := r.readSHB(); err != nil {
				return Packet{}, err
			}
			continue
		}
		if _, err := io.ReadFull(r.r, h[4:]); err != nil {
			return Packet{}, fmt.Errorf("%w: short block header: %v", ErrFormat, err)
		}
		typ, total := r.order.Uint32(h[:4]), r.order.Uint32(h[4:])
		if total < 12 || total%4 != 0 || total > maxBlock {
			return Packet{}, fmt.Errorf("%w: block of %d bytes", ErrFormat, total)
		}
		body := make([]byte, total-8) // body and trailing length
		if _, err := io.ReadFull(r.r, body); err != nil {
			return Packet{}, fmt.Errorf("%w: short block: %v", ErrFormat, err)
		}
		body = body[:len(body)-4]
		switch typ {
		case blockIDB:
			if err := r.addInterface(body); err != nil {
				return Packet{}, err
			}
		case blockEPB:
			return r.enhancedPacket(body)
		case blockSPB:
			return r.simplePacket(body)
		}
		// Name resolution, statistics, custom and obsolete blocks carry no packets we use.
	}
}

func (r *Reader) addInterface(b []byte) error {
	if len(b) < 8 {
		return fmt.Errorf("%w: interface description of %d bytes", ErrFormat, len(b))
	}
	ifc := iface{
		linkType: LinkType(r.order.Uint16(b[0:])),
		snapLen:  r.order.Uint32(b[4:]),
		tsUnit:   time.Microsecond,
	}
	opts := b[8:]
	for len(opts) >= 4 {
		code, n := r.order.Uint16(opts[0:]), int(r.order.Uint16(opts[2:]))
		padded := (n + 3) &^ 3
		if 4+padded > len(opts) {
			return fmt.Errorf("%w: interface option overruns its block", ErrFormat)
		}
		val := opts[4 : 4+n]
		if code == 0 {
			break
		}
		if code == 9 && n == 1 { // if_tsresol
			ifc.tsUnit, ifc.tsDiv = tsResolution(val[0])
		}
		opts = opts[4+padded:]
	}
	r.ifaces = append(r.ifaces, ifc)
	return nil
}

// tsResolution decodes if_tsresol: a power of ten (high bit clear) or of two (set) by which
// a second is divided. It returns the tick as a Duration, or the divisor of a nanosecond
// count when ticks are finer than a nanosecond.
func tsResolution(v byte) (time.Duration, uint64) {
	exp := uint(v & 0x7f)
	div := uint64(1)
	base := uint64(10)
	if v&0x80 != 0 {
		base = 2
	}
	for range exp {
		if div > 1<<60/base {
			break
		}
		div *= base
	}
	if div <= uint64(time.Second) {
		return time.Second / time.Duration(div), 0
	}
	return 0, div / uint64(time.Second)
}

func (r *Reader) enhancedPacket(b []byte) (Packet, error) {
	if len(b) < 20 {
		return Packet{}, fmt.Errorf("%w: enhanced packet block of %d bytes", ErrFormat, len(b))
	}
	id := int(r.order.Uint32(b[0:]))
	if id >= len(r.ifaces) {
		return Packet{}, fmt.Errorf("%w: packet on undescribed interface %d", ErrFormat, id)
	}
	ifc := r.ifaces[id]
	ts := uint64(r.order.Uint32(b[4:]))<<32 | uint64(r.order.Uint32(b[8:]))
	capLen, origLen := int(r.order.Uint32(b[12:])), int(r.order.Uint32(b[16:]))
	if capLen > len(b)-20 {
		return Packet{}, fmt.Errorf("%w: packet of %d bytes in a block of %d", ErrFormat, capLen, len(b))
	}
	var t time.Time
	if ifc.tsDiv != 0 {
		t = time.Unix(0, int64(ts/ifc.tsDiv))
	} else {
		unit := uint64(ifc.tsUnit)
		perSec := uint64(time.Second) / unit
		t = time.Unix(int64(ts/perSec), int64(ts%perSec*unit))
	}
	return Packet{
		Timestamp:      t.UTC(),
		LinkType:       ifc.linkType,
		Interface:      id,
		Data:           b[20 : 20+capLen],
		OriginalLength: origLen,
	}, nil
}

func (r *Reader) simplePacket(b []byte) (Packet, error) {
	if len(b) < 4 || len(r.ifaces) == 0 {
		return Packet{}, fmt.Errorf("%w: simple packet block without an interface", ErrFormat)
	}
	ifc := r.ifaces[0]
	origLen := int(r.order.Uint32(b[0:]))
	n := min(origLen, len(b)-4)
	if ifc.snapLen != 0 {
		n = min(n, int(ifc.snapLen))
	}
	return Packet{LinkType: ifc.linkType, Data: b[4 : 4+n], OriginalLength: origLen}, nil
}

// ReadFile reads every packet of the capture at path.
func ReadFile(path string) ([]Packet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var pkts []Packet
	for {
		p, err := r.Next()
		if err == io.EOF {
			return pkts, nil
		}
		if err != nil {
			return pkts, fmt.Errorf("%s: packet %d: %w", path, len(pkts)+1, err)
		}
		pkts = append(pkts, p)
	}
}
