package fingerprint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog/internal/jsonwalk"
)

// maxDepth bounds the nesting of arrays and objects. The scanner is
// recursive; the bound keeps a hostile body from costing more than a few
// kilobytes of stack, and no real request comes close to it.
const maxDepth = 256

// Error kinds: each becomes its own client message (see clientError).
const (
	kindSyntax    = iota // not valid JSON
	kindDuplicate        // an object repeats a key
	kindDepth            // nested deeper than maxDepth
	kindType             // top-level "model" or "stream" has the wrong type
	kindNotObject        // valid JSON, but the body must be an object
)

// scanError is what the scanner reports: a kind, a short description and
// the byte offset in the input where the problem was found.
type scanError struct {
	kind int
	msg  string
	off  int
}

func (e *scanError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

// member is one "key":value pair of an object being scanned: where its
// canonical bytes are in scanner.out, and where its decoded key is (for
// sorting and duplicate detection).
type member struct {
	keyOff, keyLen int  // decoded key: in scanner.keys if inKeys, else in scanner.out
	inKeys         bool // the key had escapes (decoded copy) or was dropped
	start, end     int  // canonical `"key":value` in scanner.out (empty when dropped)
	inOff          int  // offset of the key in the input, for error messages
	dropped        bool
}

// key returns the decoded key of m. A key in out stays valid until the
// object is reordered: nested values only rewrite out after it.
func (s *scanner) key(m *member) []byte {
	if m.inKeys {
		return s.keys[m.keyOff : m.keyOff+m.keyLen]
	}
	return s.out[m.keyOff : m.keyOff+m.keyLen]
}

// scanner makes one pass over a JSON text and appends its canonical form to
// out. Scalars are written as they are read; an object whose keys do not
// arrive in canonical order is reordered once it is complete, by copying its
// members through scratch. scanners are pooled: every slice is reused.
type scanner struct {
	in    []byte
	pos   int
	depth int

	out     []byte
	scratch []byte
	keys    []byte   // decoded keys of the objects currently open
	members []member // members of the objects currently open (a stack)

	// Filled by the top-level object when scanning for Compute.
	model     string
	models    [8]string // recent plain model names (internModel)
	nextModel int
	stream    bool
	store     Store
	letterEsc bool   // a \u escape spelled a character of U+0040–U+007F (Result.LetterEscapes)
	watch     *Names // member names to look out for (Params.Names), or nil
	named     uint64 // which of them were seen (Result.Names)
	top       *Names // top-level member names whose values to locate (Params.Top), or nil
	tops      [MaxTop]Span
	typeErr   *scanError // "model" or "stream" has the wrong type; reported if the JSON is valid
	badUTF8   bool       // the input is not valid UTF-8: strings check their spans
	simd      bool       // use the assembly string scan and UTF-8 check (see useSIMD)
	useBits   bool       // bits holds the string index of in (index.go)
	bits      []uint64   // per 64-byte block: unescaped quotes, bytes strings must not hold as they are
	topSorted bool       // the top-level object is sorted in members, not in out
}

func (s *scanner) reset(in []byte, simd bool) {
	s.in, s.pos, s.depth = in, 0, 0
	s.simd = simd
	s.useBits = false
	if s.simd && !noIndex && fused() {
		s.badUTF8 = !s.buildIndexUTF8() // one pass for both
		s.useBits = !s.badUTF8
	} else if s.simd {
		s.badUTF8 = !validUTF8(in)
		if !s.badUTF8 && !noIndex {
			s.buildIndex()
			s.useBits = true
		}
	} else {
		s.badUTF8 = !utf8.Valid(in)
	}
	s.out, s.scratch, s.keys, s.members = s.out[:0], s.scratch[:0], s.keys[:0], s.members[:0]
	if cap(s.out) < len(in) {
		// The canonical text is about as long as the input: one
		// allocation instead of a run of doublings (a scanner the pool
		// dropped at a GC would otherwise regrow its buffer every time).
		s.out = make([]byte, 0, len(in)+len(in)/16)
	}
	s.model, s.stream, s.typeErr, s.topSorted = "", false, nil, false
	s.store, s.letterEsc = StoreUnset, false
	s.watch, s.named = nil, 0
	s.top, s.tops = nil, [MaxTop]Span{}
}

func (s *scanner) fail(kind int, off int, format string, args ...any) *scanError {
	return &scanError{kind: kind, msg: fmt.Sprintf(format, args...), off: off}
}

func (s *scanner) syntax(off int, format string, args ...any) *scanError {
	return s.fail(kindSyntax, off, format, args...)
}

// unexpected describes the byte at off (or the end of input) as a syntax
// error; context says what the scanner was looking for.
func (s *scanner) unexpected(off int, context string) *scanError {
	if off >= len(s.in) {
		return s.syntax(off, "unexpected end of input")
	}
	c := s.in[off]
	if c < 0x20 || c >= 0x7f {
		return s.syntax(off, "unexpected byte 0x%02x %s", c, context)
	}
	return s.syntax(off, "unexpected character %q %s", rune(c), context)
}

// eof reports the end of input where more was expected.
func (s *scanner) eof() *scanError { return s.syntax(len(s.in), "unexpected end of input") }

func (s *scanner) skipWS() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// document scans one complete JSON text: a value surrounded by optional
// whitespace and nothing else. With top set, the value must be an object
// and it is scanned as the request body (rules apply, model and stream are
// recorded); n holds the exclusion rules of the top level.
func (s *scanner) document(n *node, top bool) error {
	s.skipWS()
	start := s.pos
	var err error
	if top && start < len(s.in) && s.in[start] == '{' {
		err = s.object(n, true)
	} else {
		err = s.value(nil)
	}
	if err != nil {
		return err
	}
	s.skipWS()
	if s.pos != len(s.in) {
		return s.unexpected(s.pos, "after top-level value")
	}
	// Type errors are reported only once the whole text proved valid, so
	// malformed input always says "not valid JSON".
	if top && s.in[start] != '{' {
		return s.fail(kindNotObject, start, "not an object")
	}
	if s.typeErr != nil {
		return s.typeErr
	}
	return nil
}

// value scans any JSON value at s.pos (after whitespace).
func (s *scanner) value(n *node) error {
	s.skipWS()
	if s.pos >= len(s.in) {
		return s.eof()
	}
	switch c := s.in[s.pos]; c {
	case '{':
		return s.object(n, false)
	case '[':
		return s.array(n)
	case '"':
		_, err := s.str(false)
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return s.number()
		}
		return s.unexpected(s.pos, "looking for a value")
	}
}

