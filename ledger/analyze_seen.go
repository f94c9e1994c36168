package ledger

import "encoding/binary"

// seenTable is Analyze's one set of request keys, on the serial
// collector: for each (tenant, request hash) both what the in-flight rule
// needs (the latest end of an identical call, kept across midnight) and
// what the Accumulator's repeat rule needs (seen today, and in which
// operation first). Before it the collector looked every line up in two Go
// maps (the in-flight reqMap and the Accumulator's), each lookup hashing
// the 36-byte key and, at a day's hundreds of thousands of keys, missing
// the cache twice; here one probe finds both, and the slot index comes
// from the digest's first bytes (SHA-256 output is already uniform), so
// nothing is hashed again. Keys are compared in full: the index only says
// where to look.
//
// Slots hold no pointers, so the garbage collector never scans them.
type seenTable struct {
	slots []seenSlot // open addressing, linear probing; len a power of two
	n     int        // used slots
}

type seenSlot struct {
	key   reqKey
	used  bool
	today bool  // seen in the current day (the repeat rule)
	first int32 // operation index it was first seen in today
	until int64 // latest end of an identical call, unix ns (the in-flight rule)
}

func (t *seenTable) index(k *reqKey) uint64 {
	return binary.LittleEndian.Uint64(k.sum[:8]) ^ uint64(k.tenant)*0x9e3779b97f4a7c15
}

// slot returns k's slot, adding an unused one for it (used false on
// return: the caller fills it) if k is not in the table. The pointer is
// valid until the next call.
func (t *seenTable) slot(k *reqKey) *seenSlot {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.index(k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used {
			s.key = *k
			t.n++
			return s
		}
		if s.key == *k {
			return s
		}
	}
}

func (t *seenTable) grow() {
	old := t.slots
	t.slots = make([]seenSlot, max(1024, 2*len(old)))
	t.n = 0
	t.reinsert(old, func(*seenSlot) bool { return true })
}

// newDay forgets every key but those of calls still running at dayStart
// (so memory holds one day's keys), and what the repeat rule knew.
func (t *seenTable) newDay(dayStart int64) {
	old := t.slots
	keep := 0
	for i := range old {
		if old[i].used && old[i].until > dayStart {
			keep++
		}
	}
	size := 1024
	for 4*keep > 3*size/2 { // room to grow into
		size *= 2
	}
	t.slots = make([]seenSlot, size)
	t.n = 0
	t.reinsert(old, func(s *seenSlot) bool {
		s.today, s.first = false, 0
		return s.until > dayStart
	})
}

func (t *seenTable) reinsert(old []seenSlot, keep func(*seenSlot) bool) {
	mask := uint64(len(t.slots) - 1)
	for j := range old {
		o := &old[j]
		if !o.used || !keep(o) {
			continue
		}
		i := t.index(&o.key) & mask
		for t.slots[i].used {
			i = (i + 1) & mask
		}
		t.slots[i] = *o
		t.n++
	}
}
