package poll

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

func TestUntilReturnsOnceTrue(t *testing.T) {
	n := 0
	Until(t, time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

// A condition that never holds fails the test with its last error.
func TestUntilFailsAfterTimeout(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Until(ft, 50*time.Millisecond, func() error { return errors.New("never") })
	}()
	<-done
	if ft.failed == "" {
		t.Fatal("Until did not fail")
	}
}

type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, a ...any) {
	f.failed = format
	runtime.Goexit() // as testing.T.Fatalf ends the test goroutine
}
