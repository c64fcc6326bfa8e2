package notify

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// FIFO is keepalived's notify_fifo: one line a transition, `INSTANCE "NAME" STATE
// PRIORITY`, which monitoring tools read. It is opened read-write and non-blocking, as
// keepalived opens it, so writing never waits for a reader: with none, or a slow one,
// lines the pipe cannot hold are dropped.
type FIFO struct {
	fd      int // raw: an *os.File would wait in the poller for room in the pipe
	path    string
	created bool
	// dev and ino are the FIFO's, so Close removes it and nothing put in its place.
	dev uint64
	ino uint64
}

// errNotFIFO refuses a path that holds something other than a FIFO.
var errNotFIFO = errors.New("exists and is not a FIFO; not opened, so not overwritten")

// OpenFIFO creates the FIFO at path unless it exists, and opens it. Only a FIFO is ever
// opened: whatever else is at path (a regular file, a device, a symbolic link, which
// O_NOFOLLOW refuses) is left alone, and a FIFO swapped for something else between the
// look and the open is caught by fstat on the open descriptor. keepalived opens whatever
// is there, so a regular file at the path would be written into; vrrpd refuses it.
func OpenFIFO(path string) (*FIFO, error) {
	created := true
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		if !errors.Is(err, syscall.EEXIST) {
			return nil, fmt.Errorf("notify fifo %s: %w", path, err)
		}
		created = false
		// Look before opening: opening a device read-write can have effects of its own.
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return nil, fmt.Errorf("notify fifo %s: %w", path, err)
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			return nil, fmt.Errorf("notify fifo %s: %w", path, errNotFIFO)
		}
	}
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	var st syscall.Stat_t
	if err == nil {
		if err = syscall.Fstat(fd, &st); err == nil && st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
			err = errNotFIFO
		}
		if err != nil {
			_ = syscall.Close(fd)
		}
	}
	if err != nil {
		if created && !errors.Is(err, errNotFIFO) && !errors.Is(err, syscall.ELOOP) {
			_ = os.Remove(path)
		}
		return nil, fmt.Errorf("notify fifo %s: %w", path, err)
	}
	return &FIFO{fd: fd, path: path, created: created, dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// Path is where the FIFO is.
func (f *FIFO) Path() string { return f.path }

// Write writes one transition's line.
func (f *FIFO) Write(name, state string, priority uint8) {
	f.WriteKind(Instance, name, state, priority)
}

// WriteKind writes one line for kind Instance or Group (keepalived gives a group
// priority 0).
func (f *FIFO) WriteKind(kind, name, state string, priority uint8) {
	_, _ = syscall.Write(f.fd, fmt.Appendf(nil, "%s \"%s\" %s %d\n", kind, name, state, priority))
}

// Close closes the FIFO and removes it if OpenFIFO created it, as keepalived does; not
// whatever else has taken its name since.
func (f *FIFO) Close() {
	_ = syscall.Close(f.fd)
	var st syscall.Stat_t
	if f.created && syscall.Lstat(f.path, &st) == nil && uint64(st.Dev) == f.dev && uint64(st.Ino) == f.ino {
		_ = os.Remove(f.path)
	}
}
