package config

import "strconv"

// Warning is a problem that does not stop the load: an unknown or unsupported keyword, or a
// value adjusted the way keepalived adjusts it. Its text is "file:line: message".
type Warning struct {
	Pos     Position
	Message string
	// Count is how many places a repeated warning stands for (a keyword in each of 512
	// instances gives one warning): Pos is the first, Last the last, and Message says so.
	// 0 means one place.
	Count int
	Last  Position
	// group is what repeats of this warning share, when not its whole text.
	group string
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
