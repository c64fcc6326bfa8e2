package vip

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/holdings"
)

// DefaultStateDir is where vrrpd keeps its record unless --state-dir says
// otherwise. /run is a tmpfs, so a reboot (which drops every address
// anyway) also drops the record.
const DefaultStateDir = "/run/vrrpd"

// Manager adds and removes VIPs and keeps the crash record. It is safe for
// concurrent use.
type Manager struct {
	dir    string
	nl     *netlink.Handle
	ownsNL bool // New made nl: Close closes it
	lock   *os.File
	links  linkCache

	mu sync.Mutex
	// book is what this Manager (or a crashed one before it) added, the record's VIPs,
	// each with the virtual routers holding it: it leaves the interface when the last
	// lets go. The holders are only in memory: after a crash every recorded VIP goes.
	book holdings.Book[key, VIP]

	// A turn (BeginTurn .. EndTurn) is one wake-up of the daemon, which may move hundreds
	// of VIPs at once, and each write of the record serialises all of it. Within a turn
	// a removal only drops the VIP from book, and stale says the file still lists
	// it; EndTurn writes once. A file listing a VIP that is already gone is safe
	// (recovery and Release take an absent address in their stride); one missing a VIP
	// that is on the wire is not, so an add still writes first: Reserve writes every VIP
	// of a turn's takeovers at once, and Hold then adds them without writing.
	turn     int
	stale    bool
	reserved map[key]bool // recorded by Reserve this turn, not yet added by Hold
}

// New opens (creating it if needed) the state directory and locks it, so
// that two daemons never share one record. It loads what a previous run
// recorded; call [Manager.Recover] before taking part in VRRP.
// It works in the calling thread's network namespace.
//
// It keeps one netlink socket open for its requests: a takeover's VIP add is then one
// round trip on it, where a fresh socket per request (socket, bind, options, close) cost
// several system calls more on every add.
func New(stateDir string) (*Manager, error) {
	nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("vip: netlink: %w", err)
	}
	m, err := open(stateDir, nl)
	if err != nil {
		nl.Close()
		return nil, err
	}
	m.ownsNL = true
	return m, nil
}

// open is New on a given netlink handle (the tests' handle into a lab
// namespace); the caller keeps ownership of the handle.
func open(stateDir string, nl *netlink.Handle) (*Manager, error) {
	if stateDir == "" {
		return nil, errors.New("vip: empty state directory")
	}
	m := &Manager{dir: stateDir, nl: nl, links: linkCache{nl: nl}}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("vip: state directory: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(stateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("vip: state directory: %w", err)
	}
	// flock, not a pid file: the kernel drops it when the holder dies, even
	// by kill -9, so a restarted daemon never waits for a stale lock.
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("vip: state directory %s is in use by another vrrpd (each daemon needs its own --state-dir)", stateDir)
		}
		return nil, fmt.Errorf("vip: lock %s: %w", stateDir, err)
	}
	m.lock = lock
	rec, err := readRecord(stateDir)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("vip: %w", err)
	}
	for _, v := range rec {
		m.book.Put(v.key(), v)
	}
	return m, nil
}

// Close releases the state directory. Recorded VIPs stay recorded (and on
// their interfaces): removing them is the daemon's decision.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return nil
	}
	err := m.lock.Close()
	m.lock = nil
	if m.ownsNL {
		m.nl.Close()
	}
	return err
}

// recorded returns the VIPs added and not yet removed, this run's and
// those a crashed previous run left.
func (m *Manager) recorded() []VIP {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries()
}

// entries returns the recorded VIPs in the record's order.
func (m *Manager) entries() []VIP {
	vs := m.book.Entries()
	sortVIPs(vs)
	return vs
}

// Add is Hold for the one anonymous holder, for callers that run each VIP once.
func (m *Manager) Add(vs ...VIP) error {
	_, err := m.Hold("", vs...)
	return err
}

