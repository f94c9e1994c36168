package sqlite

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// The block encoder before it wrote rows in place and computed varint
// lengths arithmetically (docs/design/0004-sqlite-ledger-blocks.md), kept to hold the new one to
// it byte for byte.

// blockEncoderOld writes the rows of one block. It writes each field of
// appendPackedLedger straight from the entry, against the previous entry:
// TestBlockCodecRoundTrip holds the two to the same bytes.
type blockEncoderOld struct {
	out  []byte // the block so far
	row  []byte // the current row, encoded
	prev *groundhog.LedgerEntry
}

// reset starts a new block.
func (w *blockEncoderOld) reset() {
	w.out, w.prev = w.out[:0], nil
}

// add appends e to the block; e must not change until the block is
// written (the next row refers to it).
func (w *blockEncoderOld) add(e *groundhog.LedgerEntry) {
	p := w.prev
	if p == nil {
		p = &noPrev
	}
	first := w.prev == nil
	r := w.row[:0]
	text := func(s, ps string) {
		if !first && s == ps {
			r = append(r, tagSame)
		} else {
			r = packText(r, s)
		}
	}
	num := func(v, pv int64) {
		if !first && v == pv {
			r = append(r, tagSame)
		} else {
			r = packInt(r, v)
		}
	}
	// Order and values of appendPackedLedger.
	var ok bool
	if r, ok = appendHexField(r, tagHex, e.ID); !ok {
		r = packText(r, e.ID)
	}
	t, pt := e.Time.UnixNano(), p.Time.UnixNano()
	if first || varintLenOld(t-pt) >= varintLenOld(t) {
		r = packInt(r, t)
	} else {
		r = binary.AppendVarint(append(r, tagDelta), t-pt) // t - pt may wrap; pt + d wraps back
	}
	text(e.Tenant, p.Tenant)
	text(e.Operation, p.Operation)
	ok = false
	if h, sha := strings.CutPrefix(e.RequestHash, shaPrefix); sha && (first || e.RequestHash != p.RequestHash) {
		r, ok = appendHexField(r, tagSha, h)
	}
	if !ok {
		text(e.RequestHash, p.RequestHash)
	}
	text(string(e.Shape), string(p.Shape))
	text(e.Model, p.Model)
	text(e.Provider, p.Provider)
	text(string(e.Outcome), string(p.Outcome))
	num(int64(e.Status), int64(p.Status))
	num(e.Usage.InputTokens, p.Usage.InputTokens)
	num(e.Usage.CachedInputTokens, p.Usage.CachedInputTokens)
	num(e.Usage.CacheWriteTokens, p.Usage.CacheWriteTokens)
	num(e.Usage.OutputTokens, p.Usage.OutputTokens)
	num(int64(e.Cost), int64(p.Cost))
	num(int64(e.Saved), int64(p.Saved))
	num(int64(e.FullCost), int64(p.FullCost))
	num(int64(e.Latency), int64(p.Latency))
	num(int64(e.Attempt), int64(p.Attempt))
	num(int64(boolInt(e.InFlight)), int64(boolInt(p.InFlight)))
	num(int64(boolInt(e.CacheOn)), int64(boolInt(p.CacheOn)))
	num(int64(boolInt(e.Idempotent)), int64(boolInt(p.Idempotent)))
	num(int64(boolInt(e.Stream)), int64(boolInt(p.Stream)))
	num(e.Usage.CacheWrite1hTokens, p.Usage.CacheWrite1hTokens)
	num(int64(e.PromptCacheSaved), int64(p.PromptCacheSaved))
	text(e.PromptCacheBreak, p.PromptCacheBreak)
	num(e.PromptCacheLostTokens, p.PromptCacheLostTokens)
	num(int64(boolInt(e.FanOutHeld)), int64(boolInt(p.FanOutHeld)))
	text(e.ProviderCacheReason, p.ProviderCacheReason)
	w.row = r
	w.out = binary.AppendUvarint(w.out, uint64(len(r)))
	w.out = append(w.out, r...)
	w.prev = e
}

