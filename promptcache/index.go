package promptcache

import (
	"bytes"
	"math/bits"
	"sync"

	"github.com/groundhog-ai/groundhog/fingerprint"
)

// index is what the one validating walk over a request body (parse) keeps
// so that the prefix model never walks the body again: the members and
// elements of every container down to indexDepth (the body, its top-level
// arrays, messages or input items, their content/output arrays and the
// blocks or parts in them), and where the shape's cache marker occurs.
//
// Before it, the prefix model walked each message about six times (the
// validating skip, the top-level members, the messages array, a field
// look-up for the role, another for the content, the block's members) and
// searched every segment and message head for the marker. The answers are
// the same by construction: the walk is skipValue's, recording what
// members/elems would find, and a marker occurrence is found where
// bytes.Count would find it (see marks).
type index struct {
	// nodes are the recorded containers in the order they open, i.e. by
	// increasing start offset (a slot is taken when a container opens and
	// filled in when it closes): its children are kids[n.from:n.to].
	// Looked up by binary search, after a try at the node following the
	// last one found (the builder asks in body order). A map keyed by offset
	// cost 10 % of the stage (hash, insert, clear) on the 200 KB body.
	nodes []ixNode
	last  int // the node last found
	kids  []ixKid
	// stack holds the children of the containers being walked, one level
	// per depth (reused across containers of the same depth).
	stack [indexDepth + 1][]ixKid
	// mk is the marker pattern (`"cache_control"`); marks are the offsets
	// at which it starts, in increasing order.
	mk    []byte
	marks []int
	// q is the body's unescaped-quote bitmap (fingerprint.QuoteIndex), nil
	// when not built (a small body, or no SIMD): skipString then finds a
	// string's end with a trailing-zero count instead of a quote search and
	// a backslash count per quote (the 200 KB chat body holds 10k quotes,
	// 4.6k of them escaped). It is qbuf, or the caller's (Request.Quotes).
	q, qbuf []uint64
}

// indexDepth is the deepest container depth recorded: 0 the body, 1 its
// top-level arrays (tools, system, messages, input), 2 a tool, message or
// input item, 3 its content or output array, 4 a content block or part.
const indexDepth = 4

type ixNode struct{ start, from, to int32 }

// ixKid is one child: an object member (key: the key's span including its
// quotes) or an array element (key zero).
type ixKid struct{ key, val span }

// newIndex returns an empty index from the pool; release gives it back
// (parse does, before returning: nothing keeps an index).
func newIndex(mk []byte) *index {
	ix, _ := indexPool.Get().(*index)
	if ix == nil {
		ix = &index{nodes: make([]ixNode, 0, 64)}
	}
	ix.mk = mk
	return ix
}

var indexPool sync.Pool

func (ix *index) release() {
	if ix == nil || len(ix.kids) > 1<<20 {
		return // a huge body's index is left to the GC
	}
	ix.nodes, ix.last = ix.nodes[:0], 0
	ix.kids, ix.marks, ix.mk = ix.kids[:0], ix.marks[:0], nil
	ix.q, ix.qbuf = nil, ix.qbuf[:0] // q may be the caller's: never kept
	for d := range ix.stack {
		ix.stack[d] = ix.stack[d][:0]
	}
	indexPool.Put(ix)
}

// walk is skipValue recording into ix (nil: not recording). From
// minQuoteIndex bytes on it reads the body's quote bitmap: quotes, the
// caller's, when it has the length of b's (the caller vouches that it is
// b's: fingerprint.ComputeQuoted left it), else one it builds first.
func (ix *index) walk(b []byte, i, depth int, quotes []uint64) (int, error) {
	if ix != nil {
		ix.q = nil // the bitmap is of this body or none
		switch {
		case len(b) < minQuoteIndex || noQuoteIndex:
		case len(quotes) == len(b)/64+1:
			ix.q = quotes
		default:
			if q, ok := fingerprint.QuoteIndex(b, ix.qbuf); ok {
				ix.q, ix.qbuf = q, q
			}
		}
	}
	return walkValue(b, i, depth, ix)
}

// WantsQuotes says whether the stage reads a quote bitmap for a body of n
// bytes (Request.Quotes).
func WantsQuotes(n int) bool { return n >= minQuoteIndex && !noQuoteIndex }

// minQuoteIndex is the body size from which walk builds the quote bitmap
// (below it the IndexByte per quote costs less than the bitmap's fixed
// costs; BenchmarkStageWarm).
var minQuoteIndex = 4 << 10

// noQuoteIndex switches the bitmap off (tests and benchmarks compare).
var noQuoteIndex bool

