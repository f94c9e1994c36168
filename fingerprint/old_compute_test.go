// Code copied from the fingerprint package as it was before the fpscan
// work (main at c1ee2ac: scan.go, number.go, fingerprint.go and the trie of
// rules.go; this file: number.go, Compute/Canonicalize and the rule trie; old_scan_test.go: scan.go), kept only as the reference of FuzzDifferential: the
// package must give the same hash, model, stream flag and error for every
// input. Do not edit it to follow changes of the package: a deliberate
// change of the canonical form bumps the version tag and retires these
// files.

package fingerprint_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

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