// Hold makes sure the VIPs are on their interfaces for holder (a virtual router: the
// daemon's instance name) and returns those it found there already without having added
// them: foreign addresses, such as the node's own /32 or /128, or an API-server VIP held
// by kube-vip or another keepalived. A foreign address is never recorded, never held and
// so never removed by this Manager: it belongs to whoever put it there. An address is
// the same when its address and device are, whatever its prefix length, since removing
// ours would take the other one's address off the wire too.
//
// A VIP this Manager added already (for another holder, or for this one before someone
// flushed it) gains holder and is put back if it went missing. New VIPs are recorded
// first (once for all of them), so a crash right after the kernel calls cannot leave an
// address nobody knows about. It validates everything before doing anything; a kernel
// error stops at the failing VIP (the record keeps it and the rest, which is safe:
// recovery and Release tolerate absent addresses).
func (m *Manager) Hold(holder string, vs ...VIP) (foreign []VIP, err error) {
	for _, v := range vs {
		if err := v.validate(); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return nil, errors.New("vip: manager is closed")
	}
	links := make([]netlink.Link, len(vs))
	for i, v := range vs {
		link, err := m.links.get(v.Dev, false)
		if err != nil {
			return nil, fmt.Errorf("vip %s: interface %s: %w", v, v.Dev, err)
		}
		links[i] = link
	}
	// What each VIP is: already ours, new (recorded now, added below) or foreign.
	const (
		isForeign = iota
		isOurs
		isNew
	)
	on := addrCache{nl: m.nl}
	// What the record gains before the adds: new VIPs, and new labels of recorded ones.
	put := map[key]VIP{}
	kind := make([]int, len(vs))
	for i, v := range vs {
		k := v.key()
		if m.reserved[k] && m.book.Has(k) {
			// Recorded by Reserve a moment ago, as absent: new, without a write.
			delete(m.reserved, k)
			kind[i] = isNew
			continue
		}
		delete(m.reserved, k) // a reservation without its record proves nothing
		cur, ok := put[k]
		if !ok {
			cur, ok = m.book.Get(k)
		}
		if ok {
			kind[i] = isOurs
			if cur.Label != v.Label {
				put[k] = v
			}
			continue
		}
		there, err := on.has(links[i], v)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return nil, fmt.Errorf("vip %s: %w", v, err)
		}
		// Not listed by a dump the kernel says may be incomplete (the addresses kept
		// changing while it was read): new as far as anyone knows, and the add decides,
		// since an address someone else holds fails it with EEXIST (raced, below).
		if there {
			kind[i] = isForeign
			foreign = append(foreign, v)
			continue
		}
		kind[i] = isNew
		put[k] = v
	}
	if len(put) > 0 {
		if err := m.write(put, nil); err != nil {
			return nil, err
		}
	}
	var raced []VIP
	for i, v := range vs {
		if kind[i] == isForeign {
			continue
		}
		err := m.links.retry(v.Dev, links[i], func(link netlink.Link) error { return m.nl.AddrAdd(link, toNetlink(v, true)) })
		switch {
		case errors.Is(err, unix.EEXIST) && kind[i] == isNew:
			// Absent a moment ago, there now: someone else added it in between.
			// Theirs, then, not ours.
			raced = append(raced, v)
			continue
		case err != nil && !errors.Is(err, unix.EEXIST):
			return foreign, fmt.Errorf("vip %s: add: %w", v, err)
		}
		m.book.Hold(v.key(), holder)
	}
	if len(raced) > 0 {
		foreign = append(foreign, raced...)
		if err := m.write(nil, keys(raced)); err != nil {
			return foreign, err
		}
	}
	return foreign, nil
}

func keys(vs []VIP) []key {
	out := make([]key, len(vs))
	for i, v := range vs {
		out[i] = v.key()
	}
	return out
}

