package bedrock

import (
	"bytes"
	"errors"
	"io"
	"testing"

	groundhog "github.com/groundhog-ai/groundhog"
)

// TestChunkRoundTrip: native Anthropic events written as chunk messages
// read back as the same events; an Anthropic error event is written as an
// exception, and a chunk whose bytes are not a typed event is malformed.
func TestChunkRoundTrip(t *testing.T) {
	events := []groundhog.Event{
		{Name: "message_start", Data: []byte(`{"type":"message_start","message":{"usage":{"input_tokens":3}}}`)},
		{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hé\u2028"}}`)},
		{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)},
	}
	var buf []byte
	for _, ev := range events {
		buf = AppendChunk(buf, ev)
	}
	buf = AppendChunk(buf, groundhog.Event{Name: "error", Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`)})
	r := NewChunkReader(bytes.NewReader(buf))
	for i, want := range events {
		got, err := r.Next()
		if err != nil || got.Name != want.Name || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("event %d: %q %s (%v), want %q %s", i, got.Name, got.Data, err, want.Name, want.Data)
		}
	}
	ex, err := r.Next()
	if err != nil || ex.Name != ExceptionPrefix+"internalServerException" || !bytes.Contains(ex.Data, []byte("busy")) {
		t.Fatalf("error event read back as %q %s (%v)", ex.Name, ex.Data, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
	bad := AppendEvent(nil, groundhog.Event{Name: EventChunk, Data: []byte(`{"bytes":"bm90IGpzb24="}`)})
	if _, err := NewChunkReader(bytes.NewReader(bad)).Next(); !errors.Is(err, ErrMalformedStream) {
		t.Fatalf("chunk of non-JSON bytes: %v, want ErrMalformedStream", err)
	}
}

// TestInvokeBodies: only a native Anthropic body for Bedrock is modelled;
// its fingerprint body carries the path's model id, and the Messages body
// the simulator reads has model and stream from the path.
func TestInvokeBodies(t *testing.T) {
	body := []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[]}`)
	if !IsAnthropicBody(body) || IsAnthropicBody([]byte(`{"inputText":"hi"}`)) || IsAnthropicBody([]byte(`{"anthropic_version":"2023-06-01"}`)) {
		t.Fatal("IsAnthropicBody misreads a body")
	}
	fp, err := InvokeFingerprintBody("us.anthropic.claude-haiku-4-5-20251001-v1:0", body)
	if err != nil || !bytes.Contains(fp, []byte(`"model":"us.anthropic.claude-haiku-4-5-20251001-v1:0"`)) {
		t.Fatalf("fingerprint body %s (%v)", fp, err)
	}
	mb, err := MessagesBody("m", true, body)
	if err != nil || bytes.Contains(mb, []byte("anthropic_version")) || !bytes.Contains(mb, []byte(`"stream":true`)) {
		t.Fatalf("messages body %s (%v)", mb, err)
	}
	if _, err := MessagesBody("m", false, []byte(`{"max_tokens":5}`)); err == nil {
		t.Fatal("a body without anthropic_version was accepted")
	}
	if id, stream, ok := ParseInvokePath("/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/invoke-with-response-stream"); !ok || !stream || id != "us.anthropic.claude-haiku-4-5-20251001-v1:0" {
		t.Fatalf("ParseInvokePath: %q %v %v", id, stream, ok)
	}
	if InvokePath("a:b/c", false) != "/model/a%3Ab%2Fc/invoke" {
		t.Fatalf("InvokePath %s", InvokePath("a:b/c", false))
	}
}

// FuzzChunkReader: any bytes read as an invoke stream never panic, and a
// chunk event read back re-encodes to an equal event.
func FuzzChunkReader(f *testing.F) {
	f.Add(AppendChunk(nil, groundhog.Event{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)}))
	f.Add(AppendEvent(nil, groundhog.Event{Name: EventChunk, Data: []byte(`{"bytes":"e30="}`)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewChunkReader(bytes.NewReader(b))
		for range 64 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if IsException(ev) || ev.Name == "error" { // an Anthropic error is sent as an exception
				continue
			}
			again, err := NewChunkReader(bytes.NewReader(AppendChunk(nil, ev))).Next()
			if err != nil || again.Name != ev.Name || !bytes.Equal(again.Data, ev.Data) {
				t.Fatalf("re-encoded %q %s read back as %q %s (%v)", ev.Name, ev.Data, again.Name, again.Data, err)
			}
		}
	})
}
