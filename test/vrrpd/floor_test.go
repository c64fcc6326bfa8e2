package vrrpd_test

// The kernel's floor of a CPU benchmark: the CPU time of the smallest program that moves
// the same packets, so that a daemon's figure can be read as the floor plus its own work.
// A master of N instances sends N advertisements an interval and its backup reads them;
// the kernel's part of that (the system calls, the veth's delivery into the receiver's
// socket, which runs in the sender's softirq and is charged to it, the wake-ups) is the
// same for any VRRP speaker, given the cheapest way to send (a packet socket, as vrrpd
// uses with --send-on-packet-socket; a raw IP socket, vrrpd's and keepalived's default,
// adds a route lookup and the IP output path per packet). The floor program is this test binary run
// again in the lab host with floorRoleEnv set: TestMain hands it to runFloor.

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vrrp-operator/vrrp-operator/internal/netlab"
	"github.com/vrrp-operator/vrrp-operator/internal/testing/vrrpdtest"
	"github.com/vrrp-operator/vrrp-operator/internal/transport/rawinject"
	"github.com/vrrp-operator/vrrp-operator/vrrp"
)

const (
	floorRoleEnv      = "VRRPD_BENCH_FLOOR_ROLE"      // "send" or "receive"
	floorInstancesEnv = "VRRPD_BENCH_FLOOR_INSTANCES" // how many adverts an interval
)

// floorInterval is the advert interval of the floor's sender: BenchmarkLoad50's.
const floorInterval = 100 * time.Millisecond

// floorRun starts the floor's sender of n adverts every 100 ms in h1 and its receiver in
// h2, lets them settle for a second, and returns their CPU seconds over hold.
func floorRun(t testing.TB, h1, h2 *netlab.Host, n int, hold time.Duration) float64 {
	t.Helper()
	env := func(role string) []string {
		return []string{floorRoleEnv + "=" + role, floorInstancesEnv + "=" + strconv.Itoa(n)}
	}
	recv := vrrpdtest.Start(t, h2, "floor-receive@"+h2.Name, env("receive"), os.Args[0])
	send := vrrpdtest.Start(t, h1, "floor-send@"+h1.Name, env("send"), os.Args[0])
	defer recv.Kill()
	defer send.Kill()
	running := func(when string) {
		for _, p := range []*vrrpdtest.Proc{send, recv} {
			if !p.Running() {
				t.Fatalf("the floor's %s exited %s: %v\n%s", p.Name, when, p.Err(), p.Output())
			}
		}
	}
	time.Sleep(time.Second)
	running("at start")
	in0 := ipInDelivers(t, h2)
	cpu0 := nsCPU(t, h1) + nsCPU(t, h2)
	time.Sleep(hold)
	cpu := nsCPU(t, h1) + nsCPU(t, h2) - cpu0
	running("during the run")
	// The packets reached the receiver's socket, and it read them: a floor of packets
	// that were never sent, or that were dropped unread, would be too low.
	want := float64(n) * hold.Seconds() / floorInterval.Seconds()
	if got := float64(ipInDelivers(t, h2) - in0); got < 0.95*want {
		t.Fatalf("the floor's receiver host took %.0f IP packets in, want %.0f", got, want)
	}
	if drops := rawDrops(t, h2); drops != 0 {
		t.Fatalf("the floor's receiver dropped %d packets unread", drops)
	}
	return cpu
}