// Missing returns those of vs that are not on their interface (flushed by someone else,
// or an add that failed): the ones a master puts back with Hold. A VIP whose interface
// is gone is not missing: there is nowhere to put it. It looks each interface up afresh
// (which refreshes what Hold's add finds by name) and lists its addresses once, however
// many VIPs are on it: two netlink round trips per interface, not per VIP, which at 255
// masters polled every second was most of an idle daemon's system time. It reads the
// kernel only, not the record, so it does not wait for a Hold or Release in progress.
func (m *Manager) Missing(vs ...VIP) ([]VIP, error) {
	on := addrCache{nl: m.nl}
	type lookup struct {
		link netlink.Link
		err  error
	}
	looked := map[string]lookup{}
	var missing []VIP
	var errs []error
	for _, v := range vs {
		l, ok := looked[v.Dev]
		if !ok {
			l.link, l.err = m.links.get(v.Dev, true)
			looked[v.Dev] = l
		}
		link, err := l.link, l.err
		if err != nil {
			var notFound netlink.LinkNotFoundError
			if !errors.As(err, &notFound) {
				errs = append(errs, fmt.Errorf("vip %s: interface %s: %w", v, v.Dev, err))
			}
			continue
		}
		there, err := on.has(link, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("vip %s: %w", v, err))
			continue
		}
		if !there {
			missing = append(missing, v)
		}
	}
	return missing, errors.Join(errs...)
}

// Remove is Release for the anonymous holder of Add.
func (m *Manager) Remove(vs ...VIP) error { return m.Release("", vs...) }

// Release lets holder go of the VIPs. A VIP goes off its interface and then out of the
// record (written once) when its last holder lets go; one this Manager did not add (a
// foreign address Hold reported) is never touched. Releasing a VIP that is not there (or
// whose interface is gone) is fine. It carries on past failures; a VIP that could not be
// removed stays recorded.
func (m *Manager) Release(holder string, vs ...VIP) error {
	for _, v := range vs {
		if err := v.validate(); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return errors.New("vip: manager is closed")
	}
	var last []VIP
	for _, v := range vs {
		k := v.key()
		rec, ok := m.book.Get(k)
		if !ok {
			continue // not ours: never removed
		}
		if !m.book.Let(k, holder) {
			continue // another virtual router still holds it
		}
		if m.reserved[k] {
			// Reserved this turn and never added (a takeover that stepped down before
			// reaching it): nothing of ours is on the interface, and whoever put the
			// address there since is not to be touched. Its reservation goes with its
			// record: a later Hold looks at the kernel again (issue 31's switch lab had a
			// Hold trust a reservation whose record a Release had dropped, add the
			// address unrecorded, and find it "foreign" ever after, on two hosts).
			delete(m.reserved, k)
			m.book.Drop(k)
			m.stale = true
			continue
		}
		last = append(last, rec) // as added, whatever prefix the caller names

	}
	_, err := m.remove(last)
	return err
}

// remove deletes the addresses, then drops the removed ones from the
// record in one write, and returns those removed.
func (m *Manager) remove(vs []VIP) ([]VIP, error) {
	var errs []error
	var removed []VIP
	for _, v := range vs {
		if err := m.delAddr(v); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, v)
	}
	if len(removed) > 0 {
		if m.turn > 0 {
			for _, v := range removed {
				m.book.Drop(v.key())
			}
			m.stale = true // EndTurn writes it
			return removed, errors.Join(errs...)
		}
		if err := m.write(nil, keys(removed)); err != nil {
			return nil, errors.Join(append(errs, err)...)
		}
	}
	return removed, errors.Join(errs...)
}

// write puts the record on disk with put's VIPs (new ones, or new attributes of recorded
// ones) in it and drop's out of it, and then makes that the book's: a write that fails
// changes nothing.
func (m *Manager) write(put map[key]VIP, drop []key) error {
	next := make([]VIP, 0, m.book.Len()+len(put))
	for _, v := range m.book.Entries() {
		if _, ok := put[v.key()]; !ok && !slices.Contains(drop, v.key()) {
			next = append(next, v)
		}
	}
	for k, v := range put {
		if !slices.Contains(drop, k) {
			next = append(next, v)
		}
	}
	if err := writeRecord(m.dir, next); err != nil {
		return fmt.Errorf("vip: %w", err)
	}
	for k, v := range put {
		m.book.Put(k, v)
	}
	for _, k := range drop {
		m.book.Drop(k)
	}
	m.stale = false
	return nil
}

// BeginTurn starts a turn (see Manager.turn); turns nest, and the outermost EndTurn
// ends it.
func (m *Manager) BeginTurn() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turn++
}