func varintLenOld(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// randEntry is a row whose fields each take one of a few values, so that
// consecutive rows repeat some fields and not others; long strings make
// rows of 128 bytes and more (a longer length prefix).
func randEntry(rng *rand.Rand, t0 time.Time) groundhog.LedgerEntry {
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	num := func() int64 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return math.MinInt64
		case 2:
			return math.MaxInt64
		case 3:
			return -rng.Int64N(1 << 20)
		default:
			return rng.Int64N(1 << uint(rng.IntN(62)+1))
		}
	}
	long := strings.Repeat("x", 100+rng.IntN(200))
	at := t0.Add(time.Duration(rng.Int64N(int64(time.Hour))) - 30*time.Minute)
	if rng.IntN(8) == 0 {
		at = time.Unix(0, num()).UTC()
	}
	return groundhog.LedgerEntry{
		ID:          pick(groundhog.NewTimeID(at), "bulk-0001", "", "abc", "ABCDEF0123456789", "0g", long),
		Time:        at,
		Tenant:      pick("local", "t2", "", long),
		Operation:   pick("", "op", long),
		RequestHash: pick("sha256:0123456789abcdef", "sha256:"+strings.Repeat("ab", 32), "sha256:", "sha256:xyz", "md5:00", "", "sha256:abc"),
		Shape:       groundhog.Shape(pick("chat", "messages", "")),
		Model:       pick("sim-small", "", long),
		Provider:    pick("sim", ""),
		Outcome:     groundhog.Outcome(pick("cache_hit", "upstream", "")),
		Status:      int(num()),
		Usage: groundhog.Usage{InputTokens: num(), CachedInputTokens: num(), CacheWriteTokens: num(),
			OutputTokens: num(), CacheWrite1hTokens: num()},
		Cost: groundhog.Money(num()), Saved: groundhog.Money(num()), FullCost: groundhog.Money(num()),
		Latency: time.Duration(num()), Attempt: int(num()),
		InFlight: rng.IntN(2) == 0, CacheOn: rng.IntN(2) == 0, Idempotent: rng.IntN(2) == 0, Stream: rng.IntN(2) == 0,
		PromptCacheSaved: groundhog.Money(num()), PromptCacheBreak: pick("", "system", long),
		PromptCacheLostTokens: num(), FanOutHeld: rng.IntN(2) == 0, ProviderCacheReason: pick("", "input_changed", long),
	}
}

// The encoder writes every block exactly as the old one did: random rows
// (repeating fields or not, rows over 128 bytes, extreme numbers, ids and
// hashes hex or not), blocks of 1 to 64 rows, the encoder reused across
// blocks as appends reuse it; and the gateway's hit rows (one hash, ids a
// few µs apart).
func TestBlockEncoderMatchesOld(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var enc blockEncoder
	var old blockEncoderOld
	for block := range 20_000 {
		rows := make([]groundhog.LedgerEntry, 1+rng.IntN(64))
		for i := range rows {
			if i > 0 && rng.IntN(3) == 0 {
				rows[i] = rows[i-1] // a repeat: every field the same
				rows[i].ID = groundhog.NewTimeID(rows[i].Time.Add(time.Microsecond))
				continue
			}
			rows[i] = randEntry(rng, t0)
		}
		enc.reset()
		old.reset()
		for i := range rows {
			enc.add(&rows[i])
			old.add(&rows[i])
		}
		if !bytes.Equal(enc.out, old.out) {
			t.Fatalf("block %d (%d rows): encoded\n%q\nthe old encoder wrote\n%q", block, len(rows), enc.out, old.out)
		}
		// And it decodes as it did.
		d := blockDecoder{rest: enc.out}
		for i := range rows {
			if _, err := d.next(); err != nil {
				t.Fatalf("block %d row %d: %v", block, i, err)
			}
		}
	}
	hit := make([]groundhog.LedgerEntry, 2048)
	for i := range hit {
		at := t0.Add(time.Duration(i) * 50 * time.Microsecond)
		hit[i] = groundhog.LedgerEntry{ID: groundhog.NewTimeID(at), Time: at, Tenant: "local",
			RequestHash: "sha256:" + strings.Repeat("7f", 32), Shape: "chat", Model: "sim-small", Provider: "sim",
			Outcome: groundhog.OutcomeCacheHit, Status: 200, Latency: time.Duration(20000 + i%977), CacheOn: true}
	}
	enc.reset()
	old.reset()
	for i := range hit {
		enc.add(&hit[i])
		old.add(&hit[i])
	}
	if !bytes.Equal(enc.out, old.out) {
		t.Fatal("the gateway's hit rows encode otherwise than with the old encoder")
	}
}

// varintLen is the length binary.PutVarint writes, for every bit length
// and sign.
func TestVarintLen(t *testing.T) {
	var b [binary.MaxVarintLen64]byte
	check := func(v int64) {
		if got, want := varintLen(v), binary.PutVarint(b[:], v); got != want || varintLenOld(v) != want {
			t.Fatalf("varintLen(%d) = %d, want %d", v, got, want)
		}
	}
	for s := range 64 {
		for _, v := range []int64{1 << s, 1<<s - 1, 1<<s + 1} {
			check(v)
			check(-v)
		}
	}
	check(0)
	check(math.MaxInt64)
	check(math.MinInt64)
	rng := rand.New(rand.NewPCG(7, 8))
	for range 100_000 {
		check(int64(rng.Uint64()) >> rng.IntN(64))
	}
}
