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
}

// OpenFIFO creates the FIFO at path unless it exists, and opens it.
func OpenFIFO(path string) (*FIFO, error) {
	created := true
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		if !errors.Is(err, syscall.EEXIST) {
			return nil, fmt.Errorf("notify fifo %s: %w", path, err)
		}
		created = false
	}
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if created {
			_ = os.Remove(path)
		}
		return nil, fmt.Errorf("notify fifo %s: %w", path, err)
	}
	return &FIFO{fd: fd, path: path, created: created}, nil
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

// Close closes the FIFO and removes it if OpenFIFO created it, as keepalived does.
func (f *FIFO) Close() {
	_ = syscall.Close(f.fd)
	if f.created {
		_ = os.Remove(f.path)
	}
}
