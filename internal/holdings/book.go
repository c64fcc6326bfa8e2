package holdings

// Book is the entries of one kind that a daemon added (or a crashed one before it, whose
// record it read): each by its identity K, as recorded (V), with the holders that need
// it. An entry is recorded whether or not anyone holds it: one read from a crashed run's
// record has no holder, and one whose last holder let go stays until its removal
// succeeds. The zero Book is empty and ready. It is not safe for concurrent use: its
// owner's lock guards it.
type Book[K comparable, V any] struct {
	entries map[K]V
	holders map[K]map[string]bool
}

// Len is how many entries are recorded.
func (b *Book[K, V]) Len() int { return len(b.entries) }

// Get returns k's recorded entry.
func (b *Book[K, V]) Get(k K) (V, bool) {
	v, ok := b.entries[k]
	return v, ok
}

// Has reports whether k is recorded.
func (b *Book[K, V]) Has(k K) bool {
	_, ok := b.entries[k]
	return ok
}

// Put records k as v (a new entry, or new attributes of a recorded one); its holders
// stay.
func (b *Book[K, V]) Put(k K, v V) {
	if b.entries == nil {
		b.entries = make(map[K]V)
	}
	b.entries[k] = v
}

// Drop takes k out of the book, holders and all: it is gone from the kernel.
func (b *Book[K, V]) Drop(k K) {
	delete(b.entries, k)
	delete(b.holders, k)
}

// Hold adds holder to k's holders.
func (b *Book[K, V]) Hold(k K, holder string) {
	if b.holders == nil {
		b.holders = make(map[K]map[string]bool)
	}
	if b.holders[k] == nil {
		b.holders[k] = make(map[string]bool, 1)
	}
	b.holders[k][holder] = true
}

// Let lets holder go of k and reports whether that was the last: then nobody holds k and
// it should leave the kernel (and, once it has, the book: Drop). Letting go of an entry
// that is not recorded reports false: it is not ours to remove.
func (b *Book[K, V]) Let(k K, holder string) (last bool) {
	if !b.Has(k) {
		return false
	}
	delete(b.holders[k], holder)
	if len(b.holders[k]) > 0 {
		return false
	}
	delete(b.holders, k)
	return true
}

// Entries returns the recorded entries, in no order.
func (b *Book[K, V]) Entries() []V {
	out := make([]V, 0, len(b.entries))
	for _, v := range b.entries {
		out = append(out, v)
	}
	return out
}

// Keys returns the recorded identities, in no order.
func (b *Book[K, V]) Keys() []K {
	out := make([]K, 0, len(b.entries))
	for k := range b.entries {
		out = append(out, k)
	}
	return out
}

// Orphan lets every holder of k go; it stays recorded until Drop.
func (b *Book[K, V]) Orphan(k K) { delete(b.holders, k) }