func (s *scanner) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		if s.pos+i >= len(s.in) || s.in[s.pos+i] != lit[i] {
			return s.unexpected(s.pos+i, "in literal "+lit)
		}
	}
	s.pos += len(lit)
	s.out = append(s.out, lit...)
	return nil
}

func (s *scanner) array(n *node) error {
	if s.depth++; s.depth > maxDepth {
		return s.fail(kindDepth, s.pos, "nested deeper than %d levels", maxDepth)
	}
	s.pos++
	s.out = append(s.out, '[')
	var elem *node
	if n != nil {
		elem = n.elem
	}
	s.skipWS()
	if s.pos < len(s.in) && s.in[s.pos] == ']' {
		s.pos++
		s.out = append(s.out, ']')
		s.depth--
		return nil
	}
	for {
		// Objects and strings (the usual elements) without value's
		// whitespace skip and dispatch; it would do the same.
		var err error
		if p := s.pos; p < len(s.in) && s.in[p] == '{' {
			err = s.object(elem, false)
		} else if p < len(s.in) && s.in[p] == '"' {
			_, err = s.str(false)
		} else {
			err = s.value(elem)
		}
		if err != nil {
			return err
		}
		if p := s.pos; p+1 < len(s.in) && s.in[p] == ',' && s.in[p+1] > ' ' {
			s.pos = p + 1 // the next element right after the comma
			s.out = append(s.out, ',')
			continue
		}
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.eof()
		}
		switch s.in[s.pos] {
		case ',':
			s.pos++
			s.out = append(s.out, ',')
		case ']':
			s.pos++
			s.out = append(s.out, ']')
			s.depth--
			return nil
		default:
			return s.unexpected(s.pos, "after array element")
		}
	}
}