// ipInDelivers is h's IP InDelivers counter: packets handed to a protocol or socket.
func ipInDelivers(t testing.TB, h *netlab.Host) uint64 {
	t.Helper()
	out, err := h.Command(context.Background(), "cat", "/proc/net/snmp").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, name := range names {
			if name == "InDelivers" && i < len(f) {
				v, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
	}
	t.Fatalf("no Ip InDelivers in %s's /proc/net/snmp", h.Name)
	return 0
}

// rawDrops sums the drops column of h's raw IPv4 sockets of protocol 112.
func rawDrops(t testing.TB, h *netlab.Host) uint64 {
	t.Helper()
	out, err := h.Command(context.Background(), "cat", "/proc/net/raw").Output()
	if err != nil {
		t.Fatal(err)
	}
	var drops uint64
	for _, line := range strings.Split(string(out), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ref pointer drops
		if len(f) < 13 || !strings.HasSuffix(f[1], ":0070") {
			continue
		}
		v, err := strconv.ParseUint(f[12], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		drops += v
	}
	return drops
}

// runFloor is the floor program: role "send" sends the adverts of n IPv4 VRRPv3 masters
// to 224.0.0.18 on eth0 in one sendmmsg on a packet socket every floorInterval; "receive"
// reads them with recvmmsg. Both join the group on eth0, as a VRRP speaker does. Nothing else: no
// parsing, no state machine, no timestamps or control messages, one goroutine. It runs
// until killed.
func runFloor(role string) error {
	n, err := strconv.Atoi(os.Getenv(floorInstancesEnv))
	if err != nil || n < 1 || n > 255 {
		return fmt.Errorf("%s=%q: want 1 to 255", floorInstancesEnv, os.Getenv(floorInstancesEnv))
	}
	ifi, err := net.InterfaceByName("eth0")
	if err != nil {
		return err
	}
	// Non-blocking, in the runtime's poller: the receiver sleeps in epoll_pwait as vrrpd
	// does, and no call ever blocks a thread (which costs the runtime a hand-over).
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_NONBLOCK, 112)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "vrrp")
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	group := [4]byte{224, 0, 0, 18}
	for _, err := range []error{
		unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifi.Name),
		unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, &unix.IPMreqn{Multiaddr: group, Ifindex: int32(ifi.Index)}),
		unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &unix.IPMreqn{Ifindex: int32(ifi.Index)}),
		unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_TTL, 255),
		unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, 0),
	} {
		if err != nil {
			return err
		}
	}
	hdrs := make([]unix.Mmsghdr, n)
	iovs := make([]unix.Iovec, n)
	bufs := make([][]byte, n)
	switch role {
	case "send":
		src, err := eth0Addr4(ifi)
		if err != nil {
			return err
		}
		// The cheapest way Linux offers to send them: whole IP packets as frames on a
		// packet socket (the kernel adds the Ethernet header for the group's MAC), as
		// vrrpd does; the raw IP socket's route lookup, which a member of the group pays
		// for every packet, is skipped.
		pfd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return err
		}
		var proto [2]byte
		binary.BigEndian.PutUint16(proto[:], unix.ETH_P_IP)
		sll := &unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: binary.NativeEndian.Uint16(proto[:]),
			Ifindex: int32(ifi.Index), Halen: 6, Addr: [8]uint8{0x01, 0x00, 0x5e, 0x00, 0x00, 0x12}}
		for i := range n {
			a := vrrp.Advertisement{Version: vrrp.Version3, Type: vrrp.TypeAdvertisement, VRID: uint8(i + 1),
				Priority: 150, MaxAdvertInterval: uint16(floorInterval / (10 * time.Millisecond)),
				Addresses: []netip.Addr{manyVIPs(n, false)[i].Addr()}}
			msg, err := a.AppendMarshal(nil, src, netip.AddrFrom4(group))
			if err != nil {
				return err
			}
			if bufs[i], err = (rawinject.IPv4{Src: src, Dst: netip.AddrFrom4(group), Payload: msg}).Marshal(); err != nil {
				return err
			}
			iovs[i] = unix.Iovec{Base: &bufs[i][0]}
			iovs[i].SetLen(len(bufs[i]))
			hdrs[i].Hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(sll)), Namelen: unix.SizeofSockaddrLinklayer, Iov: &iovs[i]}
			hdrs[i].Hdr.SetIovlen(1)
		}
		next := time.Now()
		for {
			for done := 0; done < n; {
				r, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(pfd), uintptr(unsafe.Pointer(&hdrs[done])), uintptr(n-done), 0, 0, 0)
				if errno != 0 && errno != unix.EINTR && errno != unix.EAGAIN {
					return fmt.Errorf("sendmmsg: %w", errno)
				}
				if errno == 0 {
					done += int(r)
				}
			}
			next = next.Add(floorInterval)
			time.Sleep(time.Until(next))
		}
	case "receive":
		for i := range n {
			bufs[i] = make([]byte, 1500)
			iovs[i] = unix.Iovec{Base: &bufs[i][0]}
			iovs[i].SetLen(len(bufs[i]))
			hdrs[i].Hdr = unix.Msghdr{Iov: &iovs[i]}
			hdrs[i].Hdr.SetIovlen(1)
		}
		var errno unix.Errno
		read := func(fd uintptr) bool {
			_, _, errno = unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(n), unix.MSG_DONTWAIT, 0, 0)
			return errno != unix.EAGAIN
		}
		for {
			if err := rc.Read(read); err != nil {
				return err
			}
			if errno != 0 && errno != unix.EINTR {
				return fmt.Errorf("recvmmsg: %w", errno)
			}
		}
	}
	return fmt.Errorf("%s=%q: want send or receive", floorRoleEnv, role)
}

func eth0Addr4(ifi *net.Interface) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			ip, _ := netip.AddrFromSlice(ipn.IP.To4())
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s has no IPv4 address", ifi.Name)
}
