package fingerprint

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"

	"github.com/maypok86/otter/v2"
)

// Memo remembers the fingerprints of bodies seen recently (of at least
// DefaultMemoMinBody bytes by default), so that a
// body sent again — the retry or the repeat that a cache hit answers — is
// not canonicalized again. Memo.Compute always returns what Compute would:
// a remembered result is used only when the Params are equal and the body
// is equal byte for byte to the remembered copy (a 64-bit hash only finds
// the candidate; it never decides), and errors are never remembered.
//
// Why: at 200 KB the canonical scan costs about 2.7 times SHA-256 over the
// same bytes, while finding and comparing a remembered body costs a small
// hash and a memory comparison — a small fraction of it.
// The request hash itself (SHA-256 of the canonical form, design record 0001) is
// unchanged: a memo hit returns the hash computed when the body was first
// seen.
//
// The candidate is found by a sampled key: the Params, the length, the
// first and last memoEdge bytes and memoSamples windows spread evenly over
// the rest (the whole body when it is no longer than those), about 12 KiB
// hashed whatever the size. Bodies of different requests can share a
// sampled key (a number changed in the middle, the length kept); the first
// time that is seen the key is marked split, and from then on bodies under
// it are found by a hash of every byte instead, as if there were no
// sampling.
//
// A body is copied into the memo the second time it is seen (the first
// time only its result is noted), so bodies sent once cost the memo a
// small hash, not a copy; a body is copied only when the request seen last
// under its key was the same request, so a stream of different bodies
// sharing a key costs no copy.
//
// A nil *Memo computes every time. A Memo is safe for concurrent use.
type Memo struct {
	seed  maphash.Seed
	min   int
	cache *otter.Cache[uint64, *memoEntry]

	hits, misses atomic.Uint64
}

// memoEntry is what a key holds: a request seen once (body nil), a
// request with a private copy of its body (callers reuse their buffers), or
// under a sampled key, split: look the body up by its full key.
type memoEntry struct {
	p     Params
	body  []byte
	res   Result
	split bool
	notes atomic.Uint32 // the callers' notes on body (ComputeNoted); only entries with a body hand them out
}

// The sampled key's parts (see Memo).
const (
	memoEdge      = 4 << 10 // bytes hashed at each end
	memoSamples   = 64      // windows hashed between the ends
	memoSampleLen = 64      // bytes in a window
	memoSampled   = 2*memoEdge + memoSamples*memoSampleLen
)

var splitEntry = &memoEntry{split: true}

// Default sizes of a Memo made by NewMemo with zero arguments.
const (
	DefaultMemoBytes   = 32 << 20 // memory for remembered bodies
	DefaultMemoMinBody = 1 << 10  // smaller bodies are cheap to fingerprint: never remembered
)

// NewMemo returns a Memo holding at most maxBytes of remembered bodies
// (least recently used first out), remembering only bodies of at least
// minBody bytes; zero picks the defaults. A negative maxBytes returns nil
// (no memo).
func NewMemo(maxBytes int64, minBody int) *Memo {
	if maxBytes < 0 {
		return nil
	}
	if maxBytes == 0 {
		maxBytes = DefaultMemoBytes
	}
	if minBody <= 0 {
		minBody = DefaultMemoMinBody
	}
	return &Memo{
		seed: maphash.MakeSeed(),
		min:  minBody,
		cache: otter.Must(&otter.Options[uint64, *memoEntry]{
			MaximumWeight: uint64(maxBytes),
			Weigher: func(_ uint64, e *memoEntry) uint32 {
				n := len(e.body) + len(e.p.Tenant) + len(e.p.Versions) + len(e.res.Hash) + len(e.res.Model) + 128
				return uint32(min(n, 1<<31))
			},
			// Maintenance (draining the read buffers, evicting) on the
			// goroutine that found them full, not on a goroutine started
			// per drain (otter's default): ≈ 0.5 µs a hit in the cache's
			// memory tier (docs/design/0009-hit-path.md), the same here.
			Executor: func(fn func()) { fn() },
		}),
	}
}