// object scans an object, dropping the members n marks as excluded and
// sorting the rest. With top set it also records "model" and "stream".
func (s *scanner) object(n *node, top bool) error {
	if s.depth++; s.depth > maxDepth {
		return s.fail(kindDepth, s.pos, "nested deeper than %d levels", maxDepth)
	}
	s.pos++
	objStart := len(s.out)
	s.out = append(s.out, '{')
	mark, keyMark := len(s.members), len(s.keys)
	emitted := 0
	// The order of the members, kept without branches (which way each
	// comparison goes depends on the keys, so a branch on it would be
	// mispredicted at every change of object shape): bad counts the pairs
	// out of order, lastBad is the second member of the last one, equal
	// is 1 once two keys were equal, later is 1 once a pair other than
	// the first was out of order.
	bad, lastBad, equal, later := 0, 0, 0, 0

	s.skipWS()
	if s.pos < len(s.in) && s.in[s.pos] == '}' {
		s.pos++
		s.out = append(s.out, '}')
		s.depth--
		return nil
	}
	for {
		s.skipWS()
		if s.pos >= len(s.in) || s.in[s.pos] != '"' {
			return s.unexpected(s.pos, "looking for an object key")
		}
		keyIn := s.pos
		commaAt := len(s.out)
		if emitted > 0 {
			s.out = append(s.out, ',')
		}
		memStart := len(s.out)
		esc, err := s.str(true)
		if err != nil {
			return err
		}
		// The decoded key is the canonical text itself unless it holds an
		// escape; only then is it decoded into s.keys.
		//
		// The member is written in place in s.members, field by field: a
		// copy of it built on the stack would be read back by wide loads
		// right after its narrow stores (a store-forwarding stall per
		// member).
		mi := len(s.members)
		s.members = slices.Grow(s.members, 1)[:mi+1]
		m := &s.members[mi]
		key := s.out[memStart+1 : len(s.out)-1]
		m.keyOff, m.keyLen, m.inKeys = memStart+1, len(key), false
		m.start, m.end, m.inOff, m.dropped = 0, 0, keyIn, false
		if esc {
			off := len(s.keys)
			s.keys = unescapeCanonical(s.keys, key)
			key = s.keys[off:]
			m.keyOff, m.keyLen, m.inKeys = off, len(key), true
		}
		if w := s.watch; w != nil && w.lens>>len(key)&1 != 0 { // a shift of 64 or more is 0
			s.named |= w.match(key)
		}
		if mi > mark {
			prev := s.key(&s.members[mi-1])
			var c int
			if len(prev) > 0 && len(key) > 0 && prev[0] != key[0] && (prev[0]|key[0]) < utf8.RuneSelf {
				c = int(prev[0]) - int(key[0]) // the first byte decides (ASCII)
			} else {
				c = compareKeys(prev, key)
			}
			ge := b2i(c >= 0)
			bad += ge
			lastBad += ge * (mi - lastBad)
			equal |= b2i(c == 0)
			later |= ge & b2i(mi != mark+1)
		}

		// The usual `":` right after the key and the value right after it
		// (no whitespace) in one test; else the general steps.
		if p := s.pos; p+1 < len(s.in) && s.in[p] == ':' && s.in[p+1] > ' ' {
			s.pos = p + 1
		} else {
			s.skipWS()
			if s.pos >= len(s.in) || s.in[s.pos] != ':' {
				return s.unexpected(s.pos, "after object key")
			}
			s.pos++
			s.skipWS()
		}
		s.out = append(s.out, ':')

		var child *node
		if n != nil {
			child = n.child(key)
		}
		valIn, valOut := s.pos, len(s.out)
		if valIn < len(s.in) && s.in[valIn] == '"' {
			if _, err := s.str(false); err != nil {
				return err
			}
		} else if err := s.value(child); err != nil {
			return err
		}
		if top {
			s.topField(key, valIn, valOut)
			if t := s.top; t != nil && t.lens>>len(key)&1 != 0 {
				for m := t.match(key); m != 0; m &= m - 1 {
					if i := bits.TrailingZeros64(m); i < MaxTop {
						s.tops[i] = Span{valIn, s.pos}
					}
				}
			}
		}

		m = &s.members[mi] // the value may have grown s.members
		if child != nil && child.drop {
			if !m.inKeys { // its text in out is about to go
				off := len(s.keys)
				s.keys = append(s.keys, s.key(m)...)
				m.keyOff, m.inKeys = off, true
			}
			s.out = s.out[:commaAt]
			m.dropped = true
		} else {
			m.start, m.end = memStart, len(s.out)
			emitted++
		}

		if p := s.pos; p+1 < len(s.in) && s.in[p] == ',' && s.in[p+1] == '"' {
			s.pos = p + 1 // the next key right after the comma
			continue
		}
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.eof()
		}
		if c := s.in[s.pos]; c == ',' {
			s.pos++
			continue
		} else if c != '}' {
			return s.unexpected(s.pos, "after object member")
		}
		s.pos++
		break
	}
	sorted, firstOnly := bad == 0, later == 0
	if !sorted && !top && equal == 0 && firstOnly && s.moveFirst(mark) {
		// done: the usual disorder (a short first member), fixed in place
	} else if !sorted && !top && equal == 0 && bad == 1 && lastBad == len(s.members)-1 && s.moveLast(mark) {
		// done: the other usual one (the last member first), in place
	} else if !sorted {
		if err := s.sortMembers(mark, equal != 0); err != nil {
			return err
		}
		if top {
			// The top-level object is not rewritten: Compute hashes its
			// members from out in the sorted order left in s.members,
			// which saves copying the whole body twice.
			s.topSorted = true
			s.depth--
			return nil
		}
		s.rewrite(objStart, mark)
	}
	s.out = append(s.out, '}')
	s.members, s.keys = s.members[:mark], s.keys[:keyMark]
	s.depth--
	return nil
}

