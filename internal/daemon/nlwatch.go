package daemon

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// routeEvents is one NETLINK_ROUTE socket subscribed to link and address changes, read
// through the runtime's poller. The daemon only needs to know that something changed (it
// then re-reads the interfaces), so messages are not parsed: any datagram, and an
// overflow (ENOBUFS, events lost), is a change.
//
// Why not vishvananda/netlink's LinkSubscribe and AddrSubscribe: they take a socket and a
// goroutine each, blocked in recvfrom on a thread of its own, and each goroutine's stack
// holds a 64 kB receive buffer: 256 kB of stack and two threads for what one socket in the
// poller does.
type routeEvents struct {
	file *os.File
	rc   syscall.RawConn
	buf  []byte
}

// routeGroups are the multicast groups of the changes that matter to the daemon.
const routeGroups = unix.RTMGRP_LINK | unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR

func subscribeRouteEvents() (*routeEvents, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: routeGroups}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink subscribe: %w", err)
	}
	// A non-blocking descriptor: os.NewFile registers it with the poller.
	f := os.NewFile(uintptr(fd), "netlink-route")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &routeEvents{file: f, rc: rc, buf: make([]byte, 8192)}, nil
}

// wait blocks until at least one change arrived, then reads every message queued, so
// that a burst (an interface with many addresses going down) is one change. lost says
// the kernel dropped events for want of room: the caller must not trust what it knows.
// It fails once the socket is closed.
func (r *routeEvents) wait() (lost bool, err error) {
	got := false
	for {
		var rerr error
		err := r.rc.Read(func(fd uintptr) bool {
			// MSG_TRUNC: a message longer than buf is still one change; the rest of it
			// is dropped by the kernel.
			_, _, rerr = unix.Recvfrom(int(fd), r.buf, unix.MSG_DONTWAIT|unix.MSG_TRUNC)
			// Wait in the poller only while nothing has arrived yet.
			return !(errors.Is(rerr, unix.EAGAIN) && !got)
		})
		if err != nil {
			return false, err
		}
		switch {
		case rerr == nil:
			got = true
		case errors.Is(rerr, unix.ENOBUFS):
			got, lost = true, true
		case errors.Is(rerr, unix.EAGAIN):
			return lost, nil // everything queued is read
		case errors.Is(rerr, unix.EINTR):
		default:
			return false, rerr
		}
	}
}

// Close ends a wait in progress.
func (r *routeEvents) Close() error { return r.file.Close() }
