// Package poll waits in tests for a condition that another process or goroutine makes true
// (an API server's answer, a reconciler's write), failing the test with the condition's
// last error when it does not come in time.
package poll

import (
	"testing"
	"time"
)

// Interval is how often Until asks again.
const Interval = 20 * time.Millisecond

// Until calls cond every Interval until it returns nil, or fails t with cond's last error
// once timeout has passed.
func Until(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(Interval)
	}
}
