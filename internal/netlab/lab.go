package netlab

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxHosts is how many hosts fit in one lab (addresses .10 to .249).
const MaxHosts = 240

// Lab is one bridge and the hosts plugged into it, or (CreatePair) two hosts
// joined by one veth pair and no switch.
type Lab struct {
	// Suffix is the random part of every name this lab created.
	Suffix string
	// SwitchNetns is the namespace holding the bridge and the host-facing
	// veth ends; empty in a pair lab.
	SwitchNetns string
	// Bridge is the bridge's name inside SwitchNetns; empty in a pair lab.
	Bridge string

	hosts  []*Host
	byName map[string]*Host
	closed bool
}

// Usable reports why this machine cannot build a lab (not root, or no ip
// command), or nil.
func Usable() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("iproute2 ip command not found: %w", err)
	}
	return nil
}

// Create builds a lab with one host per name, in that order. On error
// nothing is left behind.
func Create(names ...string) (*Lab, error) {
	if len(names) == 0 {
		return nil, errors.New("a lab needs at least one host")
	}
	return create(true, names)
}

// CreatePair builds a lab of two hosts whose eth0s are the two ends of one
// veth pair: no bridge, no switch namespace. On the bridge every packet a host
// sends is forwarded, and flooded to the other ports, in the sender's own
// system call (the veth hands it over in the sender's softirq), so a sender's
// CPU time includes the switch's work, which on real hardware no host does. A
// pair charges the sender only with the receiver's share, which is still one
// of the two hosts' work: measurements of CPU time use it. Host.Cut and
// Host.Restore need a switch and fail here.
func CreatePair(a, b string) (*Lab, error) {
	return create(false, []string{a, b})
}

func create(bridged bool, names []string) (*Lab, error) {
	if err := Usable(); err != nil {
		return nil, err
	}
	if len(names) > MaxHosts {
		return nil, fmt.Errorf("%d hosts asked, at most %d fit", len(names), MaxHosts)
	}
	var rnd [3]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	sfx := hex.EncodeToString(rnd[:])
	l := &Lab{
		Suffix: sfx,
		byName: make(map[string]*Host),
	}
	if bridged {
		l.SwitchNetns, l.Bridge = "nlab-"+sfx+"-sw", "br0"
	}
	for i, n := range names {
		if n == "" || strings.ContainsAny(n, "/ \t") {
			return nil, fmt.Errorf("bad host name %q", n)
		}
		if l.byName[n] != nil {
			return nil, fmt.Errorf("host %q named twice", n)
		}
		h := &Host{
			Name:  n,
			Netns: "nlab-" + sfx + "-" + n,
			Link:  "eth0",
			Addr4: netip.AddrFrom4([4]byte{10, 99, 0, byte(10 + i)}),
			Addr6: netip.MustParseAddr("fd00:99::" + strconv.FormatInt(int64(10+i), 16)),
			lab:   l,
		}
		if bridged {
			h.SwitchEnd = fmt.Sprintf("nl%s%d", sfx, i) // 8 + up to 3 chars, within IFNAMSIZ
		}
		l.hosts = append(l.hosts, h)
		l.byName[n] = h
	}
	if err := l.build(); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

func (l *Lab) build() error {
	if l.SwitchNetns == "" {
		return l.buildPair()
	}
	sw := l.SwitchNetns
	if err := ip("netns", "add", sw); err != nil {
		return err
	}
	// The switch never takes part: no IPv6 (no link-local chatter, no
	// MLD), no STP, no forward delay, and no multicast snooping so VRRP's
	// 224.0.0.18 / ff02::12 floods to every port like on a plain hub.
	if err := sysctls(sw, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"); err != nil {
		return err
	}
	if err := ip("-n", sw, "link", "add", l.Bridge, "type", "bridge",
		"stp_state", "0", "forward_delay", "0", "mcast_snooping", "0"); err != nil {
		return err
	}
	if err := ip("-n", sw, "link", "set", l.Bridge, "up"); err != nil {
		return err
	}
	for _, h := range l.hosts {
		if err := h.build(); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
	}
	return nil
}

// buildPair joins the lab's two hosts with one veth pair.
func (l *Lab) buildPair() error {
	a, b := l.hosts[0], l.hosts[1]
	for _, h := range l.hosts {
		if err := h.addNetns(); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
	}
	if err := ip("-n", a.Netns, "link", "add", a.Link, "type", "veth", "peer", "name", b.Link, "netns", b.Netns); err != nil {
		return err
	}
	for _, h := range l.hosts {
		if err := h.configure(); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
	}
	return nil
}

// Hosts returns the hosts in creation order.
func (l *Lab) Hosts() []*Host { return append([]*Host(nil), l.hosts...) }

// Host returns the named host, or nil if the lab has none by that name.
func (l *Lab) Host(name string) *Host { return l.byName[name] }

// Close kills every process still running in the lab's namespaces and
// deletes them (which deletes the veths and the bridge). It is safe to call
// twice.
func (l *Lab) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	var namespaces []string
	if l.SwitchNetns != "" {
		namespaces = append(namespaces, l.SwitchNetns)
	}
	for _, h := range l.hosts {
		namespaces = append(namespaces, h.Netns)
	}
	for _, ns := range namespaces {
		if !netnsExists(ns) {
			continue
		}
		if err := killAll(ns); err != nil {
			errs = append(errs, err)
		}
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func netnsExists(name string) bool {
	_, err := os.Stat("/run/netns/" + name)
	return err == nil
}

// killAll SIGKILLs the processes in the namespace and waits (briefly) for
// them to go, so that deleting the namespace really frees its devices.
func killAll(ns string) error {
	for range 50 {
		pids, err := nsPids(ns)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			if pid <= 1 || pid == os.Getpid() {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("processes in namespace %s survive SIGKILL", ns)
}

// nsPids lists the processes running in the namespace (`ip netns pids`).
func nsPids(ns string) ([]int, error) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns pids %s: %w", ns, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// ip runs one iproute2 command and turns its stderr into the error.
func ip(args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// sysctls sets sysctls inside a namespace by writing /proc/sys from one
// shell running there (a namespace's /proc/sys/net is its own).
func sysctls(ns string, kv ...string) error {
	script := ""
	args := []string{"netns", "exec", ns, "sh", "-ec", "", "sh"}
	for i, s := range kv {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("bad sysctl %q", s)
		}
		script += fmt.Sprintf("echo \"$%d\" > /proc/sys/%s\n", i+1, strings.ReplaceAll(k, ".", "/"))
		args = append(args, v)
	}
	args[5] = script
	var stderr bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("sysctl %v in %s: %w: %s", kv, ns, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}
