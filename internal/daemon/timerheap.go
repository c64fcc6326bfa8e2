package daemon

import "time"

// timerHeap is the daemon's one timer structure: a min-heap of deadlines keyed by small
// integers (one key per instance timer and per announce schedule), so that the loop needs a
// single time.Timer armed at the earliest deadline, however many instances run. Keys are
// indices into pos; Set of an armed key moves it in place, so re-arming never allocates
// once the heap has grown to the number of keys.
type timerHeap struct {
	items []timerItem
	pos   []int // pos[key] = index in items, or -1 when the key is not armed
}

type timerItem struct {
	at  time.Time
	key int
}

// newKey reserves a key for a new timer owner. Keys are reused through freeKey.
func (h *timerHeap) newKey() int {
	for k, p := range h.pos {
		if p == -2 {
			h.pos[k] = -1
			return k
		}
	}
	h.pos = append(h.pos, -1)
	return len(h.pos) - 1
}

// freeKey disarms key and makes it available to newKey.
func (h *timerHeap) freeKey(key int) {
	h.Stop(key)
	h.pos[key] = -2
}

// Set arms key at at, replacing any earlier deadline of the same key.
func (h *timerHeap) Set(key int, at time.Time) {
	if i := h.pos[key]; i >= 0 {
		old := h.items[i].at
		h.items[i].at = at
		if at.Before(old) {
			h.up(i)
		} else {
			h.down(i)
		}
		return
	}
	h.items = append(h.items, timerItem{at: at, key: key})
	h.pos[key] = len(h.items) - 1
	h.up(len(h.items) - 1)
}

// Stop disarms key; stopping a disarmed key does nothing.
func (h *timerHeap) Stop(key int) {
	i := h.pos[key]
	if i < 0 {
		return
	}
	last := len(h.items) - 1
	h.swap(i, last)
	h.items = h.items[:last]
	h.pos[key] = -1
	if i < last {
		h.down(i)
		h.up(i)
	}
}

// Armed reports key's deadline, if armed.
func (h *timerHeap) Armed(key int) (time.Time, bool) {
	if i := h.pos[key]; i >= 0 {
		return h.items[i].at, true
	}
	return time.Time{}, false
}

// Peek returns the earliest deadline.
func (h *timerHeap) Peek() (timerItem, bool) {
	if len(h.items) == 0 {
		return timerItem{}, false
	}
	return h.items[0], true
}

// PopDue removes and returns the earliest key whose deadline is not after now.
func (h *timerHeap) PopDue(now time.Time) (int, bool) {
	if len(h.items) == 0 || h.items[0].at.After(now) {
		return 0, false
	}
	key := h.items[0].key
	h.Stop(key)
	return key, true
}

// AnyDue reports whether a key whose deadline is not after now satisfies match. It visits
// only the heap's due part (no child is earlier than its parent), so it costs the number
// of due keys, not of armed ones.
func (h *timerHeap) AnyDue(now time.Time, match func(key int) bool) bool {
	return h.anyDue(0, now, match)
}

func (h *timerHeap) anyDue(i int, now time.Time, match func(key int) bool) bool {
	if i >= len(h.items) || h.items[i].at.After(now) {
		return false
	}
	return match(h.items[i].key) || h.anyDue(2*i+1, now, match) || h.anyDue(2*i+2, now, match)
}

// Len is the number of armed keys.
func (h *timerHeap) Len() int { return len(h.items) }

func (h *timerHeap) less(i, j int) bool { return h.items[i].at.Before(h.items[j].at) }

func (h *timerHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].key] = i
	h.pos[h.items[j].key] = j
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *timerHeap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