// b2i is 1 for true and 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// topField records the top-level fields Compute reports and checks their
// types. The value starts at valIn in the input and valOut in out.
func (s *scanner) topField(key []byte, valIn, valOut int) {
	switch c := s.in[valIn]; string(key) {
	case "model":
		if c != '"' {
			s.typeError(valIn, `"model" must be a string`)
			return
		}
		if v := s.out[valOut+1 : len(s.out)-1]; bytes.IndexByte(v, '\\') < 0 {
			s.model = s.internModel(v)
		} else {
			s.model = string(unescapeCanonical(nil, v))
		}
	case "stream":
		// null is what some clients send for "not set"; anything else that
		// is not a boolean cannot say how to answer.
		if c != 't' && c != 'f' && c != 'n' {
			s.typeError(valIn, `"stream" must be a boolean`)
			return
		}
		s.stream = c == 't'
	case "store":
		switch c {
		case 't':
			s.store = StoreTrue
		case 'f':
			s.store = StoreFalse
		}
	}
}

// internModel returns v as a string, without allocating when it is one of
// the last few model names this (pooled) scanner returned: a gateway or a
// log sees the same few models over and over.
func (s *scanner) internModel(v []byte) string {
	for _, m := range s.models {
		if m == string(v) {
			return m
		}
	}
	m := string(v)
	s.models[s.nextModel] = m
	s.nextModel = (s.nextModel + 1) % len(s.models)
	return m
}

func (s *scanner) typeError(off int, msg string) {
	if s.typeErr == nil {
		s.typeErr = &scanError{kind: kindType, msg: msg, off: off}
	}
}

// sortMembers sorts the members of the object whose first member is
// s.members[mark] into canonical key order and rejects duplicate keys.
// equal says whether object found two consecutive members with the same
// key.
//
// Duplicates are looked for only where they can be: in a pair, only when
// object found its keys equal; an insertion sort compares each key with
// an equal one in the sorted part if there is one (it stops at the last
// key not greater than it, which is then equal to it).
func (s *scanner) sortMembers(mark int, equal bool) error {
	ms := s.members[mark:]
	dup := equal
	if len(ms) == 2 {
		// The common case, and object already found the pair out of order.
		swapMembers(&ms[0], &ms[1])
	} else if len(ms) <= 16 {
		// Objects are small: insertion sort without a comparison closure.
		for i := 1; i < len(ms); i++ {
			var m member
			copyMember(&m, &ms[i])
			k := s.key(&m)
			j := i
			for ; j > 0; j-- {
				var c int
				if p := s.key(&ms[j-1]); len(p) > 0 && len(k) > 0 && p[0] != k[0] && (p[0]|k[0]) < utf8.RuneSelf {
					c = int(p[0]) - int(k[0]) // the first byte decides (ASCII)
				} else {
					c = compareKeys(p, k)
				}
				if c <= 0 {
					dup = dup || c == 0
					break
				}
				copyMember(&ms[j], &ms[j-1])
			}
			copyMember(&ms[j], &m)
		}
	} else {
		slices.SortFunc(ms, func(a, b member) int { return compareKeys(s.key(&a), s.key(&b)) })
		dup = true // not tracked by the sort: look
	}
	if !dup {
		return nil
	}
	for i := 1; i < len(ms); i++ {
		if k := s.key(&ms[i]); bytes.Equal(s.key(&ms[i-1]), k) {
			return s.fail(kindDuplicate, max(ms[i-1].inOff, ms[i].inOff), "duplicate key %s", quoteKey(k))
		}
	}
	return nil
}

