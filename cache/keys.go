package cache

import (
	"context"
	"hash/maphash"
	"sync/atomic"

	"github.com/groundhog-ai/groundhog"
)

// KeyLister is a store that lists the keys of the entries it holds (live or
// expired), for a Cache with Options.OwnStore to learn which keys its store
// may hold when it opens.
type KeyLister interface {
	CacheKeys(ctx context.Context, fn func(tenant, hash string) error) error
}

// keyFilter is a Bloom filter of the keys the store may hold, for a Cache
// whose store no one else writes (Options.OwnStore): filled from the store's
// keys when the Cache opens, and with each key before the store write that
// could add it. A key it has never seen is not in the store, so a look-up
// that misses memory need not read the store to find nothing — the store
// read a cached miss makes. It answers "maybe" for a key it has seen and, at
// its false-positive rate, for some it has not; it never forgets a key (a
// deleted or expired entry's key reads "maybe", and the store is read as
// before). Until its filling from the store is done it answers "maybe" for
// every key.
//
// 2^24 bits (2 MiB) and 4 probes: a key never stored reads "maybe" about
// once in 500 with a million keys in the store, once in 7 with four million;
// each "maybe" costs one store read, as every look-up did before.
type keyFilter struct {
	bits  [keyFilterWords]atomic.Uint64
	seed  maphash.Seed
	ready atomic.Bool
}

const (
	keyFilterBits  = 1 << 24
	keyFilterWords = keyFilterBits / 64
	keyFilterProbe = 4
)

func newKeyFilter() *keyFilter { return &keyFilter{seed: maphash.MakeSeed()} }

// probes calls fn with each bit of k (double hashing over one 64-bit hash).
func (f *keyFilter) probes(k key, fn func(word int, bit uint64) bool) bool {
	h := maphash.Comparable(f.seed, k)
	h1, h2 := h&0xffffffff, h>>32|1
	for i := range uint64(keyFilterProbe) {
		b := (h1 + i*h2) % keyFilterBits
		if !fn(int(b/64), 1<<(b%64)) {
			return false
		}
	}
	return true
}

// add notes that the store may hold k.
func (f *keyFilter) add(k key) {
	f.probes(k, func(w int, bit uint64) bool {
		f.bits[w].Or(bit)
		return true
	})
}

// absent reports whether the store cannot hold k: the filter is filled and
// one of k's bits is clear.
func (f *keyFilter) absent(k key) bool {
	if !f.ready.Load() {
		return false
	}
	return !f.probes(k, func(w int, bit uint64) bool { return f.bits[w].Load()&bit != 0 })
}

// fill adds every key the store lists, then opens the filter. A failed
// listing leaves it closed: every look-up reads the store, as without it.
func (f *keyFilter) fill(ctx context.Context, l KeyLister) {
	err := l.CacheKeys(ctx, func(tenant, hash string) error {
		f.add(key{tenant, hash})
		return nil
	})
	if err == nil {
		f.ready.Store(true)
	}
}

// errAbsent is the miss of a key the filter says the store cannot hold.
var errAbsent = groundhog.Errorf(groundhog.ENOTFOUND, "cache entry not found")
