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

// PacketSocketQueued is how many packets the packet socket of the opt-in sender has let
// into its receive queue (tpacket_stats' tp_packets, which counts what passed the socket
// filter), and false when the Conn has no packet socket.
func (c *Conn) PacketSocketQueued() (uint32, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link == nil {
		return 0, false, nil
	}
	st, err := c.link.conn.Stats()
	if err != nil {
		return 0, true, err
	}
	return st.Packets, true, nil
}
