package ledger

import (
	"math/rand/v2"
	"testing"
)

// TestSeenTable drives the table and a Go map with the same operations
// (new keys, repeats, keys whose index bits collide, growth, midnight) and
// checks that every look-up finds what the map holds.
func TestSeenTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type val struct {
		until int64
		today bool
		first int32
	}
	var tab seenTable
	ref := map[reqKey]val{}
	var keys []reqKey
	newKey := func() reqKey {
		var k reqKey
		k.tenant = uint32(rng.IntN(3))
		for i := range k.sum {
			k.sum[i] = byte(rng.Uint32())
		}
		if rng.IntN(4) == 0 && len(keys) > 0 { // same index bits, other key
			k.sum = keys[rng.IntN(len(keys))].sum
			k.sum[31] ^= 1
		}
		return k
	}
	now := int64(0)
	for step := range 60_000 {
		if step%20_000 == 19_999 { // midnight
			now += 1000
			tab.newDay(now)
			for k, v := range ref {
				if v.until <= now {
					delete(ref, k)
				} else {
					ref[k] = val{until: v.until}
				}
			}
		}
		var k reqKey
		if len(keys) > 0 && rng.IntN(3) == 0 {
			k = keys[rng.IntN(len(keys))]
		} else {
			k = newKey()
			keys = append(keys, k)
		}
		s := tab.slot(&k)
		want, ok := ref[k]
		if s.used != ok || (ok && (s.until != want.until || s.today != want.today || s.first != want.first)) {
			t.Fatalf("step %d: slot %+v, want %+v (present %v)", step, *s, want, ok)
		}
		now++
		v := val{until: max(want.until, now+int64(rng.IntN(2000))), today: true, first: want.first}
		if !want.today {
			v.first = int32(rng.IntN(5))
		}
		s.used, s.until, s.today, s.first = true, v.until, v.today, v.first
		ref[k] = v
	}
	if tab.n != len(ref) {
		t.Fatalf("%d keys in the table, %d in the map", tab.n, len(ref))
	}
}
