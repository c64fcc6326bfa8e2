package daemon

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestTimerHeapMatchesNaive drives the heap with random Set/Stop/PopDue and checks every
// result, and AnyDue's, against a plain map of deadlines.
func TestTimerHeapMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h timerHeap
	const keys = 40
	for range keys {
		h.newKey()
	}
	naive := map[int]time.Time{}
	base := time.Unix(1000, 0)
	now := base
	for step := range 20000 {
		switch rng.IntN(4) {
		case 0, 1:
			k := rng.IntN(keys)
			at := now.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
			h.Set(k, at)
			naive[k] = at
		case 2:
			k := rng.IntN(keys)
			h.Stop(k)
			delete(naive, k)
		case 3:
			now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
			for {
				k, ok := h.PopDue(now)
				if !ok {
					break
				}
				at, armed := naive[k]
				if !armed || at.After(now) {
					t.Fatalf("step %d: popped key %d (armed=%v at %v) at now %v", step, k, armed, at, now)
				}
				for k2, at2 := range naive {
					if at2.Before(at) {
						t.Fatalf("step %d: popped %d at %v before %d at %v", step, k, at, k2, at2)
					}
				}
				delete(naive, k)
			}
			for k, at := range naive {
				if !at.After(now) {
					t.Fatalf("step %d: key %d due at %v left armed at %v", step, k, at, now)
				}
			}
		}
		if h.Len() != len(naive) {
			t.Fatalf("step %d: heap holds %d, want %d", step, h.Len(), len(naive))
		}
		// AnyDue against the map: is some key due at a probe time and odd (a match that
		// the heap's order knows nothing about)?
		probe := now.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		want := false
		for k, at := range naive {
			if !at.After(probe) && k%2 == 1 {
				want = true
			}
		}
		if got := h.AnyDue(probe, func(k int) bool { return k%2 == 1 }); got != want {
			t.Fatalf("step %d: AnyDue(%v) = %v, want %v", step, probe, got, want)
		}
		for k, at := range naive {
			got, ok := h.Armed(k)
			if !ok || !got.Equal(at) {
				t.Fatalf("step %d: key %d armed %v %v, want %v", step, k, got, ok, at)
			}
		}
	}
}

func TestTimerHeapKeyReuse(t *testing.T) {
	var h timerHeap
	a, b := h.newKey(), h.newKey()
	h.Set(a, time.Unix(5, 0))
	h.freeKey(a)
	if _, ok := h.Armed(a); ok {
		t.Fatal("freed key still armed")
	}
	if c := h.newKey(); c != a {
		t.Fatalf("newKey after free = %d, want reused %d", c, a)
	}
	if b == a {
		t.Fatal("distinct keys collided")
	}
}

// BenchmarkTimerHeapRearm is the per-advert cost of the timer structure with 255 instances:
// re-arm one key and pop the due one.
func BenchmarkTimerHeapRearm(b *testing.B) {
	var h timerHeap
	base := time.Unix(0, 0)
	for k := range 255 {
		h.newKey()
		h.Set(k, base.Add(time.Duration(k)*time.Millisecond))
	}
	b.ReportAllocs()
	now := base
	for i := 0; b.Loop(); i++ {
		now = now.Add(400 * time.Microsecond)
		if k, ok := h.PopDue(now); ok {
			h.Set(k, now.Add(100*time.Millisecond))
		}
		h.Set(i%255, now.Add(300*time.Millisecond))
	}
}
