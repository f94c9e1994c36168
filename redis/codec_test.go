package redis

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// encodeV1 writes e as an earlier release did (version 1: JSON).
func encodeV1(e *groundhog.CacheEntry) []byte {
	payload, err := json.Marshal(recordV1{Tenant: e.Tenant, Hash: e.RequestHash, Shape: e.Shape, Response: e.Response,
		CreatedAt: unixNano(e.CreatedAt), ExpiresAt: unixNano(e.ExpiresAt)})
	if err != nil {
		panic(err)
	}
	b := append([]byte(nil), magicV1...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// codecEntries are entries of every kind a cache holds: a JSON answer, a
// large one, a stream (named events, an event with no data), an answer of
// unknown cost, zero times.
func codecEntries() map[string]*groundhog.CacheEntry {
	created := time.Date(2026, 12, 8, 1, 2, 3, 456789012, time.UTC)
	mk := func(r groundhog.Response) *groundhog.CacheEntry {
		return &groundhog.CacheEntry{Tenant: "acme", RequestHash: "sha256:" + string(bytes.Repeat([]byte("0f"), 32)),
			Shape: groundhog.ShapeChat, CreatedAt: created, ExpiresAt: created.Add(time.Hour), Response: r}
	}
	var chunks, named []groundhog.Event
	for i := range 200 {
		chunks = append(chunks, groundhog.Event{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok` + strconv.Itoa(i) + `"}}]}`)})
	}
	chunks = append(chunks, groundhog.Event{Data: []byte("[DONE]")})
	named = []groundhog.Event{{Name: "message_start", Data: []byte(`{"type":"message_start"}`)}, {Name: "ping", Data: []byte{}},
		{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)}}
	usage := groundhog.Usage{InputTokens: 1500, CachedInputTokens: 1024, CacheWriteTokens: 300, CacheWrite1hTokens: 200, OutputTokens: 42}
	unknown := mk(groundhog.Response{Status: 200, ContentType: "application/json", Body: []byte(`{}`), Model: "new-model", Cost: groundhog.CostUnknown})
	unknown.Shape, unknown.CreatedAt, unknown.ExpiresAt = groundhog.ShapeMessages, time.Time{}, time.Time{}
	return map[string]*groundhog.CacheEntry{
		"1KB":            mk(groundhog.Response{Status: 200, ContentType: "application/json", Body: bytes.Repeat([]byte(`{"a":"bcdefgh"}`), 64), Model: "sim-small", Usage: usage, Cost: 4_000_000_123}),
		"200KB":          mk(groundhog.Response{Status: 200, ContentType: "application/json", Body: bytes.Repeat([]byte(`{"a":"bcdefgh"}`), 200*64), Model: "sim-small", Usage: usage, Cost: 1}),
		"stream":         mk(groundhog.Response{Status: 200, ContentType: "text/event-stream", Events: chunks, Streamed: true, Model: "sim-small", Usage: usage, Cost: 7}),
		"named events":   mk(groundhog.Response{Status: 201, ContentType: "text/event-stream; charset=utf-8", Events: named, Streamed: true}),
		"unknown cost":   unknown,
		"nothing stored": {Tenant: "t", RequestHash: "h", Response: groundhog.Response{Status: 200}},
	}
}

// Every entry reads back as it was written, field for field; so does one
// written by an earlier release (version 1), which stays a hit.
func TestEntryCodecRoundTrip(t *testing.T) {
	for name, e := range codecEntries() {
		b, err := encode(e)
		if err != nil {
			t.Fatalf("%s: encode: %v", name, err)
		}
		if !bytes.Equal(b[:4], []byte("ghc2")) {
			t.Errorf("%s: stored as %q, want version 2", name, b[:4])
		}
		for version, stored := range map[string][]byte{"2": b, "1": encodeV1(e)} {
			got, err := decode(stored)
			if err != nil {
				t.Fatalf("%s, version %s: decode: %v", name, version, err)
			}
			if !reflect.DeepEqual(got, e) {
				t.Errorf("%s, version %s: read back\n%+v\nwant\n%+v", name, version, got, e)
			}
		}
	}
}

// The binary form stores the body as it is: an entry takes its body's bytes
// and a header, where version 1 took a third more (base64 in JSON).
func TestEntryCodecStoresTheBodyAsItIs(t *testing.T) {
	e := codecEntries()["200KB"]
	b, err := encode(e)
	if err != nil {
		t.Fatal(err)
	}
	if over := len(b) - len(e.Response.Body); over > 256 || !bytes.Contains(b, e.Response.Body) {
		t.Errorf("a %d-byte body is stored in %d bytes (%d over); want the body as it is and at most 256 bytes more", len(e.Response.Body), len(b), over)
	}
	if v1 := len(encodeV1(e)); v1 < len(e.Response.Body)*4/3 {
		t.Errorf("version 1 took %d bytes, want the base64 of the body's %d at least", v1, len(e.Response.Body))
	}
}

// withHeader is payload stored as version m: magic, length, checksum.
func withHeader(m, payload []byte) []byte {
	b := append([]byte(nil), m...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// A payload that is not an entry is refused, never a panic, under either
// version's header; and a version 2 payload that decodes encodes to the
// same bytes (every value has one encoding). The input is the payload, the
// header made for it, so the fuzzer is not stopped by the checksum; the
// header's own checks are TestCorruptEntryIsAMissAndDeleted's.
func FuzzDecodeEntry(f *testing.F) {
	for _, e := range codecEntries() {
		if len(e.Response.Body) > 4096 || len(e.Response.Events) > 10 {
			continue // the seed corpus (testdata) holds small entries
		}
		b, _ := encode(e)
		f.Add(b[headerLen:])
		f.Add(encodeV1(e)[headerLen:])
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if _, err := decode(withHeader(magicV1, payload)); err != nil && err != errCorrupt {
			t.Fatalf("version 1: %v, want errCorrupt", err)
		}
		stored := withHeader(magic, payload)
		e, err := decode(stored)
		if err != nil {
			if err != errCorrupt {
				t.Fatalf("version 2: %v, want errCorrupt", err)
			}
			return
		}
		again, err := encode(e)
		if err != nil {
			t.Fatalf("a decoded entry does not encode: %v", err)
		}
		if !bytes.Equal(again, withHeader(magic, payload)) {
			t.Fatalf("payload %x encodes back to %x", payload, again[headerLen:])
		}
	})
}

// BenchmarkEntryCodec reads and writes the entries of codecEntries; the
// baseline "v1" is the JSON form an earlier release wrote, in the same run.
func BenchmarkEntryCodec(b *testing.B) {
	for _, name := range []string{"1KB", "200KB", "stream"} {
		e := codecEntries()[name]
		v2, _ := encode(e)
		v1 := encodeV1(e)
		for _, c := range []struct {
			version string
			stored  []byte
		}{{"v2", v2}, {"v1", v1}} {
			b.Run("decode/"+name+"/"+c.version, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(e.Response.Body)))
				for b.Loop() {
					if _, err := decode(c.stored); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run("encode/"+name+"/v2", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode(e); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encode/"+name+"/v1", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				encodeV1(e)
			}
		})
	}
}
