package config

import "strconv"

// Warning is a problem that does not stop the load: an unknown or unsupported keyword, or a
// value adjusted the way keepalived adjusts it. Its text is "file:line: message".
type Warning struct {
	Pos     Position
	Message string
}

func (w Warning) Error() string { return w.Pos.String() + ": " + w.Message }

// Error is a problem that aborts the load: a syntax error, a bad value, an invalid or
// duplicate instance. Its text is "file:line: message".
type Error struct {
	Pos     Position
	Message string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Message }

func itoa(i int) string { return strconv.Itoa(i) }
