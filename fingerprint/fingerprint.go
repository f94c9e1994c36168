// Package fingerprint computes the request hash of groundhog: SHA-256 over
// the canonical JSON of the inputs that determine a provider's output, so
// two requests that ask the same question get the same key however their
// clients spelled them, and requests that could be answered differently
// never share one.
//
// # What is hashed
//
// The hash input is a length-framed sequence of five parts (each part is
// its length as a big-endian uint64 followed by its bytes, so no two
// different inputs frame to the same bytes):
//
//	"groundhog-fp-v2", shape, tenant, versions, canonical body
//
// The canonical body is the request body in RFC 8785 form (below) with the
// excluded fields of its shape removed (rules.go lists them, each with its
// reason: stream, user, metadata, store, prompt-cache keys and breakpoints,
// request ids). Every other field is hashed, also fields this package does
// not know: missing a hit is cheap, serving an answer to a different
// question is not. Arrays keep their order (tool order is what the model
// reads); object keys are sorted.
//
// Changing anything here — the framing, the exclusion lists, the canonical
// form — changes hashes and so invalidates every cache entry, operation
// record match and ledger repeat count. Such a change must bump the version
// tag; testdata/golden/hashes.jsonl pins known hashes so it cannot happen by
// accident.
//
// # Canonical JSON
//
// RFC 8785 (JCS): no insignificant whitespace; object members sorted by the
// UTF-16 code units of their keys; strings with escapes decoded and only
// '"', '\\' and control characters re-escaped (\b \f \n \r \t, else \u00xx);
// numbers printed as ECMAScript prints the double they denote (1.0, 1e0 and
// 10E-1 are all 1; 1e21 is 1e+21; -0 is 0).
//
// One deliberate deviation: a number written as an integer (no fraction, no
// exponent) is kept exactly as written instead of being rounded to a
// double. Up to 2^53 that is the same thing; beyond it, rounding would give
// two different big ids (seeds, user ids) the same key. So 9007199254740993
// and 9007199254740992 hash differently, while 9007199254740993.0 — a
// fraction, hence a double — equals 9007199254740992.
//
// The input must be strict RFC 8259 JSON in valid UTF-8. Lone surrogate
// escapes, invalid UTF-8, duplicate object keys, numbers beyond the double
// range and nesting deeper than 256 are errors, not silently repaired:
// a repair would make different bodies hash the same.
//
// # Cost
//
// No decoding into maps: one UTF-8 check of the whole body, then one scan
// that writes the canonical text into a pooled buffer. Strings are copied
// as spans, escapes that already are canonical (\" \\ \n …) included; only
// objects whose keys arrive out of order are rewritten — the usual SDK
// disorders (a short first member such as "role" that sorts later, a tool
// call's "function" last) in place with one move, others with the largest
// member moved once; the top-level object is never rewritten but hashed
// member by member in sorted order. On amd64 with AVX2, from 512-byte
// bodies on, the UTF-8 check is assembly and a string index (index.go) is
// built first, 64 bytes at a time: both in one pass, with AVX2
// (indexutf8_amd64.s) or AVX-512BW where the CPU has that
// (indexutf8avx512_amd64.s). The scan then finds each string's end and
// whether it needs rewriting from two bitmaps, without a loop or a call per
// string. Elsewhere the check is utf8.Valid and strings are searched eight
// bytes at a time. For a 200 KB agent transcript
// (fingerprint_bench_test.go) that is about 1.75–1.8× sha256.Sum256 over
// the same bytes in thread CPU time with AVX-512 (up to 2.4× on a busy
// machine), and 2.1–2.9× with AVX2 only; what is left is SHA-256 itself
// (≈ 55 % of it) and fixed work per event of the scan (tokens, member
// reorders, rewritten escapes); docs/design/0001-canonical-fingerprint.md
// says what was tried and why.
package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"sync"

	"github.com/groundhog-ai/groundhog"
)

// versionTag starts the hash input. Bump it whenever the hash of any
// request would change. v2: Responses "store" joins the key; OpenAI
// prompt_cache_options and prompt_cache_breakpoint markers leave it.
const versionTag = "groundhog-fp-v2"

// Params are the non-body inputs of a fingerprint.
type Params struct {
	Shape groundhog.Shape // chat | responses | embeddings | messages: picks the exclusion rules and joins the hash
	// Tenant is the tenant scope: it joins the hash so tenants never share
	// keys.
	Tenant string
	// Versions are the declared versions: the Groundhog-Cache-Version header
	// joined with per-operation config versions, e.g.
	// "schema=3;preprocess=2". They are hashed as given, so the caller must
	// build the string deterministically.
	Versions string
	// Names, when not nil, are member names to look out for on the pass:
	// Result.Names says which the body holds. They do not join the hash.
	Names *Names
	// Top, when not nil, are top-level member names whose values the pass
	// locates: Result.Top says where they are in the body, so a caller
	// that needs a few top-level values does not read the body again. At
	// most MaxTop names; later ones are never located. They do not join
	// the hash.
	Top *Names
}