// EndTurn ends a turn: what Reserve recorded and no Hold added leaves the record, and
// the record is written if it changed since the last write.
func (m *Manager) EndTurn() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.turn == 0 {
		return errors.New("vip: EndTurn without BeginTurn")
	}
	if m.turn--; m.turn > 0 {
		return nil
	}
	if len(m.reserved) > 0 {
		for k := range m.reserved {
			m.book.Drop(k)
		}
		m.stale = true
		clear(m.reserved)
	}
	if !m.stale || m.lock == nil {
		return nil
	}
	return m.write(nil, nil)
}

// Reserve records, in one write, every VIP of vs that is neither recorded nor on its
// interface, so that the Holds of the same turn that add them need not write each (a
// mass takeover adds hundreds). It changes nothing on the interfaces. A VIP on its
// interface already is left for Hold to find foreign; one whose interface cannot be
// read is left for Hold to report. Outside a turn it does nothing.
func (m *Manager) Reserve(vs ...VIP) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil || m.turn == 0 {
		return nil
	}
	on := addrCache{nl: m.nl}
	var add []VIP
	for _, v := range vs {
		if v.validate() != nil {
			continue // Hold refuses it
		}
		k := v.key()
		if m.reserved[k] || m.book.Has(k) {
			continue
		}
		link, err := m.links.get(v.Dev, false)
		if err != nil {
			continue
		}
		if there, err := on.has(link, v); err != nil || there {
			continue
		}
		if m.reserved == nil {
			m.reserved = make(map[key]bool)
		}
		m.reserved[k] = true // also keeps a VIP named twice in vs from being added twice
		add = append(add, v)
	}
	if len(add) == 0 {
		return nil
	}
	put := make(map[key]VIP, len(add))
	for _, v := range add {
		put[v.key()] = v
	}
	if err := m.write(put, nil); err != nil {
		for _, v := range add {
			delete(m.reserved, v.key())
		}
		return err
	}
	return nil
}

func (m *Manager) delAddr(v VIP) error {
	link, err := m.links.get(v.Dev, false)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		// The interface went away and took its addresses with it.
		return nil
	case err != nil:
		return fmt.Errorf("vip %s: interface %s: %w", v, v.Dev, err)
	}
	err = m.links.retry(v.Dev, link, func(link netlink.Link) error { return m.nl.AddrDel(link, toNetlink(v, false)) })
	if errors.As(err, &notFound) {
		return nil
	}
	// EADDRNOTAVAIL: not on the interface (already removed, or never added
	// because we crashed between record and add).
	if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("vip %s: remove: %w", v, err)
	}
	return nil
}

// removeStale removes every recorded VIP for which keep returns false (a
// nil keep removes them all) and returns what it removed. It carries on
// past failures and reports them together.
func (m *Manager) removeStale(keep func(VIP) bool) ([]VIP, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock == nil {
		return nil, errors.New("vip: manager is closed")
	}
	var stale []VIP
	for _, v := range m.entries() {
		if keep == nil || !keep(v) {
			stale = append(stale, v)
			m.book.Orphan(v.key())
		}
	}
	return m.remove(stale)
}

// Recover removes every VIP a previous run recorded. A daemon calls it at
// start, before joining any virtual router: it starts as backup, so it owns
// no address until VRRP elects it again.
func (m *Manager) Recover() ([]VIP, error) { return m.removeStale(nil) }

// present reports whether v's address is on v's interface right now.
func present(nl *netlink.Handle, v VIP) (bool, error) {
	link, err := nl.LinkByName(v.Dev)
	if err != nil {
		var notFound netlink.LinkNotFoundError
		if errors.As(err, &notFound) {
			return false, nil
		}
		return false, fmt.Errorf("interface %s: %w", v.Dev, err)
	}
	return (&addrCache{nl: nl}).has(link, v)
}

// addrCache lists each interface's addresses of a family once, for one call that looks at
// many VIPs.
type addrCache struct {
	nl *netlink.Handle
	by map[addrListKey]addrList
}

// addrList is one interface's addresses of a family. interrupted, when set, says (as an
// error wrapping netlink.ErrDumpInterrupted) that the kernel flagged the dump as possibly
// incomplete (NLM_F_DUMP_INTR: an address of the namespace changed while it was read, as
// during a takeover of a thousand IPv6 VIPs), so an address it does not list may be there.
type addrList struct {
	set         map[netip.Addr]bool
	interrupted error
}

