package vrid

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// checkValid asserts the invariants every result must have: IDs in range,
// never reserved, never shared, every key either assigned or left out.
func checkValid(t *testing.T, keys []string, reserved func(int) bool, r Result) {
	t.Helper()
	seen := map[int]string{}
	for k, id := range r.IDs {
		if id < MinID || id > MaxID {
			t.Fatalf("%s got ID %d outside 1..255", k, id)
		}
		if reserved != nil && reserved(id) {
			t.Fatalf("%s got reserved ID %d", k, id)
		}
		if other, dup := seen[id]; dup {
			t.Fatalf("ID %d given to both %s and %s", id, other, k)
		}
		seen[id] = k
	}
	uniq := slices.Compact(slices.Sorted(slices.Values(keys)))
	if len(r.IDs)+len(r.LeftOut) != len(uniq) {
		t.Fatalf("%d assigned + %d left out != %d keys", len(r.IDs), len(r.LeftOut), len(uniq))
	}
	if !slices.IsSorted(r.LeftOut) {
		t.Fatalf("left out not sorted: %v", r.LeftOut)
	}
	for _, k := range r.LeftOut {
		if _, ok := r.IDs[k]; ok {
			t.Fatalf("%s both assigned and left out", k)
		}
	}
	if len(r.LeftOut) > 0 {
		free := 0
		for id := MinID; id <= MaxID; id++ {
			if _, used := seen[id]; !used && (reserved == nil || !reserved(id)) {
				free++
			}
		}
		if free != 0 {
			t.Fatalf("%d keys left out while %d IDs are free", len(r.LeftOut), free)
		}
	}
}

func TestAssignNewKeysGetLowestInSortedOrder(t *testing.T) {
	keys := []string{"ns/c", "ns/a", "ns/b", "other/x/10.99.0.1"}
	r := Assign(keys, nil, nil)
	want := map[string]int{"ns/a": 1, "ns/b": 2, "ns/c": 3, "other/x/10.99.0.1": 4}
	if !reflect.DeepEqual(r.IDs, want) || len(r.LeftOut) != 0 || len(r.Renumbered) != 0 {
		t.Fatalf("got %+v, want IDs %v", r, want)
	}
}

func TestAssignKeepsExistingAndFillsGaps(t *testing.T) {
	current := map[string]int{"ns/z": 1, "ns/m": 3, "gone/svc": 2}
	r := Assign([]string{"ns/a", "ns/m", "ns/z", "ns/b", "ns/c"}, current, nil)
	// gone/svc's ID 2 is free again; new keys take 2, 4, 5 in sorted order.
	want := map[string]int{"ns/z": 1, "ns/m": 3, "ns/a": 2, "ns/b": 4, "ns/c": 5}
	if !reflect.DeepEqual(r.IDs, want) {
		t.Fatalf("got %v, want %v", r.IDs, want)
	}
	checkValid(t, []string{"ns/a", "ns/m", "ns/z", "ns/b", "ns/c"}, nil, r)
}

func TestAssignBlacklistReassignsOnlyBlacklisted(t *testing.T) {
	keys := []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e"}
	before := Assign(keys, nil, nil) // a..e = 1..5
	black := map[int]bool{2: true, 4: true, 6: true}
	reserved := func(id int) bool { return black[id] }
	r := Assign(keys, before.IDs, reserved)
	checkValid(t, keys, reserved, r)
	want := map[string]int{"ns/a": 1, "ns/b": 7, "ns/c": 3, "ns/d": 8, "ns/e": 5}
	if !reflect.DeepEqual(r.IDs, want) {
		t.Fatalf("got %v, want %v", r.IDs, want)
	}
	if !reflect.DeepEqual(r.Renumbered, []string{"ns/b", "ns/d"}) {
		t.Fatalf("renumbered %v, want [ns/b ns/d]", r.Renumbered)
	}
	// Lifting the blacklist renumbers nothing back.
	again := Assign(keys, r.IDs, nil)
	if !reflect.DeepEqual(again.IDs, r.IDs) || len(again.Renumbered) != 0 {
		t.Fatalf("lifting the blacklist changed IDs: %v -> %v", r.IDs, again.IDs)
	}
}

func TestAssignRepairsInvalidAndDuplicateCurrent(t *testing.T) {
	current := map[string]int{"ns/a": 0, "ns/b": 256, "ns/c": 9, "ns/d": 9, "ns/e": -3}
	keys := []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e"}
	r := Assign(keys, current, nil)
	checkValid(t, keys, nil, r)
	// ns/c sorts before ns/d, so it keeps 9; the rest get 1, 2, 3, 4.
	want := map[string]int{"ns/a": 1, "ns/b": 2, "ns/c": 9, "ns/d": 3, "ns/e": 4}
	if !reflect.DeepEqual(r.IDs, want) {
		t.Fatalf("got %v, want %v", r.IDs, want)
	}
	if !reflect.DeepEqual(r.Renumbered, []string{"ns/a", "ns/b", "ns/d", "ns/e"}) {
		t.Fatalf("renumbered %v", r.Renumbered)
	}
}

func TestAssignDuplicateKeys(t *testing.T) {
	r := Assign([]string{"ns/a", "ns/a", "ns/b"}, nil, nil)
	if !reflect.DeepEqual(r.IDs, map[string]int{"ns/a": 1, "ns/b": 2}) {
		t.Fatalf("got %v", r.IDs)
	}
}

