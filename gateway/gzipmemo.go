package gateway

import (
	"bytes"
	"compress/gzip"
	"hash/maphash"
	"io"
	"sync"

	"github.com/maypok86/otter/v2"
)

// gzipMemo remembers the gzip form of JSON answers sent recently, so that
// an answer sent again is not compressed again. Every cache hit, replay
// and coalesced answer is the same bytes as an answer already sent (its
// echoed fields aside), and compress/flate at BestSpeed costs about 17 µs
// for a 1.5 KB answer and 33 µs for 8 KB, most of it building Huffman
// tables whatever the size: more than the rest of a hit. A Responses
// answer echoes the request's instructions and tools, so nearly every one
// is over the compression floor.
//
// As with fingerprint.Memo, a 64-bit hash of the bytes only finds a
// candidate: the bytes are compared in full before the remembered form is
// used, so what is sent is always the compression of exactly the bytes
// being answered (a pure function of them: no tenant can get through the
// memo anything but the compression of bytes it is being sent). Bytes are
// copied in the second time they are seen — the first time only their hash
// is noted — so an answer sent once (most misses) costs a hash, not a copy.
type gzipMemo struct {
	seed  maphash.Seed
	cache *otter.Cache[uint64, *gzipEntry]
	// key is the candidate's key of p (tests make keys collide).
	key func(seed maphash.Seed, p []byte) uint64
}

// gzipEntry is what a key holds: bytes seen once (plain nil), or bytes
// and their gzip form.
type gzipEntry struct{ plain, gz []byte }

var gzipNoted = &gzipEntry{}

// gzipMemoBytes bounds the memory of remembered answers, both forms.
const gzipMemoBytes = 8 << 20

func newGzipMemo(maxBytes int) *gzipMemo {
	return &gzipMemo{
		seed: maphash.MakeSeed(),
		key:  maphash.Bytes,
		cache: otter.Must(&otter.Options[uint64, *gzipEntry]{
			MaximumWeight: uint64(maxBytes),
			Weigher: func(_ uint64, e *gzipEntry) uint32 {
				return uint32(min(len(e.plain)+len(e.gz)+64, 1<<31))
			},
			// Maintenance on the goroutine that found the buffers full,
			// as fingerprint.Memo does (no goroutine per drain).
			Executor: func(fn func()) { fn() },
		}),
	}
}

// gzipBufs hold the compressed form of answers that are not remembered,
// until they are written.
var gzipBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putGzipBuf gives b back to gzipBufs, unless one rare huge answer grew it.
func putGzipBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		gzipBufs.Put(b)
	}
}

// compress returns the gzip form of p (gzip.BestSpeed, as the streaming
// path writes it). When buf is not nil the form is in it, and the caller
// gives it back to gzipBufs once written; else the form is the memo's and
// must not be modified.
func (m *gzipMemo) compress(p []byte) (gz []byte, buf *bytes.Buffer) {
	k := m.key(m.seed, p)
	e, seen := m.cache.GetIfPresent(k)
	if seen && e.plain != nil && bytes.Equal(e.plain, p) {
		return e.gz, nil
	}
	buf = gzipBufs.Get().(*bytes.Buffer)
	buf.Reset()
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(buf)
	_, _ = zw.Write(p) // a bytes.Buffer does not fail
	_ = zw.Close()
	zw.Reset(io.Discard)
	gzipWriters.Put(zw)
	if !seen {
		m.cache.Set(k, gzipNoted)
		return buf.Bytes(), buf
	}
	// Seen before (or another answer under the same key: the latest
	// wins): remembered from now on.
	gz = bytes.Clone(buf.Bytes())
	putGzipBuf(buf)
	m.cache.Set(k, &gzipEntry{plain: bytes.Clone(p), gz: gz})
	return gz, nil
}