// swapMembers and copyMember move members field by field: object has just
// written the last one field by field, and a struct copy (16-byte loads
// over 8- and 1-byte stores still in flight) would stall on each.
func swapMembers(a, b *member) {
	a.keyOff, b.keyOff = b.keyOff, a.keyOff
	a.keyLen, b.keyLen = b.keyLen, a.keyLen
	a.inKeys, b.inKeys = b.inKeys, a.inKeys
	a.start, b.start = b.start, a.start
	a.end, b.end = b.end, a.end
	a.inOff, b.inOff = b.inOff, a.inOff
	a.dropped, b.dropped = b.dropped, a.dropped
}

func copyMember(dst, src *member) {
	dst.keyOff, dst.keyLen, dst.inKeys = src.keyOff, src.keyLen, src.inKeys
	dst.start, dst.end, dst.inOff, dst.dropped = src.start, src.end, src.inOff, src.dropped
}

// moveFirst puts the first member of the object whose first member is
// s.members[mark] in its place among the others, which are in order and
// all kept, when it is short and its key equals none of theirs: the SDK's
// "role" before "content" (and "tool_calls" or "tool_call_id" after),
// "name" before "arguments". The members it sorts after move left by its
// length, it is written after them, the rest stay. The records in
// s.members are left as they are (only the text matters after this). It
// reports false, doing nothing, in any other case (rewrite's).
func (s *scanner) moveFirst(mark int) bool {
	ms := s.members[mark:]
	a := &ms[0]
	la := a.end - a.start
	if la > 32 || len(ms) > 16 {
		return false
	}
	ka := s.key(a)
	k := 2 // members 1..k-1 sort before a (1 is known to)
	for i := range ms {
		if ms[i].dropped {
			return false
		}
		if i >= 2 && k == i {
			c := compareKeys(s.key(&ms[i]), ka)
			if c == 0 {
				return false // a duplicate: sortMembers reports it
			}
			if c < 0 {
				k = i + 1
			}
		}
	}
	// Members are comma-separated in out: a, then 1..k-1 from ms[1].start.
	var tmp [32]byte
	copyShort(tmp[:la], s.out[a.start:a.end])
	at := a.start
	n := copy(s.out[at:], s.out[ms[1].start:ms[k-1].end])
	s.out[at+n] = ','
	copyShort(s.out[at+n+1:at+n+1+la], tmp[:la])
	return true
}

// moveLast puts the last member of the object whose first member is
// s.members[mark] in its place among the others, which are in order and
// all kept, when those it sorts before are short (at most 64 bytes with
// their commas) and its key equals none of theirs: the SDK's tool call
// {"id", "type", "function"}. Those move right, it moves left once. It
// reports false, doing nothing, in any other case (rewrite's).
func (s *scanner) moveLast(mark int) bool {
	ms := s.members[mark:]
	n := len(ms)
	l := &ms[n-1]
	kl := s.key(l)
	k := -1 // the first member l sorts before
	for i := range ms {
		if ms[i].dropped {
			return false
		}
		if i < n-1 && k < 0 {
			c := compareKeys(s.key(&ms[i]), kl)
			if c == 0 {
				return false // a duplicate: sortMembers reports it
			}
			if c > 0 {
				k = i
			}
		}
	}
	if k < 0 {
		return false
	}
	from, to := ms[k].start, ms[n-2].end
	if to-from > 64 {
		return false
	}
	var tmp [64]byte
	copy(tmp[:to-from], s.out[from:to])
	ll := copy(s.out[from:], s.out[l.start:l.end])
	s.out[from+ll] = ','
	copy(s.out[from+ll+1:l.end], tmp[:to-from])
	return true
}

// rewrite rewrites the members of the object that starts at objStart in
// s.out in the order of s.members[mark:], skipping dropped ones. The
// object's closing brace is not written yet. Keys that live in out must not
// be read afterwards.
//
// The largest member (typically a message's content) is moved once, straight
// to its final place; only the others go through scratch.
func (s *scanner) rewrite(objStart, mark int) {
	ms := s.members[mark:]
	base := objStart + 1
	big, final, pos := -1, 0, base
	for i := range ms {
		m := &ms[i]
		if m.dropped {
			continue
		}
		if pos > base {
			pos++ // comma
		}
		if big < 0 || m.end-m.start > ms[big].end-ms[big].start {
			big, final = i, pos
		}
		pos += m.end - m.start
	}
	s.scratch = s.scratch[:0]
	for i := range ms {
		if m := &ms[i]; !m.dropped && i != big {
			n := len(s.scratch)
			s.scratch = slices.Grow(s.scratch, m.end-m.start)[:n+m.end-m.start]
			copyShort(s.scratch[n:], s.out[m.start:m.end])
		}
	}
	if big >= 0 {
		copy(s.out[final:], s.out[ms[big].start:ms[big].end])
	}
	s.out = s.out[:pos]
	pos, from := base, 0
	for i := range ms {
		m := &ms[i]
		if m.dropped {
			continue
		}
		if pos > base {
			s.out[pos] = ','
			pos++
		}
		n := m.end - m.start
		if i != big {
			copyShort(s.out[pos:pos+n], s.scratch[from:from+n])
			from += n
		}
		pos += n
	}
}

