package track

import (
	"slices"
	"testing"
)

// statuses feeds results (1 ok, 0 fail) to a fresh state and returns the status after each.
func statuses(rise, fall int, initFail bool, results string) []Status {
	s := NewState(rise, fall, initFail)
	var out []Status
	for _, r := range results {
		s.Observe(r == '1')
		out = append(out, s.Status())
	}
	return out
}

func TestStateRiseFall(t *testing.T) {
	G, F := StatusGood, StatusFailed
	cases := []struct {
		name     string
		rise     int
		fall     int
		initFail bool
		results  string
		want     []Status
	}{
		{"one success from init is enough", 3, 1, false, "1", []Status{G}},
		{"one failure from init fails", 1, 3, false, "0", []Status{F}},
		{"fall counts failures", 1, 3, false, "1001000", []Status{G, G, G, G, G, G, F}},
		{"a success resets the fall count", 1, 2, false, "10101", []Status{G, G, G, G, G}},
		{"rise counts successes after a failure", 2, 1, false, "10110", []Status{G, F, F, G, F}},
		{"init_fail starts failed and needs rise", 2, 1, true, "0111", []Status{F, F, G, G}},
	}
	for _, c := range cases {
		if got := statuses(c.rise, c.fall, c.initFail, c.results); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	if s := NewState(1, 1, false); s.Status() != StatusInit {
		t.Errorf("new state %v, want INIT", s.Status())
	}
	if s := NewState(1, 1, true); s.Status() != StatusFailed {
		t.Errorf("init_fail state %v, want FAILED", s.Status())
	}
}

func TestObserveReportsChanges(t *testing.T) {
	s := NewState(1, 2, false)
	var got []bool
	for _, r := range []bool{true, true, false, false, false, true} {
		got = append(got, s.Observe(r))
	}
	if want := []bool{true, false, false, true, false, true}; !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
}

func TestContributionAndEffective(t *testing.T) {
	cases := []struct {
		w       int
		reverse bool
		st      Status
		want    int
	}{
		{-20, false, StatusFailed, -20}, {-20, false, StatusGood, 0}, {-20, false, StatusInit, 0},
		{30, false, StatusGood, 30}, {30, false, StatusFailed, 0},
		{30, true, StatusGood, -30}, {-20, true, StatusFailed, 20},
		{0, false, StatusFailed, 0}, {-20, false, StatusDisabled, 0},
	}
	for _, c := range cases {
		if got := Contribution(c.w, c.reverse, c.st); got != c.want {
			t.Errorf("Contribution(%d, %v, %v) = %d, want %d", c.w, c.reverse, c.st, got, c.want)
		}
	}
	for _, c := range []struct {
		base uint8
		sum  int
		want uint8
	}{{100, -20, 80}, {100, -200, 1}, {200, 100, 254}, {255, -100, 255}, {254, 0, 254}} {
		if got := Effective(c.base, c.sum); got != c.want {
			t.Errorf("Effective(%d, %d) = %d, want %d", c.base, c.sum, got, c.want)
		}
	}
	for _, c := range []struct {
		reverse bool
		st      Status
		want    bool
	}{{false, StatusInit, true}, {false, StatusFailed, true}, {false, StatusGood, false},
		{true, StatusGood, true}, {true, StatusFailed, false}, {false, StatusDisabled, false}} {
		if got := Faults(c.reverse, c.st); got != c.want {
			t.Errorf("Faults(%v, %v) = %v, want %v", c.reverse, c.st, got, c.want)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"/bin/check", []string{"/bin/check"}},
		{"  /bin/check  a\tb ", []string{"/bin/check", "a", "b"}},
		{`/bin/sh -c 'exit 1'`, []string{"/bin/sh", "-c", "exit 1"}},
		{`/bin/echo "a 'b' c" x"y z"`, []string{"/bin/echo", "a 'b' c", "xy z"}},
		{`/bin/echo a\ b \x41\101\n \cA ''`, []string{"/bin/echo", "a b", "AA\n", "\x01", ""}},
	}
	for _, c := range cases {
		got, err := SplitCommand(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`/bin/x 'open`, `/bin/x "open`, `/bin/x \`} {
		if got, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", bad, got)
		}
	}
}