// Compute returns Compute(p, body), from memory when p and body were
// fingerprinted before and are still remembered.
func (m *Memo) Compute(p Params, body []byte) (Result, error) {
	res, _, err := m.ComputeNoted(p, body)
	return res, err
}

// ComputeNoted is Compute, with the notes kept beside the remembered copy of
// body: bits a caller derives from these exact bytes and Params (a check it
// need not run again on them) and sets with Or, for the next caller of the
// same bytes to read. They are nil unless body is byte for byte the copy the
// memo holds — the second time a body is seen onwards, while it is
// remembered — so a note never describes other bytes. A body forgotten and
// seen again starts with no notes.
func (m *Memo) ComputeNoted(p Params, body []byte) (Result, *atomic.Uint32, error) {
	return m.ComputeQuoted(p, body, nil)
}

// ComputeQuoted is ComputeNoted that, when it computes, leaves the body's
// quote bitmap in *quotes as the function ComputeQuoted does. When quotes
// is not nil and the answer comes from memory, *quotes is left empty.
func (m *Memo) ComputeQuoted(p Params, body []byte, quotes *[]uint64) (Result, *atomic.Uint32, error) {
	if quotes != nil {
		*quotes = (*quotes)[:0]
	}
	if m == nil || len(body) < m.min {
		res, err := ComputeQuoted(p, body, quotes)
		return res, nil, err
	}
	k, full := m.key(p, body, false), false
	e, seen := m.cache.GetIfPresent(k)
	if seen && e.split {
		k, full = m.key(p, body, true), true
		e, seen = m.cache.GetIfPresent(k)
	}
	if seen && e.body != nil && e.p == p && bytes.Equal(e.body, body) {
		m.hits.Add(1)
		return e.res, &e.notes, nil
	}
	m.misses.Add(1)
	res, err := ComputeQuoted(p, body, quotes)
	if err != nil {
		return res, nil, err
	}
	var notes *atomic.Uint32
	switch {
	case seen && e.p == p && e.res == res:
		// The request seen last under this key, again (in the same bytes
		// or others): keep a copy to answer the next sight. Most bodies
		// are never sent again (each turn of a conversation is a new
		// body), and copying every one would cost the miss path an
		// allocation of its size.
		ne := &memoEntry{p: p, body: bytes.Clone(body), res: res}
		m.cache.Set(k, ne)
		notes = &ne.notes // body is the copy's bytes
	case seen && !full:
		// Two requests under one sampled key: find them by every byte
		// from now on. This body is noted under its full key.
		m.cache.Set(k, splitEntry)
		m.cache.Set(m.key(p, body, true), &memoEntry{p: p, res: res})
	default:
		m.cache.Set(k, &memoEntry{p: p, res: res})
	}
	return res, notes, nil
}

// key returns the body's sampled key, or with full its hash of every byte.
func (m *Memo) key(p Params, body []byte, full bool) uint64 {
	var h maphash.Hash
	h.SetSeed(m.seed)
	h.WriteString(string(p.Shape))
	h.WriteByte(0)
	h.WriteString(p.Tenant)
	h.WriteByte(0)
	h.WriteString(p.Versions)
	h.WriteByte(0)
	if full || len(body) <= memoSampled {
		h.WriteByte(1)
		h.Write(body)
		return h.Sum64()
	}
	h.WriteByte(2)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(body)))
	h.Write(n[:])
	h.Write(body[:memoEdge])
	var s [memoSamples * memoSampleLen]byte
	mid := body[memoEdge : len(body)-memoEdge]
	stride := (len(mid) - memoSampleLen) / (memoSamples - 1)
	for i := range memoSamples {
		copy(s[i*memoSampleLen:(i+1)*memoSampleLen], mid[i*stride:])
	}
	h.Write(s[:])
	h.Write(body[len(body)-memoEdge:])
	return h.Sum64()
}

// MemoStats are a Memo's counters: look-ups of bodies large enough to be
// remembered that were answered from memory, and those that were computed.
type MemoStats struct{ Hits, Misses uint64 }

// Stats returns the counters (zero for a nil Memo).
func (m *Memo) Stats() MemoStats {
	if m == nil {
		return MemoStats{}
	}
	return MemoStats{Hits: m.hits.Load(), Misses: m.misses.Load()}
}
