package transport

import "time"

// The lab tests (package transport_test) bound their reads with a deadline; production
// never does, it closes the Conn instead.

// SetReadDeadline makes a ReadBatch blocked now or later return an error wrapping
// os.ErrDeadlineExceeded once t has passed; the zero time clears it.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return c.ipc.SetReadDeadline(t)
}
