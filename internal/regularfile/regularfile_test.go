package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(file, 5); err != nil || string(b) != "12345" {
		t.Errorf("Read at the limit: %q, %v", b, err)
	}
	if _, err := Read(file, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read over the limit: %v, want ErrTooLarge", err)
	}
	// A FIFO nobody writes to would block an open forever: refused before it.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(fifo, 5); err == nil {
		t.Error("Read of a FIFO: no error")
	}
	if _, err := Read(dir, 5); err == nil {
		t.Error("Read of a directory: no error")
	}
}
