// Code copied from the fingerprint package as it was before the fpscan
// rewrite (main at c1ee2ac: scan.go, number.go, fingerprint.go and the trie
// of rules.go), kept only as the reference of FuzzDifferential: the new
// scanner must give the same hash, model, stream flag and error for every
// input. Do not edit it to follow changes of the package: a deliberate
// change of the canonical form bumps the version tag and retires this file.

package fingerprint_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
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
	stream    bool
	typeErr   *scanError // "model" or "stream" has the wrong type; reported if the JSON is valid
	badUTF8   bool       // the input is not valid UTF-8: strings check their spans
	topSorted bool       // the top-level object is sorted in members, not in out
}

func (s *scanner) reset(in []byte) {
	s.in, s.pos, s.depth = in, 0, 0
	s.badUTF8 = !utf8.Valid(in)
	s.out, s.scratch, s.keys, s.members = s.out[:0], s.scratch[:0], s.keys[:0], s.members[:0]
	if cap(s.out) < len(in) {
		// The canonical text is about as long as the input: one
		// allocation instead of a run of doublings (a scanner the pool
		// dropped at a GC would otherwise regrow its buffer every time).
		s.out = make([]byte, 0, len(in)+len(in)/16)
	}
	s.model, s.stream, s.typeErr, s.topSorted = "", false, nil, false
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
		_, err := s.str()
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
		if err := s.value(elem); err != nil {
			return err
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
	sorted, emitted := true, 0

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
		esc, err := s.str()
		if err != nil {
			return err
		}
		// The decoded key is the canonical text itself unless it holds an
		// escape; only then is it decoded into s.keys.
		m := member{keyOff: memStart + 1, keyLen: len(s.out) - memStart - 2, inOff: keyIn}
		if esc {
			m.keyOff, m.inKeys = len(s.keys), true
			s.keys = unescapeCanonical(s.keys, s.out[memStart+1:len(s.out)-1])
			m.keyLen = len(s.keys) - m.keyOff
		}
		key := s.key(&m)
		if len(s.members) > mark && compareKeys(s.key(&s.members[len(s.members)-1]), key) >= 0 {
			sorted = false
		}

		s.skipWS()
		if s.pos >= len(s.in) || s.in[s.pos] != ':' {
			return s.unexpected(s.pos, "after object key")
		}
		s.pos++
		s.out = append(s.out, ':')

		var child *node
		if n != nil {
			child = n.fields[string(key)]
		}
		s.skipWS()
		valIn, valOut := s.pos, len(s.out)
		if err := s.value(child); err != nil {
			return err
		}
		if top {
			s.topField(key, valIn, valOut)
		}

		if child != nil && child.drop {
			if !m.inKeys { // its text in out is about to go
				off := len(s.keys)
				s.keys = append(s.keys, s.key(&m)...)
				m.keyOff, m.inKeys = off, true
			}
			s.out = s.out[:commaAt]
			m.dropped = true
		} else {
			m.start, m.end = memStart, len(s.out)
			emitted++
		}
		s.members = append(s.members, m)

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
	if !sorted {
		if err := s.sortMembers(mark); err != nil {
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
			s.model = string(v)
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
	}
}

func (s *scanner) typeError(off int, msg string) {
	if s.typeErr == nil {
		s.typeErr = &scanError{kind: kindType, msg: msg, off: off}
	}
}

// sortMembers sorts the members of the object whose first member is
// s.members[mark] into canonical key order and rejects duplicate keys.
func (s *scanner) sortMembers(mark int) error {
	ms := s.members[mark:]
	if len(ms) == 2 {
		// The common case, and object already found the pair out of order.
		ms[0], ms[1] = ms[1], ms[0]
	} else if len(ms) <= 16 {
		// Objects are small: insertion sort without a comparison closure.
		for i := 1; i < len(ms); i++ {
			m := ms[i]
			k := s.key(&m)
			j := i
			for ; j > 0 && compareKeys(s.key(&ms[j-1]), k) > 0; j-- {
				ms[j] = ms[j-1]
			}
			ms[j] = m
		}
	} else {
		slices.SortFunc(ms, func(a, b member) int { return compareKeys(s.key(&a), s.key(&b)) })
	}
	for i := 1; i < len(ms); i++ {
		if k := s.key(&ms[i]); bytes.Equal(s.key(&ms[i-1]), k) {
			return s.fail(kindDuplicate, max(ms[i-1].inOff, ms[i].inOff), "duplicate key %s", quoteKey(k))
		}
	}
	return nil
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
			s.scratch = append(s.scratch, s.out[m.start:m.end]...)
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
			copy(s.out[pos:pos+n], s.scratch[from:from+n])
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

// SWAR constants: bytes that end the fast string scan are '"', '\\' and
// control characters.
const (
	lsb   = 0x0101010101010101
	msb   = 0x8080808080808080
	quote = '"' * lsb
	bslsh = '\\' * lsb
	ctl   = 0x20 * lsb
)

// special returns a mask whose lowest set bit lies in the first byte of w
// (little-endian) that is '"', '\\' or < 0x20, or 0 when there is none.
// Higher bits may be spurious (borrows), so only the lowest one is used.
func special(w uint64) uint64 {
	q := w ^ quote
	b := w ^ bslsh
	return (((q - lsb) &^ q) | ((b - lsb) &^ b) | ((w - ctl) &^ w)) & msb
}

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
// included); only \/ and \uXXXX are rewritten. UTF-8 is checked per span
// only when the input as a whole is not valid UTF-8, to place the error.
// esc reports whether the output holds any escape.
func (s *scanner) str() (esc bool, err error) {
	in := s.in
	start := s.pos // first byte not yet copied to out: the opening quote
	i := start + 1
	for {
		for i+8 <= len(in) {
			w := binary.LittleEndian.Uint64(in[i:])
			if m := special(w); m != 0 {
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
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
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
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return s.syntax(start, "number %s out of range", tok)
	}
	s.out = appendNumber(s.out, f)
	return nil
}

// appendNumber appends f as ECMAScript's Number.prototype.toString prints it
// (ECMA-262 Number::toString, the form RFC 8785 §3.2.2.3 prescribes): the
// shortest digits that round-trip, plain notation for 1e-7 < |f| < 1e21,
// exponent notation ("1e+21", "1.5e-7") outside, and "0" for both zeros.
// f must be finite.
func appendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if math.Signbit(f) {
		dst = append(dst, '-')
		f = -f
	}
	// strconv's shortest round-trip digits, in the form "d.ddde±xx".
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	var digits [24]byte
	k := 0
	i := 0
	for ; e[i] != 'e'; i++ {
		if e[i] != '.' {
			digits[k] = e[i]
			k++
		}
	}
	i++ // 'e'
	neg := e[i] == '-'
	exp := 0
	for _, c := range e[i+1:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	// ECMA-262 names: the value is 0.d1d2…dk × 10^n.
	n := exp + 1
	d := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for j := 0; j < n-k; j++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for j := 0; j < -n; j++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// versionTag starts the hash input. Bump it whenever the hash of any
// request would change. v2: Responses "store" joins the key; OpenAI
// prompt_cache_options and prompt_cache_breakpoint markers leave it.
const versionTag = "groundhog-fp-v2"

// Compute validates body as a JSON object and fingerprints it with p.
//
// Errors are *groundhog.Error with code groundhog.EINVALID and a message
// safe to return to the client:
//   - "request body is not valid JSON: <what> at offset N" (malformed JSON,
//     trailing data, invalid UTF-8, a lone surrogate escape, a number beyond
//     the double range);
//   - "request body must be a JSON object";
//   - "request body has duplicate key \"k\" at offset N" (at any depth);
//   - "request body is nested deeper than 256 levels at offset N";
//   - "\"model\" must be a string" (when present);
//   - "\"stream\" must be a boolean" (when present and not null);
//   - "unknown API shape \"x\"" when p.Shape is not a known shape.
//
// A missing model is not an error here: the gateway decides.
func oldCompute(p fingerprint.Params, body []byte) (fingerprint.Result, error) {
	root, ok := roots[p.Shape]
	if !ok {
		return fingerprint.Result{}, groundhog.Errorf(groundhog.EINVALID, "unknown API shape %q", p.Shape)
	}
	s := getScanner(body)
	defer putScanner(s)
	if err := s.document(root, true); err != nil {
		return fingerprint.Result{}, clientError("request body", err.(*scanError))
	}

	// Frame the four short parts and the canonical body's length in one
	// write, then the body.
	h := s.hdr[:0]
	for _, part := range [...]string{versionTag, string(p.Shape), p.Tenant, p.Versions} {
		h = binary.BigEndian.AppendUint64(h, uint64(len(part)))
		h = append(h, part...)
	}
	n := len(s.out)
	if s.topSorted {
		n = s.canonicalLen()
	}
	h = binary.BigEndian.AppendUint64(h, uint64(n))
	s.hdr = h
	s.h.Reset()
	s.h.Write(h)
	s.writeCanonical(s.h)

	var text [len("sha256:") + 2*sha256.Size]byte
	copy(text[:], "sha256:")
	hex.Encode(text[len("sha256:"):], s.h.Sum(s.sum[:0]))
	return fingerprint.Result{Hash: string(text[:]), Model: s.model, Stream: s.stream}, nil
}

// Canonicalize returns the canonical form of any JSON value (RFC 8785 with
// the integer deviation described in the package doc): keys sorted by UTF-16
// code units, numbers normalized, strings re-escaped minimally, no
// whitespace. Nothing is excluded. Errors are *groundhog.Error with code
// groundhog.EINVALID ("invalid JSON: <what> at offset N", "duplicate key…",
// "nested deeper than 256 levels…"). The result is a new slice owned by the
// caller.
func oldCanonicalize(raw []byte) ([]byte, error) {
	s := getScanner(raw)
	defer putScanner(s)
	if err := s.document(nil, false); err != nil {
		return nil, clientError("JSON", err.(*scanError))
	}
	var b bytes.Buffer
	b.Grow(len(s.out))
	s.writeCanonical(&b)
	return b.Bytes(), nil
}

// clientError turns a scanner error into the client-safe *groundhog.Error.
// what names the input ("request body" or "JSON").
func clientError(what string, e *scanError) *groundhog.Error {
	switch e.kind {
	case kindDuplicate:
		return groundhog.Errorf(groundhog.EINVALID, "%s has %s at offset %d", what, e.msg, e.off)
	case kindDepth:
		return groundhog.Errorf(groundhog.EINVALID, "%s is %s at offset %d", what, e.msg, e.off)
	case kindNotObject:
		return groundhog.Errorf(groundhog.EINVALID, "%s must be a JSON object", what)
	case kindType:
		return groundhog.Errorf(groundhog.EINVALID, "%s", e.msg)
	}
	if what == "JSON" {
		return groundhog.Errorf(groundhog.EINVALID, "invalid JSON: %s at offset %d", e.msg, e.off)
	}
	return groundhog.Errorf(groundhog.EINVALID, "%s is not valid JSON: %s at offset %d", what, e.msg, e.off)
}

// pooledScanner is a scanner with its hasher, reused across calls.
type pooledScanner struct {
	scanner
	h   hash.Hash
	hdr []byte            // framing of the short parts
	sum [sha256.Size]byte // digest, kept here so it does not escape per call
}

var pool = sync.Pool{New: func() any { return &pooledScanner{h: sha256.New()} }}

// maxPooled caps the buffer capacity a scanner keeps when it goes back to
// the pool: one rare huge body must not pin its buffers forever.
const maxPooled = 4 << 20

func getScanner(in []byte) *pooledScanner {
	s := pool.Get().(*pooledScanner)
	s.reset(in)
	return s
}

func putScanner(s *pooledScanner) {
	s.in = nil // do not keep the caller's body alive
	if cap(s.out) > maxPooled || cap(s.scratch) > maxPooled {
		return
	}
	pool.Put(s)
}

// node is one position of the exclusion trie: the value found at some path.
type node struct {
	drop   bool             // the member at this path is removed
	fields map[string]*node // rules for members, when the value is an object
	elem   *node            // rules for elements, when the value is an array
}

// roots holds the compiled exclusion trie of each shape.
var roots = func() map[groundhog.Shape]*node {
	m := make(map[groundhog.Shape]*node, 4)
	for shape, fs := range fingerprint.ExcludedPaths() {
		root, err := compile(fs)
		if err != nil {
			panic(fmt.Sprintf("fingerprint: exclusions of %s: %v", shape, err))
		}
		m[shape] = root
	}
	return m
}()

// compile builds the trie of fs.
func compile(fs []string) (*node, error) {
	root := &node{}
	for _, path := range fs {
		f := struct{ Path string }{path}
		cur := root
		for seg := range strings.SplitSeq(f.Path, ".") {
			name, stars := seg, 0
			for strings.HasSuffix(name, "[*]") {
				name, stars = strings.TrimSuffix(name, "[*]"), stars+1
			}
			if name == "" || strings.ContainsAny(name, "[]*") {
				return nil, fmt.Errorf("path %q: bad segment %q", f.Path, seg)
			}
			if cur.drop {
				return nil, fmt.Errorf("path %q: below an excluded path", f.Path)
			}
			if cur.fields == nil {
				cur.fields = map[string]*node{}
			}
			next := cur.fields[name]
			if next == nil {
				next = &node{}
				cur.fields[name] = next
			}
			cur = next
			for range stars {
				if cur.elem == nil {
					cur.elem = &node{}
				}
				cur = cur.elem
			}
		}
		if strings.HasSuffix(f.Path, "]") {
			return nil, fmt.Errorf("path %q: array elements cannot be excluded", f.Path)
		}
		if cur.fields != nil || cur.elem != nil || cur.drop {
			return nil, fmt.Errorf("path %q: excluded twice or above another rule", f.Path)
		}
		cur.drop = true
	}
	return root, nil
}
