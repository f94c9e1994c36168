package redis

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// A stored entry is a header and a payload: magic (the encoding's version),
// the payload's length (big-endian uint32) and its CRC-32C, then the
// payload. Version 2 (encode) is binary: the body and the events' data are
// stored as they are, and read back without a copy. Version 1, JSON (the
// body and the events' data in base64), is still read: entries written by
// an earlier release stay hits until they expire.
var (
	magic   = []byte("ghc2")
	magicV1 = []byte("ghc1")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// headerLen is the length of magic, payload length and checksum.
const headerLen = 4 + 8

// Flags of a version 2 payload.
const (
	flagStreamed = 1 << iota
	flagsKnown   = flagStreamed
)

// encode returns the stored bytes of e. The payload is, in order:
//
//	uvarint-prefixed strings: tenant, request hash, shape, content type, model
//	varints: status, created and expires (unix ns, 0 = zero time), cost,
//	  input, cached input, cache write, cache write 1h and output tokens
//	flags byte (flagStreamed)
//	uvarint-prefixed body
//	uvarint event count, then per event its uvarint-prefixed name and data
//
// An empty body and no events are stored as lengths 0, and read back as
// nil (as version 1 did).
func encode(e *groundhog.CacheEntry) ([]byte, error) {
	r := &e.Response
	n := headerLen + 16*binary.MaxVarintLen64 + len(e.Tenant) + len(e.RequestHash) + len(e.Shape) +
		len(r.ContentType) + len(r.Model) + len(r.Body)
	for _, ev := range r.Events {
		n += 2*binary.MaxVarintLen64 + len(ev.Name) + len(ev.Data)
	}
	b := make([]byte, headerLen, n)
	copy(b, magic)
	for _, s := range []string{e.Tenant, e.RequestHash, string(e.Shape), r.ContentType, r.Model} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	u := r.Usage
	for _, v := range []int64{int64(r.Status), unixNano(e.CreatedAt), unixNano(e.ExpiresAt), int64(r.Cost),
		u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.CacheWrite1hTokens, u.OutputTokens} {
		b = binary.AppendVarint(b, v)
	}
	var flags byte
	if r.Streamed {
		flags |= flagStreamed
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(r.Body)))
	b = append(b, r.Body...)
	b = binary.AppendUvarint(b, uint64(len(r.Events)))
	for _, ev := range r.Events {
		b = binary.AppendUvarint(b, uint64(len(ev.Name)))
		b = append(b, ev.Name...)
		b = binary.AppendUvarint(b, uint64(len(ev.Data)))
		b = append(b, ev.Data...)
	}
	payload := b[headerLen:]
	if uint64(len(payload)) > 1<<32-1 {
		return nil, fmt.Errorf("redis: encode entry: %d bytes is over the format's limit", len(payload))
	}
	binary.BigEndian.PutUint32(b[4:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[8:], crc32.Checksum(payload, castagnoli))
	return b, nil
}

var errCorrupt = errors.New("corrupt cache entry")

// decode parses bytes written by encode (or by version 1); anything else is
// errCorrupt. The body and the events' data of the entry share b, which
// the caller gives up (each slice capped, so an append cannot overwrite
// its neighbour).
func decode(b []byte) (*groundhog.CacheEntry, error) {
	if len(b) < headerLen {
		return nil, errCorrupt
	}
	n := binary.BigEndian.Uint32(b[4:])
	sum := binary.BigEndian.Uint32(b[8:])
	payload := b[headerLen:]
	if uint64(len(payload)) != uint64(n) || crc32.Checksum(payload, castagnoli) != sum {
		return nil, errCorrupt
	}
	switch {
	case bytes.Equal(b[:4], magic):
		return decodeV2(payload)
	case bytes.Equal(b[:4], magicV1):
		return decodeV1(payload)
	}
	return nil, errCorrupt
}

// reader reads a version 2 payload; its first error sticks.
type reader struct {
	b   []byte
	i   int
	bad bool
}

// uvarint reads a minimal uvarint (every value has one encoding).
func (r *reader) uvarint() uint64 {
	v, k := binary.Uvarint(r.b[r.i:])
	if k <= 0 || (k > 1 && r.b[r.i+k-1] == 0) {
		r.bad = true
		return 0
	}
	r.i += k
	return v
}

// varint reads a minimal zig-zag varint.
func (r *reader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

// bytes reads a uvarint-prefixed byte string, sharing r.b (capped).
func (r *reader) bytes() []byte {
	l := r.uvarint()
	if r.bad || l > uint64(len(r.b)-r.i) {
		r.bad = true
		return nil
	}
	s := r.b[r.i : r.i+int(l) : r.i+int(l)]
	r.i += int(l)
	return s
}

func (r *reader) byte() byte {
	if r.bad || r.i >= len(r.b) {
		r.bad = true
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func decodeV2(payload []byte) (*groundhog.CacheEntry, error) {
	r := &reader{b: payload}
	tenant, hash, shape, ctype, model := string(r.bytes()), string(r.bytes()), string(r.bytes()), string(r.bytes()), string(r.bytes())
	var v [9]int64
	for i := range v {
		v[i] = r.varint()
	}
	flags := r.byte()
	body := r.bytes()
	count := r.uvarint()
	if r.bad || flags&^flagsKnown != 0 || count > uint64(len(payload)-r.i)/2 {
		return nil, errCorrupt // every event takes at least two bytes
	}
	var evs []groundhog.Event
	if count > 0 {
		evs = make([]groundhog.Event, count)
		for i := range evs {
			name := r.bytes()
			evs[i] = groundhog.Event{Name: string(name), Data: r.bytes()}
		}
	}
	if r.bad || r.i != len(payload) {
		return nil, errCorrupt
	}
	if len(body) == 0 {
		body = nil
	}
	return &groundhog.CacheEntry{Tenant: tenant, RequestHash: hash, Shape: groundhog.Shape(shape),
		CreatedAt: fromUnixNano(v[1]), ExpiresAt: fromUnixNano(v[2]),
		Response: groundhog.Response{Status: int(v[0]), ContentType: ctype, Body: body, Events: evs,
			Streamed: flags&flagStreamed != 0, Model: model, Cost: groundhog.Money(v[3]),
			Usage: groundhog.Usage{InputTokens: v[4], CachedInputTokens: v[5], CacheWriteTokens: v[6],
				CacheWrite1hTokens: v[7], OutputTokens: v[8]}}}, nil
}

// recordV1 is the JSON form of a stored entry in version 1. Times are unix
// nanoseconds so that they round-trip exactly (0 = zero time).
type recordV1 struct {
	Tenant    string             `json:"t"`
	Hash      string             `json:"h"`
	Shape     groundhog.Shape    `json:"s"`
	Response  groundhog.Response `json:"r"`
	CreatedAt int64              `json:"c"`
	ExpiresAt int64              `json:"e"`
}

func decodeV1(payload []byte) (*groundhog.CacheEntry, error) {
	var r recordV1
	if err := json.Unmarshal(payload, &r); err != nil {
		return nil, errCorrupt
	}
	return &groundhog.CacheEntry{Tenant: r.Tenant, RequestHash: r.Hash, Shape: r.Shape, Response: r.Response,
		CreatedAt: fromUnixNano(r.CreatedAt), ExpiresAt: fromUnixNano(r.ExpiresAt)}, nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
