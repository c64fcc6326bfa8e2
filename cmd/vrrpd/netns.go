package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` puts its namespaces, and where keepalived looks for
// net_namespace's.
const netnsDir = "/var/run/netns"

// enterNetns makes the whole process run in the named network namespace, as
// keepalived's net_namespace does. A Go program cannot move all of its threads at once,
// so the calling thread enters the namespace and re-executes vrrpd from there: execve
// keeps that thread's namespace for the new image. The new vrrpd reads the same file,
// finds itself in the namespace already and goes on. It returns only on failure, or
// with nil when the process is in the namespace already (also when systemd's
// NetworkNamespacePath put it there).
func enterNetns(name string) error {
	path := filepath.Join(netnsDir, name)
	in, err := sameFile(path, "/proc/self/ns/net")
	if err != nil {
		return fmt.Errorf("net_namespace %s: %w", name, err)
	}
	if in {
		return nil
	}
	// Never unlocked: the thread is in the other namespace from here on, and the
	// process image is replaced below (or the caller exits on the error).
	runtime.LockOSThread()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("net_namespace %s: %w", name, err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		unix.Close(fd)
		return fmt.Errorf("net_namespace %s: enter: %w (vrrpd needs CAP_SYS_ADMIN for this; or start it inside the namespace)", name, err)
	}
	unix.Close(fd)
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("net_namespace %s: %w", name, err)
	}
	return fmt.Errorf("net_namespace %s: re-execute %s: %w", name, exe, syscall.Exec(exe, os.Args, os.Environ()))
}

// sameFile reports whether a and b are one file (device and inode): a namespace file
// and /proc/self/ns/net are when the process runs in that namespace.
func sameFile(a, b string) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		return false, err
	}
	if err := unix.Stat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}
