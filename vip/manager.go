package vip

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DefaultStateDir is where vrrpd keeps its record unless --state-dir says
// otherwise. /run is a tmpfs, so a reboot (which drops every address
// anyway) also drops the record.
const DefaultStateDir = "/run/vrrpd"

// Manager adds and removes VIPs and keeps the crash record. It is safe for
// concurrent use.
type Manager struct {
	dir  string
	nl   *netlink.Handle
	lock *os.File

	mu     sync.Mutex
	record []VIP
}

// New opens (creating it if needed) the state directory and locks it, so
// that two daemons never share one record. It loads what a previous run
// recorded; call [Manager.Recover] before taking part in VRRP.
// It works in the calling thread's network namespace.
func New(stateDir string) (*Manager, error) { return open(stateDir, &netlink.Handle{}) }

// open is New on a given netlink handle (the tests' handle into a lab
// namespace); the caller keeps ownership of the handle.
func open(stateDir string, nl *netlink.Handle) (*Manager, error) {
	if stateDir == "" {
		return nil, errors.New("vip: empty state directory")
	}
	m := &Manager{dir: stateDir, nl: nl}
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
	m.record = rec
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
	return err
}

// recorded returns the VIPs added and not yet removed, this run's and
// those a crashed previous run left.
func (m *Manager) recorded() []VIP {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.record)
}

// Add puts the VIPs on their interfaces. Adding a VIP that is already there
// is fine. The record is written first (once for all of them), so a crash
// right after the kernel calls cannot leave an address nobody knows about.
// It validates everything before doing anything; a kernel error stops at
// the failing VIP (the record keeps it and the rest, which is safe:
// recovery and Remove tolerate absent addresses).
func (m *Manager) Add(vs ...VIP) error {
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
	links := make([]netlink.Link, len(vs))
	for i, v := range vs {
		link, err := m.nl.LinkByName(v.Dev)
		if err != nil {
			return fmt.Errorf("vip %s: interface %s: %w", v, v.Dev, err)
		}
		links[i] = link
	}
	next := slices.Clone(m.record)
	changed := false
	for _, v := range vs {
		k := v.key()
		switch i := slices.IndexFunc(next, func(r VIP) bool { return r.key() == k }); {
		case i < 0:
			next = append(next, v)
			changed = true
		case next[i].Label != v.Label:
			next[i] = v
			changed = true
		}
	}
	if changed {
		if err := writeRecord(m.dir, next); err != nil {
			return fmt.Errorf("vip: %w", err)
		}
		m.record = next
	}
	for i, v := range vs {
		err := m.nl.AddrAdd(links[i], toNetlink(v, true))
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("vip %s: add: %w", v, err)
		}
	}
	return nil
}

// Remove takes the VIPs off their interfaces and then out of the record
// (written once). Removing a VIP that is not there (or whose interface is
// gone) is fine. It carries on past failures; a VIP that could not be
// removed stays recorded.
func (m *Manager) Remove(vs ...VIP) error {
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
	_, err := m.remove(vs)
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
	next := slices.DeleteFunc(slices.Clone(m.record), func(r VIP) bool {
		return slices.ContainsFunc(removed, func(v VIP) bool { return v.key() == r.key() })
	})
	if len(next) != len(m.record) {
		if err := writeRecord(m.dir, next); err != nil {
			return nil, errors.Join(append(errs, fmt.Errorf("vip: %w", err))...)
		}
		m.record = next
	}
	return removed, errors.Join(errs...)
}

func (m *Manager) delAddr(v VIP) error {
	link, err := m.nl.LinkByName(v.Dev)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		// The interface went away and took its addresses with it.
		return nil
	case err != nil:
		return fmt.Errorf("vip %s: interface %s: %w", v, v.Dev, err)
	}
	err = m.nl.AddrDel(link, toNetlink(v, false))
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
	for _, v := range m.record {
		if keep == nil || !keep(v) {
			stale = append(stale, v)
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
	addrs, err := nl.AddrList(link, family(v))
	if err != nil {
		return false, fmt.Errorf("addresses of %s: %w", v.Dev, err)
	}
	want := net.IP(v.Prefix.Addr().AsSlice())
	for _, a := range addrs {
		if a.IP.Equal(want) {
			return true, nil
		}
	}
	return false, nil
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
