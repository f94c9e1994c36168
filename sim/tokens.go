package sim

import (
	"unicode"
	"unicode/utf8"
)

// MessageOverhead is the number of tokens every message (and every tool
// definition) costs on top of its content: the role and framing markers.
const MessageOverhead = 4

// CountTokens returns the sim's token count of text: each whitespace-separated
// word costs one token per started 4 bytes of UTF-8 (so at least one);
// whitespace itself is free. Prompts and outputs are counted with the same
// function.
func CountTokens(text string) int {
	n, start := 0, -1
	for i, r := range text {
		if unicode.IsSpace(r) {
			if start >= 0 {
				n += (i - start + 3) / 4
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		n += (len(text) - start + 3) / 4
	}
	return n
}

// tokenStream turns a prompt into the sim's token sequence without storing
// it: it counts the tokens and keeps a running digest of all of them, so the
// digest at any position identifies the whole prefix up to there. Tokens are
// the 4-byte pieces of each word (the CountTokens rule) plus framing markers.
type tokenStream struct {
	hash  uint64
	n     int
	every int           // if > 0, record a point every `every` tokens
	marks []PrefixPoint // the recorded points, in increasing order
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func newTokenStream(every int) *tokenStream {
	return &tokenStream{hash: fnvOffset, every: every}
}

// token appends one token. A separator byte keeps "ab"+"c" and "a"+"bc" apart.
func (t *tokenStream) token(b string) {
	h := t.hash
	for i := 0; i < len(b); i++ {
		h ^= uint64(b[i])
		h *= fnvPrime
	}
	h ^= 0xff
	h *= fnvPrime
	t.hash = h
	t.n++
	if t.every > 0 && t.n%t.every == 0 {
		t.marks = append(t.marks, PrefixPoint{Hash: h, Tokens: t.n})
	}
}

// text appends the tokens of s.
func (t *tokenStream) text(s string) {
	start := -1
	word := func(w string) {
		for len(w) > 4 {
			t.token(w[:4])
			w = w[4:]
		}
		t.token(w)
	}
	for i, r := range s {
		if r < utf8.RuneSelf && r != ' ' && r != '\n' && r != '\t' && r != '\r' && r != '\v' && r != '\f' {
			if start < 0 {
				start = i
			}
			continue
		}
		if unicode.IsSpace(r) {
			if start >= 0 {
				word(s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		word(s[start:])
	}
}

// begin and end frame a message: three marker tokens before its content and
// one after, MessageOverhead in all. Markers start with a NUL byte so that
// they differ from the word tokens of ordinary text.
func (t *tokenStream) begin(role string) {
	t.token("\x00start")
	t.token("\x00" + role)
	t.token("\x00message")
}

func (t *tokenStream) end() { t.token("\x00end") }

// point returns the prefix point at the current position.
func (t *tokenStream) point() PrefixPoint { return PrefixPoint{Hash: t.hash, Tokens: t.n} }

// salt mixes s into the digest without adding a token: every later point
// then depends on s, earlier ones do not. It keys a cache level on settings
// that are not prompt text (Anthropic's tool_choice and thinking).
func (t *tokenStream) salt(s string) {
	if s == "" {
		return
	}
	h := t.hash ^ 0xfe
	h *= fnvPrime
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	t.hash = h
}
