package sqlite

import (
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"slices"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// The rows of a block are stored smaller than packed rows side by side:
// each field of a packed row (ledgerpack.go) is written against the same
// field of the previous row of the block. The pages a commit writes to the
// WAL, and a checkpoint again to the database, are most of what a block
// costs, so bytes are CPU here. A block's rows, one after the other, are
// each a uvarint length and then, field by field, one of:
//
//	'='  the previous row's field, unchanged (tenant, model, flags…)
//	'd'  an int: the previous row's value plus a zigzag varint (the time)
//	'x'  a text of lowercase hex digits, even in length: uvarint byte
//	     count, the bytes (time-keyed ids: 16 bytes instead of 32)
//	'h'  "sha256:" and such hex (request hashes: 32 bytes instead of 71)
//	'i', 's', 'n'  a field as packed
//
// The first row of a block refers to nothing. Decoding gives back the
// packed row byte for byte.
const (
	tagSame  = '='
	tagDelta = 'd'
	tagHex   = 'x'
	tagSha   = 'h'
)

const shaPrefix = "sha256:"

// blockEncoder writes the rows of one block. It writes each field of
// appendPackedLedger straight from the entry, against the previous entry:
// TestBlockCodecRoundTrip holds the two to the same bytes.
type blockEncoder struct {
	out  []byte // the block so far
	prev *groundhog.LedgerEntry
}

// reset starts a new block.
func (w *blockEncoder) reset() {
	w.out, w.prev = w.out[:0], nil
}

// add appends e to the block; e must not change until the block is
// written (the next row refers to it).
func (w *blockEncoder) add(e *groundhog.LedgerEntry) {
	p := w.prev
	if p == nil {
		p = &noPrev
	}
	first := w.prev == nil
	// The row is encoded in place after a one-byte length (a row under
	// 128 bytes, as a gateway row is), moved if its length needs more.
	start := len(w.out)
	r := append(w.out, 0)
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
	if first || varintLen(t-pt) >= varintLen(t) {
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
	// The optional fields, as appendPackedLedger writes them; one the
	// previous row lacks is written in full.
	ext, pext := packedExtras(e), packedExtras(p)
	if first {
		pext = 0
	}
	if ext >= 2 {
		if pext >= 2 {
			text(e.Session, p.Session)
			text(e.ParentSession, p.ParentSession)
		} else {
			r = packText(packText(r, e.Session), e.ParentSession)
		}
	}
	if ext >= 3 {
		if pext >= 3 {
			num(e.ResultBytes, p.ResultBytes)
		} else {
			r = packInt(r, e.ResultBytes)
		}
	}
	if n := len(r) - start - 1; n < 0x80 {
		r[start] = byte(n)
	} else {
		var lb [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(lb[:], uint64(n))
		r = append(r, lb[1:k]...) // room for the longer length
		copy(r[start+k:], r[start+1:start+1+n])
		copy(r[start:], lb[:k])
	}
	w.out = r
	w.prev = e
}

var noPrev groundhog.LedgerEntry

// appendHexField appends tag, the byte count and the bytes of s when s is
// lowercase hex digits, even in length and not empty; else it returns r
// unchanged and false.
func appendHexField(r []byte, tag byte, s string) ([]byte, bool) {
	n := len(s) / 2
	if n == 0 || len(s)%2 != 0 {
		return r, false
	}
	start := len(r)
	r = binary.AppendUvarint(append(r, tag), uint64(n))
	r = slices.Grow(r, n)
	out := r[len(r) : len(r)+n]
	for i := range out {
		hi, lo := lowerHex[s[2*i]], lowerHex[s[2*i+1]]
		if hi|lo > 0xf {
			return r[:start], false
		}
		out[i] = hi<<4 | lo
	}
	return r[:len(r)+n], true
}

// lowerHex maps a lowercase hex digit to its value, anything else to 0xff.
var lowerHex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
	}
	return t
}()

func varintLen(v int64) int {
	ux := uint64(v) << 1 // zigzag, as binary.PutVarint
	if v < 0 {
		ux = ^ux
	}
	return (bits.Len64(ux|1) + 6) / 7
}

// blockDecoder reads the rows of one block back as packed rows.
type blockDecoder struct {
	rest     []byte
	bufs     [2][]byte
	offs     [2][]int32
	which    int // bufs[which] holds the current row
	havePrev bool
}

// next decodes the next row; it is valid until the call after next.
// nil at the end.
func (d *blockDecoder) next() ([]byte, error) {
	if len(d.rest) == 0 {
		return nil, nil
	}
	l, k := binary.Uvarint(d.rest)
	if k <= 0 || l > uint64(len(d.rest)-k) {
		return nil, errBadPack
	}
	r := d.rest[k : k+int(l)]
	d.rest = d.rest[k+int(l):]
	pi := d.which
	ci := 1 - pi
	prev, prevOffs := d.bufs[pi], d.offs[pi]
	out, offs := d.bufs[ci][:0], d.offs[ci][:0]
	field := func(i int) []byte {
		if !d.havePrev || i >= len(prevOffs)-1 {
			return nil
		}
		return prev[prevOffs[i]:prevOffs[i+1]]
	}
	for i := 0; len(r) > 0; i++ {
		offs = append(offs, int32(len(out)))
		switch r[0] {
		case tagSame:
			p := field(i)
			if p == nil {
				return nil, errBadPack
			}
			out = append(out, p...)
			r = r[1:]
		case tagDelta:
			p := field(i)
			if p == nil || p[0] != tagInt {
				return nil, errBadPack
			}
			pv, _ := binary.Varint(p[1:])
			dv, n := binary.Varint(r[1:])
			if n <= 0 {
				return nil, errBadPack
			}
			out = binary.AppendVarint(append(out, tagInt), pv+dv)
			r = r[1+n:]
		case tagHex, tagSha:
			n, m := binary.Uvarint(r[1:])
			if m <= 0 || n > uint64(len(r)-1-m) {
				return nil, errBadPack
			}
			raw := r[1+m : 1+m+int(n)]
			tl := 2 * len(raw)
			if r[0] == tagSha {
				tl += len(shaPrefix)
			}
			out = binary.AppendUvarint(append(out, tagText), uint64(tl))
			if r[0] == tagSha {
				out = append(out, shaPrefix...)
			}
			out = hex.AppendEncode(out, raw)
			r = r[1+m+int(n):]
		case tagInt:
			_, n := binary.Varint(r[1:])
			if n <= 0 {
				return nil, errBadPack
			}
			out = append(out, r[:1+n]...)
			r = r[1+n:]
		case tagText:
			n, m := binary.Uvarint(r[1:])
			if m <= 0 || n > uint64(len(r)-1-m) {
				return nil, errBadPack
			}
			out = append(out, r[:1+m+int(n)]...)
			r = r[1+m+int(n):]
		case tagNull:
			out = append(out, tagNull)
			r = r[1:]
		default:
			return nil, errBadPack
		}
	}
	offs = append(offs, int32(len(out)))
	d.bufs[ci], d.offs[ci] = out, offs
	d.which, d.havePrev = ci, true
	return out, nil
}
