package promptcache

import (
	"sync"
	"sync/atomic"
)

// The Segments of a miss's prefix model (≈ 190 bytes per message: 70–90 KB
// for the 200 KB agent request, 18 % of the stage's allocated bytes, every
// miss) are recycled once the stage is done with them: Stage.After has
// recorded the prompt (record copies what it keeps) and nothing reads the
// Call's prefix afterwards. A prefix from Parse, or one whose call never
// reaches Stage.After (the upstream failed), is left to the GC.

var segPool sync.Pool // *[]Segment, length 0

// maxPooledSegs bounds the slices kept (a huge prompt's are left to the GC).
const maxPooledSegs = 1 << 14

// getSegs returns an empty slice with room for at least n segments.
func getSegs(n int) []Segment {
	if sp, ok := segPool.Get().(*[]Segment); ok {
		if cap(*sp) >= n {
			return (*sp)[:0]
		}
		segPool.Put(sp) // too small for this one: keep it for a smaller prompt
	}
	return make([]Segment, 0, n)
}

// putSegs gives back s; the caller must hold the only reference to it.
func putSegs(s []Segment) {
	if cap(s) == 0 || cap(s) > maxPooledSegs {
		return
	}
	s = s[:0]
	segPool.Put(&s)
}

// release recycles the prefix model of a call whose prompt is recorded:
// the call's diagnosis and outcome stay, its prefix is gone (a later After
// on it reports nothing and records nothing).
func (c *Call) release() {
	if c == nil || c.prefix == nil {
		return
	}
	segs := c.prefix.Segments
	c.prefix = nil
	if cap(segs) > 0 && cap(segs) <= maxPooledSegs {
		segsRecycled.Add(1)
	}
	putSegs(segs)
}

// segsRecycled counts the slices release gave back (tests).
var segsRecycled atomic.Int64