// canonicalLen returns the length of the canonical text of the top-level
// object left unsorted in out (see object).
func (s *scanner) canonicalLen() int {
	n, first := 2, true // braces
	for _, m := range s.members {
		if m.dropped {
			continue
		}
		if !first {
			n++
		}
		first = false
		n += m.end - m.start
	}
	return n
}

// writeCanonical writes the canonical text of the document to w: out
// itself, or for a top-level object left unsorted, its members from out in
// sorted order.
func (s *scanner) writeCanonical(w io.Writer) {
	if !s.topSorted {
		w.Write(s.out)
		return
	}
	s.scratch = append(s.scratch[:0], '{')
	first := true
	for _, m := range s.members {
		if m.dropped {
			continue
		}
		if !first {
			s.scratch = append(s.scratch, ',')
		}
		first = false
		if m.end-m.start < 256 {
			s.scratch = append(s.scratch, s.out[m.start:m.end]...)
			continue
		}
		w.Write(s.scratch)
		s.scratch = s.scratch[:0]
		w.Write(s.out[m.start:m.end])
	}
	s.scratch = append(s.scratch, '}')
	w.Write(s.scratch)
}

// quoteKey quotes a key for an error message, shortened so a hostile key
// cannot blow up the response.
func quoteKey(k []byte) string {
	const limit = 64
	if len(k) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(k[cut]) {
			cut--
		}
		return strconv.Quote(string(k[:cut])) + "…"
	}
	return strconv.Quote(string(k))
}

// compareKeys orders decoded keys as RFC 8785 §3.2.3 says: by their UTF-16
// code units. Byte order of UTF-8 is code point order, which agrees with
// UTF-16 order except between supplementary characters (surrogate pairs,
// 0xD800–0xDBFF first unit) and U+E000–U+FFFF; only the first differing
// rune needs that correction.
func compareKeys(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	return int(utf16Key(ra)) - int(utf16Key(rb))
}

// utf16Key maps r to a value that orders like its UTF-16 encoding: the first
// code unit decides, and two supplementary runes with the same high
// surrogate are ordered by their low ones, which code point order already
// does.
func utf16Key(r rune) rune {
	if r >= 0x10000 {
		return 0xD800<<11 + (r - 0x10000) // above every BMP unit below 0xD800, below 0xE000<<11
	}
	if r >= 0xE000 {
		return r << 11
	}
	return r
}

// SWAR constants of hasBackslash. The fast string scan ends at the bytes
// jsonwalk.Special finds: '"', '\\' and control characters.
const (
	lsb   = 0x0101010101010101
	msb   = 0x8080808080808080
	bslsh = '\\' * lsb
)