func keysN(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/svc-%03d", i)
	}
	return keys
}

func TestAssignExhaustion(t *testing.T) {
	keys := keysN(300)
	r := Assign(keys, nil, nil)
	checkValid(t, keys, nil, r)
	if len(r.IDs) != 255 || len(r.LeftOut) != 45 {
		t.Fatalf("%d assigned, %d left out; want 255 and 45", len(r.IDs), len(r.LeftOut))
	}
	// Sorted order decides: svc-000..254 get 1..255, svc-255..299 wait.
	for i, k := range keys[:255] {
		if r.IDs[k] != i+1 {
			t.Fatalf("%s got %d, want %d", k, r.IDs[k], i+1)
		}
	}
	if !reflect.DeepEqual(r.LeftOut, keys[255:]) {
		t.Fatalf("left out %v, want %v", r.LeftOut, keys[255:])
	}
	// A key that had an ID keeps it even when a newcomer sorts before it.
	r2 := Assign(append([]string{"aaa/first"}, keys...), r.IDs, nil)
	if _, ok := r2.IDs["aaa/first"]; ok || r2.LeftOut[0] != "aaa/first" || len(r2.LeftOut) != 46 {
		t.Fatalf("newcomer displaced an assigned key: left out %v", r2.LeftOut)
	}
	// Deleting five services frees five IDs, which go to the first five
	// left-out keys in sorted order.
	remaining := slices.Concat(keys[5:], []string{"aaa/first"})
	r3 := Assign(remaining, r2.IDs, nil)
	checkValid(t, remaining, nil, r3)
	wantIn := []string{"aaa/first", "ns/svc-255", "ns/svc-256", "ns/svc-257", "ns/svc-258"}
	for i, k := range wantIn {
		if r3.IDs[k] != i+1 {
			t.Fatalf("%s got %d, want %d", k, r3.IDs[k], i+1)
		}
	}
	if len(r3.LeftOut) != 41 || r3.LeftOut[0] != "ns/svc-259" {
		t.Fatalf("left out %d starting %v", len(r3.LeftOut), r3.LeftOut[:1])
	}
	// A blacklisted ID with nothing free leaves its former holder out.
	r4 := Assign(keys[:255], r.IDs, func(id int) bool { return id == 7 })
	if !reflect.DeepEqual(r4.LeftOut, []string{keys[6]}) {
		t.Fatalf("left out %v, want [%s]", r4.LeftOut, keys[6])
	}
	if Free(r4.IDs, nil) != 1 || Free(r4.IDs, func(id int) bool { return id == 7 }) != 0 {
		t.Fatalf("Free wrong: %d", Free(r4.IDs, nil))
	}
}

func TestAssignStableUnderChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	universe := keysN(400)
	present := map[string]bool{}
	var ids map[string]int
	black := map[int]bool{}
	for step := 0; step < 3000; step++ {
		// Add or remove a few keys, and now and then toggle a blacklist ID.
		for n := rng.IntN(4); n >= 0; n-- {
			k := universe[rng.IntN(len(universe))]
			present[k] = !present[k]
		}
		changedBlack := -1
		if rng.IntN(20) == 0 {
			changedBlack = 1 + rng.IntN(255)
			black[changedBlack] = !black[changedBlack]
		}
		reserved := func(id int) bool { return black[id] }
		keys := slices.Collect(maps.Keys(present))
		keys = slices.DeleteFunc(keys, func(k string) bool { return !present[k] })
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		r := Assign(keys, ids, reserved)
		checkValid(t, keys, reserved, r)
		for _, k := range keys {
			old, had := ids[k]
			now, has := r.IDs[k]
			if had && !black[old] && (!has || now != old) {
				t.Fatalf("step %d: %s had %d, now %d (assigned %v) without a reason", step, k, old, now, has)
			}
		}
		// Same inputs in another order: same output.
		slices.Reverse(keys)
		if r2 := Assign(keys, ids, reserved); !reflect.DeepEqual(r, r2) {
			t.Fatalf("step %d: not deterministic", step)
		}
		ids = r.IDs
	}
}

func FuzzAssignNoDuplicates(f *testing.F) {
	f.Add(uint64(1), uint8(10), uint8(3))
	f.Add(uint64(7), uint8(255), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, nKeys, nBlack uint8) {
		rng := rand.New(rand.NewPCG(seed, 0))
		keys := keysN(int(nKeys) + 50)[:nKeys]
		current := map[string]int{}
		for _, k := range keys {
			if rng.IntN(2) == 0 {
				current[k] = rng.IntN(260) - 2
			}
		}
		black := map[int]bool{}
		for i := 0; i < int(nBlack); i++ {
			black[rng.IntN(256)] = true
		}
		reserved := func(id int) bool { return black[id] }
		checkValid(t, keys, reserved, Assign(keys, current, reserved))
	})
}

func BenchmarkAssign255Of300(b *testing.B) {
	keys := keysN(300)
	cur := Assign(keys[:200], nil, nil).IDs
	black := func(id int) bool { return id%50 == 0 }
	for b.Loop() {
		Assign(keys, cur, black)
	}
}