// dumpRetries is how many times a dump the kernel flags as interrupted is read again.
const dumpRetries = 3

type addrListKey struct {
	index, family int
}

// has reports whether v's address (any prefix length) is on link. When the addresses
// kept changing while they were read, an address listed is there, and one not listed is
// an error: neither "missing" (to put back) nor "absent" (to record as ours) would be
// known.
func (c *addrCache) has(link netlink.Link, v VIP) (bool, error) {
	k := addrListKey{link.Attrs().Index, family(v)}
	l, ok := c.by[k]
	if !ok {
		addrs, err := c.nl.AddrList(link, k.family)
		for tries := 0; errors.Is(err, netlink.ErrDumpInterrupted) && tries < dumpRetries; tries++ {
			addrs, err = c.nl.AddrList(link, k.family)
		}
		if errors.Is(err, netlink.ErrDumpInterrupted) {
			l.interrupted, err = fmt.Errorf("addresses of %s: %w", link.Attrs().Name, err), nil
		}
		if err != nil {
			return false, fmt.Errorf("addresses of %s: %w", link.Attrs().Name, err)
		}
		l.set = make(map[netip.Addr]bool, len(addrs))
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				l.set[ip.Unmap()] = true
			}
		}
		if c.by == nil {
			c.by = make(map[addrListKey]addrList)
		}
		c.by[k] = l
	}
	if l.set[v.Prefix.Addr()] {
		return true, nil
	}
	return false, l.interrupted
}

func family(v VIP) int {
	if v.Prefix.Addr().Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

// toNetlink builds the request keepalived sends (vrrp_ipaddress.c).
func toNetlink(v VIP, adding bool) *netlink.Addr {
	a := v.Prefix.Addr()
	bits := 32
	if a.Is6() {
		bits = 128
	}
	n := &netlink.Addr{IPNet: &net.IPNet{
		IP:   a.AsSlice(),
		Mask: net.CIDRMask(v.Prefix.Bits(), bits),
	}}
	if a.Is4() {
		// No broadcast unless configured (keepalived's default); the
		// netlink package would otherwise compute one.
		n.Broadcast = net.IPv4zero
		if adding {
			n.Label = v.Label
		}
		return n
	}
	if adding {
		// The VIP must answer at once after a failover, and a VRRP
		// split brain must not leave it "dadfailed" for ever.
		n.Flags = unix.IFA_F_NODAD
		if v.Prefix.Bits() == 128 {
			// Deprecated (preferred lifetime 0): never chosen as source
			// address for the host's own connections.
			n.ValidLft = math.MaxUint32
			n.PreferedLft = 0
		}
	}
	return n
}

// linkCache finds interfaces by name for the adds and removes, looking each up once rather
// than on every call: a takeover's VIP add is then the add alone. A cached interface can
// be stale (deleted, re-created under the same name with a new index, renamed): an add or
// remove on an index that is gone fails with ENODEV and is retried once on a fresh lookup
// (retry), and Missing, which the daemon runs on every link and address event, looks every
// interface up afresh. Indexes are allocated cyclically by the kernel, so a stale one does
// not name another interface in practice.
type linkCache struct {
	nl *netlink.Handle
	mu sync.Mutex
	by map[string]netlink.Link
}

// get returns the interface named dev, from the cache unless fresh.
func (c *linkCache) get(dev string, fresh bool) (netlink.Link, error) {
	c.mu.Lock()
	link, ok := c.by[dev]
	c.mu.Unlock()
	if ok && !fresh {
		return link, nil
	}
	link, err := c.nl.LinkByName(dev)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.by, dev)
		return nil, err
	}
	if c.by == nil {
		c.by = make(map[string]netlink.Link)
	}
	c.by[dev] = link
	return link, nil
}

// retry runs op on link, and once more on a fresh lookup of dev when link's index is gone.
func (c *linkCache) retry(dev string, link netlink.Link, op func(netlink.Link) error) error {
	err := op(link)
	if !errors.Is(err, unix.ENODEV) {
		return err
	}
	fresh, lerr := c.get(dev, true)
	if lerr != nil {
		return lerr
	}
	if fresh.Attrs().Index == link.Attrs().Index {
		return err
	}
	return op(fresh)
}