// MaxTop is the number of names of Params.Top the pass locates.
const MaxTop = 8

// Span is where a value is in the body: body[Start:End], exactly as sent.
// The zero Span is no value.
type Span struct{ Start, End int }

// Result is what one pass over the body learns.
type Result struct {
	Hash   string // "sha256:<64 lowercase hex>"
	Model  string // the "model" field, decoded ("" if absent)
	Stream bool   // the "stream" field was true
	Store  Store  // the top-level "store" field
	// LetterEscapes is true when a string, key or value, spells a
	// character of U+0040–U+007F (the letters and '_' among them) as a
	// \u escape: only then can a member name spell a word without
	// holding its bytes ("file\u005fid" is file_id). Escapes of other
	// characters (< > & as Go's encoder writes them, non-ASCII text as
	// Python's writes it) do not count.
	LetterEscapes bool
	// Names has bit i set when the body holds a member named the i-th of
	// Params.Names, at any depth, its key decoded (an escaped spelling is
	// the same name). String values never count.
	Names uint64
	// Top[i] is where the value of the top-level member named the i-th of
	// Params.Top (its key decoded) is in the body; the zero Span when the
	// body has no such member. The places are the body's: a Memo answers
	// only for a body equal byte for byte to the one they were found in.
	Top [MaxTop]Span
}

// Store is the top-level "store" member of a body as sent: whether the
// provider keeps what the call makes is its own default unless it is a
// boolean.
type Store uint8

const (
	StoreUnset Store = iota // missing, null, or not a boolean
	StoreFalse
	StoreTrue
)

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
func Compute(p Params, body []byte) (Result, error) {
	return computeQuoted(p, body, useSIMD && len(body) >= minSIMD, nil)
}

// ComputeQuoted is Compute that also leaves in *quotes the body's
// unescaped-quote bitmap, QuoteIndex(body), when the pass built it on its
// way (a body of 512 bytes or more, in valid UTF-8, where the assembly
// runs): a later walker of the same bytes need not build it again. Else,
// and on an error, *quotes is left empty. Its array is reused when it has
// the room.
func ComputeQuoted(p Params, body []byte, quotes *[]uint64) (Result, error) {
	return computeQuoted(p, body, useSIMD && len(body) >= minSIMD, quotes)
}

// compute is Compute, with the assembly string scan and UTF-8 check or
// without (the tests compare both).
func compute(p Params, body []byte, simd bool) (Result, error) {
	return computeQuoted(p, body, simd, nil)
}

func computeQuoted(p Params, body []byte, simd bool, quotes *[]uint64) (Result, error) {
	if quotes != nil {
		*quotes = (*quotes)[:0]
	}
	root, ok := roots[p.Shape]
	if !ok {
		return Result{}, groundhog.Errorf(groundhog.EINVALID, "unknown API shape %q", p.Shape)
	}
	s := getScanner(body, simd)
	defer putScanner(s)
	s.watch, s.top = p.Names, p.Top
	if err := s.document(root, true); err != nil {
		return Result{}, clientError("request body", err.(*scanError))
	}
	if quotes != nil && s.useBits {
		*quotes = quoteWords(*quotes, s.bits)
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
	return Result{Hash: string(text[:]), Model: s.model, Stream: s.stream, Store: s.store, LetterEscapes: s.letterEsc, Names: s.named, Top: s.tops}, nil
}

// Canonicalize returns the canonical form of any JSON value (RFC 8785 with
// the integer deviation described in the package doc): keys sorted by UTF-16
// code units, numbers normalized, strings re-escaped minimally, no
// whitespace. Nothing is excluded. Errors are *groundhog.Error with code
// groundhog.EINVALID ("invalid JSON: <what> at offset N", "duplicate key…",
// "nested deeper than 256 levels…"). The result is a new slice owned by the
// caller.
func Canonicalize(raw []byte) ([]byte, error) {
	return canonicalize(raw, useSIMD && len(raw) >= minSIMD)
}

func canonicalize(raw []byte, simd bool) ([]byte, error) {
	s := getScanner(raw, simd)
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

func getScanner(in []byte, simd bool) *pooledScanner {
	s := pool.Get().(*pooledScanner)
	s.reset(in, simd)
	return s
}

func putScanner(s *pooledScanner) {
	s.in = nil // do not keep the caller's body alive
	if cap(s.out) > maxPooled || cap(s.scratch) > maxPooled || cap(s.bits) > maxPooled/8 {
		return
	}
	pool.Put(s)
}