// strSafe marks the bytes the byte-at-a-time string loop may copy as they
// are: everything except '"', '\\' and control characters.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// canonicalEscape marks the characters c for which the escape \c is
// already canonical: it is copied with the text around it.
var canonicalEscape = [256]bool{'"': true, '\\': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// str scans a string at s.pos and appends its canonical form: escapes
// decoded, then only '"', '\\' and control characters re-escaped. The
// escapes that already are canonical (\" \\ \b \f \n \r \t) are copied with
// the text around them, so a string is normally one span copy (quotes
// included); only \/ and \uXXXX are rewritten. In simd mode strRun finds
// the end 32 bytes at a time, stepping over canonical escapes itself; the
// eight-byte loop finds it otherwise, and for the tail of the input. UTF-8
// is checked per span only when the input as a whole is not valid UTF-8,
// to place the error. With the string index (index.go) a string with only
// canonical escapes is one span copy found without a scan. With wantEsc,
// esc reports whether the output holds any escape (without it, esc may be
// false all the same).
func (s *scanner) str(wantEsc bool) (esc bool, err error) {
	in := s.in
	start := s.pos // first byte not yet copied to out: the opening quote
	if s.useBits {
		if end, ok := s.strEnd(start); ok {
			s.out = appendSpan(s.out, in, start, end+1)
			s.pos = end + 1
			if wantEsc { // a key: short, so no call
				return hasBackslash(in, start+1, end), nil
			}
			return false, nil
		}
		if s.strIndexed(start) {
			return true, nil // conservative, as below: it had an escape
		}
	}
	i := start + 1
	for {
		if s.simd && len(in)-i >= 32 {
			// Short strings (keys, names) end in their first word.
			if m := jsonwalk.Special(binary.LittleEndian.Uint64(in[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto found
			}
			n, bs := strRun(in[i:])
			i += n
			esc = esc || bs
			if i < len(in) && !strSafe[in[i]] {
				goto found // where strRun stopped, or a special byte after its last block
			}
		}
		for i+8 <= len(in) {
			w := binary.LittleEndian.Uint64(in[i:])
			if m := jsonwalk.Special(w); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto found
			}
			i += 8
		}
		for i < len(in) && strSafe[in[i]] {
			i++
		}
		if i >= len(in) {
			return false, s.syntax(len(in), "unterminated string")
		}
	found:
		c := in[i]
		if c == '\\' && i+1 < len(in) && canonicalEscape[in[i+1]] {
			esc = true
			i += 2
			continue
		}
		if s.badUTF8 {
			if j := start + invalidUTF8At(in[start:i]); j < i {
				return false, s.syntax(j, "invalid UTF-8 in string")
			}
		}
		if c == '"' {
			s.out = append(s.out, in[start:i+1]...)
			s.pos = i + 1
			return esc, nil
		}
		if c < 0x20 {
			return false, s.syntax(i, "control character 0x%02x in string", c)
		}
		s.out = append(s.out, in[start:i]...)
		if i, err = s.escape(i); err != nil {
			return false, err
		}
		esc = true // conservative: \/ or \u00e9 write none, which only costs a decode
		start = i
	}
}

// copyShort is copy(dst, src) for len(dst) == len(src), without a call
// for up to 32 bytes (the short members rewrite moves): overlapping word
// moves that write exactly the span.
func copyShort(dst, src []byte) {
	n := len(src)
	switch {
	case n > 32 || len(dst) != n:
		copy(dst, src)
	case n > 16:
		a, b := binary.LittleEndian.Uint64(src), binary.LittleEndian.Uint64(src[8:])
		c, d := binary.LittleEndian.Uint64(src[n-16:]), binary.LittleEndian.Uint64(src[n-8:])
		binary.LittleEndian.PutUint64(dst, a)
		binary.LittleEndian.PutUint64(dst[8:], b)
		binary.LittleEndian.PutUint64(dst[n-16:], c)
		binary.LittleEndian.PutUint64(dst[n-8:], d)
	case n >= 8:
		a, b := binary.LittleEndian.Uint64(src), binary.LittleEndian.Uint64(src[n-8:])
		binary.LittleEndian.PutUint64(dst, a)
		binary.LittleEndian.PutUint64(dst[n-8:], b)
	default:
		for i := range n {
			dst[i] = src[i]
		}
	}
}

// appendSpan appends in[i:j] to out: up to 16 bytes (keys, short values)
// as two word moves when in and out's spare capacity have room for them
// (the bytes past the span land in that spare capacity, unused), else by
// append.
func appendSpan(out, in []byte, i, j int) []byte {
	if o := len(out); j-i <= 16 && i+16 <= len(in) && o+16 <= cap(out) {
		w := out[o : o+16]
		binary.LittleEndian.PutUint64(w, binary.LittleEndian.Uint64(in[i:]))
		binary.LittleEndian.PutUint64(w[8:], binary.LittleEndian.Uint64(in[i+8:]))
		return out[:o+j-i]
	}
	return append(out, in[i:j]...)
}

// hasBackslash reports whether in[i:j] holds a backslash: one word test
// for up to eight bytes (the usual key), else a loop.
func hasBackslash(in []byte, i, j int) bool {
	if n := j - i; n <= 8 && i+8 <= len(in) {
		w := binary.LittleEndian.Uint64(in[i:]) ^ bslsh
		w |= ^uint64(0) << (8 * n) // bytes past j: not a backslash (0 <<64 is 0 in Go)
		return (w-lsb)&^w&msb != 0 // some byte of w is zero
	}
	for _, c := range in[i:j] {
		if c == '\\' {
			return true
		}
	}
	return false
}

// invalidUTF8At returns the offset of the first invalid sequence in b.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// escape decodes the escape sequence at in[i] ('\\') and appends the
// canonical form of the character; it returns the offset after it.
func (s *scanner) escape(i int) (int, error) {
	in := s.in
	if i+1 >= len(in) {
		return 0, s.syntax(len(in), "unterminated string")
	}
	switch c := in[i+1]; c {
	case '"', '\\':
		s.out = append(s.out, '\\', c)
	case '/':
		s.out = append(s.out, '/')
	case 'b':
		s.out = append(s.out, '\\', 'b')
	case 'f':
		s.out = append(s.out, '\\', 'f')
	case 'n':
		s.out = append(s.out, '\\', 'n')
	case 'r':
		s.out = append(s.out, '\\', 'r')
	case 't':
		s.out = append(s.out, '\\', 't')
	case 'u':
		r, ok := hex4(in, i+2)
		if !ok {
			return 0, s.syntax(i, "invalid \\u escape")
		}
		next := i + 6
		if utf16.IsSurrogate(r) {
			if r >= 0xDC00 {
				return 0, s.syntax(i, "lone surrogate \\u%04x", r)
			}
			r2, ok := rune(0), false
			if next+1 < len(in) && in[next] == '\\' && in[next+1] == 'u' {
				r2, ok = hex4(in, next+2)
			}
			if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
				return 0, s.syntax(i, "lone surrogate \\u%04x", r)
			}
			r = utf16.DecodeRune(r, r2)
			next += 6
		}
		if r >= 0x40 && r < 0x80 {
			s.letterEsc = true
		}
		s.out = appendRune(s.out, r)
		return next, nil
	default:
		return 0, s.syntax(i, "invalid escape \\%c", rune(c))
	}
	return i + 2, nil
}

func hex4(in []byte, i int) (rune, bool) {
	if i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendRune appends r in canonical string form (RFC 8785 §3.2.2.2).
func appendRune(out []byte, r rune) []byte {
	switch {
	case r == '"' || r == '\\':
		return append(out, '\\', byte(r))
	case r < 0x20:
		switch r {
		case '\b':
			return append(out, '\\', 'b')
		case '\f':
			return append(out, '\\', 'f')
		case '\n':
			return append(out, '\\', 'n')
		case '\r':
			return append(out, '\\', 'r')
		case '\t':
			return append(out, '\\', 't')
		}
		const hexDigits = "0123456789abcdef"
		return append(out, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	}
	return utf8.AppendRune(out, r)
}

// unescapeCanonical appends the characters of canonical string content c
// (as written by str, without the quotes) to dst. Canonical content only
// holds the escapes appendRune writes.
func unescapeCanonical(dst, c []byte) []byte {
	for {
		i := bytes.IndexByte(c, '\\')
		if i < 0 {
			return append(dst, c...)
		}
		dst = append(dst, c[:i]...)
		switch e := c[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(c, i+2)
			dst = append(dst, byte(r))
			c = c[i+6:]
			continue
		default: // '"' or '\\'
			dst = append(dst, e)
		}
		c = c[i+2:]
	}
}

// number scans a number (RFC 8259 grammar, strictly: no leading zeros, no
// '+', digits on both sides of '.') and appends its canonical form.
func (s *scanner) number() error {
	in := s.in
	start, i := s.pos, s.pos
	if in[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && in[i] >= '1' && in[i] <= '9':
		digits()
	default:
		return s.unexpected(i, "in number")
	}
	isInt := true
	if i < len(in) && in[i] == '.' {
		i++
		if !digits() {
			return s.unexpected(i, "after decimal point")
		}
		isInt = false
	}
	sawExp := false
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		sawExp = true
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if !digits() {
			return s.unexpected(i, "in exponent")
		}
		isInt = false
	}
	tok := in[start:i]
	s.pos = i
	if isInt {
		// An integer token is kept as written: up to 2^53 that is exactly
		// what ECMAScript prints for its double, and beyond 2^53 a double
		// would merge distinct ids (see the package doc). Only -0 changes.
		if len(tok) == 2 && tok[0] == '-' && tok[1] == '0' {
			tok = tok[1:]
		}
		s.out = append(s.out, tok...)
		return nil
	}
	if !sawExp && plainDecimal(tok) {
		s.out = append(s.out, tok...) // already canonical: no parse, no print
		return nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return s.syntax(start, "number %s out of range", tok)
	}
	s.out = appendNumber(s.out, f)
	return nil
}