// skipString is the package's skipString; with the quote bitmap built it
// finds the closing quote as the first unescaped quote after b[i], the
// same quote (a backslash run before a quote inside the string starts
// after the opening quote, so the bitmap's "odd run ends right before it"
// is skipString's odd count back to the opening quote), and the same error
// when there is none.
func (ix *index) skipString(b []byte, i int) (int, error) {
	if ix == nil || len(ix.q) == 0 {
		return skipString(b, i)
	}
	q := ix.q
	j := i + 1
	w := j >> 6
	m := q[w] >> uint(j&63)
	if m != 0 {
		return j + bits.TrailingZeros64(m) + 1, nil
	}
	for w++; w < len(q); w++ {
		if q[w] != 0 {
			return w<<6 + bits.TrailingZeros64(q[w]) + 1, nil
		}
	}
	return 0, syntaxErr(i, "unterminated string")
}

// open takes the node slot of a container starting at start.
func (ix *index) open(start int) int {
	ix.nodes = append(ix.nodes, ixNode{start: int32(start)})
	return len(ix.nodes) - 1
}

// close records the children of the container of node slot n, at depth d;
// kids were gathered on the stack of depth d.
func (ix *index) close(d, n int) {
	k := ix.stack[d]
	from := len(ix.kids)
	ix.kids = append(ix.kids, k...)
	ix.nodes[n].from, ix.nodes[n].to = int32(from), int32(len(ix.kids))
	ix.stack[d] = k[:0]
}

// node returns the recorded node of the container starting at start.
func (ix *index) node(start int) (ixNode, bool) {
	ns := ix.nodes
	for _, k := range [2]int{ix.last, ix.last + 1} {
		if k < len(ns) && int(ns[k].start) == start {
			ix.last = k
			return ns[k], true
		}
	}
	lo, hi := 0, len(ns)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if int(ns[m].start) < start {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ns) && int(ns[lo].start) == start {
		ix.last = lo
		return ns[lo], true
	}
	return ixNode{}, false
}

// str notes a string token b[s:e] (quotes included): the marker pattern
// can only end at a string's closing quote (it ends in an unescaped quote
// that follows a letter, and outside strings a quote only opens one), and
// it starts at the opening quote or at an escaped quote inside it, so each
// string holds at most one occurrence, as its last len(mk) bytes.
func (ix *index) str(b []byte, s, e int) {
	if n := len(ix.mk); e-s >= n && b[e-1] == '"' && bytes.Equal(b[e-n:e], ix.mk) {
		ix.marks = append(ix.marks, e-n)
	}
}

// children returns the recorded children of the container at v.
func (ix *index) children(v span) ([]ixKid, bool) {
	if ix == nil || !v.ok() {
		return nil, false
	}
	n, ok := ix.node(v.start)
	if !ok {
		return nil, false
	}
	return ix.kids[n.from:n.to], true
}

// count returns how many times the marker occurs within v (bytes.Count of
// the marker over the span's bytes).
func (ix *index) count(v span) int {
	lo := lowerBound(ix.marks, v.start)
	n := 0
	for k := lo; k < len(ix.marks) && ix.marks[k]+len(ix.mk) <= v.end; k++ {
		n++
	}
	return n
}

func lowerBound(xs []int, x int) int {
	lo, hi := 0, len(xs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if xs[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// members is the package's members over the index when v was recorded.
func (ix *index) members(b []byte, v span, fn func(m member) error) error {
	ks, ok := ix.children(v)
	if !ok || b[v.start] != '{' {
		return members(b, v, fn)
	}
	for _, k := range ks {
		if err := fn(member{key: b[k.key.start+1 : k.key.end-1], whole: span{k.key.start, k.val.end}, val: k.val}); err != nil {
			return err
		}
	}
	return nil
}

// elems is the package's elems over the index when v was recorded.
func (ix *index) elems(b []byte, v span, fn func(i int, e span) error) error {
	ks, ok := ix.children(v)
	if !ok || b[v.start] != '[' {
		return elems(b, v, fn)
	}
	for i, k := range ks {
		if err := fn(i, k.val); err != nil {
			return err
		}
	}
	return nil
}

// field is the package's field over the index (the last member named key).
func (ix *index) field(b []byte, v span, key string) span {
	var out span
	if !v.ok() || b[v.start] != '{' {
		return out
	}
	ks, ok := ix.children(v)
	if !ok {
		return field(b, v, key)
	}
	for _, k := range ks {
		if k.key.end-k.key.start-2 == len(key) && string(b[k.key.start+1:k.key.end-1]) == key {
			out = k.val
		}
	}
	return out
}

// scanObj is the package's scanObjTo over the index.
func (ix *index) scanObj(b []byte, v span, mk string, others bool, buf []span) objInfo {
	var o objInfo
	if others {
		o.others = buf[:0]
	}
	if !v.ok() || b[v.start] != '{' {
		return o
	}
	ks, ok := ix.children(v)
	if !ok {
		return scanObjTo(b, v, mk, others, buf)
	}
	// ix.members' loop, without its second look-up and the call per member.
	for _, k := range ks {
		o.add(member{key: b[k.key.start+1 : k.key.end-1], whole: span{k.key.start, k.val.end}, val: k.val}, mk, others)
	}
	return o
}
