package gateway

import (
	"sync"
	"sync/atomic"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/promptcache"
)

// The fingerprint's pass builds a bitmap of the body's unescaped quotes on
// its way (fingerprint.ComputeQuoted), and the prompt-cache stage walks the
// same bytes again with one: a copy of the fingerprint's spares the stage
// building its own (≈ 13 µs of a 200 KB miss for a copy of ≈ 1 µs). The
// bitmap is kept only for a body the stage will read one of, and only by
// the call (c.quotes): pcBefore reads it and gives it back; a hit gives it
// back with the body; any other call leaves it to the GC.

// wantQuotes returns a buffer for the quote bitmap of c's body when the
// fingerprint is computed over the body itself (c.fpIsBody: not a body
// rewritten for it, as Bedrock's and Gemini's are) and the prompt-cache
// stage would read one; nil otherwise.
func wantQuotes(c *call) *[]uint64 {
	if !c.fpIsBody || c.shape == groundhog.ShapeEmbeddings || !promptcache.WantsQuotes(len(c.body)) {
		return nil
	}
	if q, ok := quotePool.Get().(*[]uint64); ok {
		return q
	}
	return new([]uint64)
}

var quotePool sync.Pool

// maxPooledQuotes bounds the bitmaps kept for reuse (a 4 MiB body's).
const maxPooledQuotes = 1 << 16

func putQuotes(q *[]uint64) {
	if q != nil && cap(*q) <= maxPooledQuotes {
		*q = (*q)[:0]
		quotePool.Put(q)
	}
}

// keepQuotes keeps the bitmap the fingerprint left in q (of c's body:
// wantQuotes), or gives q back when it left none (a remembered body, or
// no assembly here).
func (c *call) keepQuotes(q *[]uint64) {
	if q != nil && len(*q) > 0 {
		c.quotes = q
		return
	}
	putQuotes(q)
}

// quotesShared counts the bitmaps handed to the stage (tests).
var quotesShared atomic.Int64

// takeQuotes returns c's bitmap (nil when it has none) and forgets it: the
// caller gives it back with putQuotes once done reading.
func (c *call) takeQuotes() *[]uint64 {
	q := c.quotes
	c.quotes = nil
	return q
}
