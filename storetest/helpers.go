package storetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// t0 is the fake clock's origin. Its nanoseconds make a backend that keeps
// only micro- or milliseconds fail the boundary tests.
var t0 = time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC)

// at returns t0 + d: the explicit now of one call.
func at(d time.Duration) time.Time { return t0.Add(d) }

var ctx = context.Background()

// jsonResponse is a non-streamed response whose body is not valid UTF-8
// everywhere, so a backend that stores bodies as text fails.
func jsonResponse(tag string) *groundhog.Response {
	body := append([]byte(`{"id":"`+tag+`","choices":[{"message":{"content":"h\u00e9llo\n"}}]}`), 0x00, 0xff, 0xfe, '\r', '\n')
	return &groundhog.Response{
		Status:      200,
		ContentType: "application/json",
		Body:        body,
		Model:       "sim-small-" + tag,
		Usage:       groundhog.Usage{InputTokens: 1234, CachedInputTokens: 1024, CacheWriteTokens: 7, OutputTokens: 56},
		Cost:        4_000_000_000 + groundhog.Money(len(tag)),
	}
}

// streamResponse is a streamed response: events with and without names,
// an empty payload, binary bytes and embedded newlines.
func streamResponse(tag string) *groundhog.Response {
	return &groundhog.Response{
		Status:      200,
		ContentType: "text/event-stream",
		Streamed:    true,
		Events: []groundhog.Event{
			{Name: "message_start", Data: []byte(`{"type":"message_start","id":"` + tag + `"}`)},
			{Data: []byte("line one\nline two\r\n")},
			{Name: "ping", Data: []byte{}},
			{Name: "content_block_delta", Data: []byte{0x00, 0x01, 0xff, 'x'}},
			{Data: []byte("[DONE]")},
		},
		Model: "claude-haiku-4-5",
		Usage: groundhog.Usage{InputTokens: 3000, CacheWriteTokens: 2048, OutputTokens: 9},
		Cost:  groundhog.CostUnknown,
	}
}

// failedResponse is a stored failure.
func failedResponse() *groundhog.Response {
	return &groundhog.Response{
		Status:      502,
		ContentType: "application/json",
		Body:        []byte(`{"error":{"type":"upstream_error","message":"boom"}}`),
		Model:       "sim-large",
	}
}

// responseDiff describes how got differs from want, "" when equal. Bodies
// and event payloads compare byte for byte; nil and empty are the same.
func responseDiff(got, want *groundhog.Response) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil || want == nil:
		return fmt.Sprintf("response = %v, want %v", got, want)
	}
	var d []string
	if got.Status != want.Status {
		d = append(d, fmt.Sprintf("Status %d, want %d", got.Status, want.Status))
	}
	if got.ContentType != want.ContentType {
		d = append(d, fmt.Sprintf("ContentType %q, want %q", got.ContentType, want.ContentType))
	}
	if got.Streamed != want.Streamed {
		d = append(d, fmt.Sprintf("Streamed %v, want %v", got.Streamed, want.Streamed))
	}
	if got.Model != want.Model {
		d = append(d, fmt.Sprintf("Model %q, want %q", got.Model, want.Model))
	}
	if got.Usage != want.Usage {
		d = append(d, fmt.Sprintf("Usage %+v, want %+v", got.Usage, want.Usage))
	}
	if got.Cost != want.Cost {
		d = append(d, fmt.Sprintf("Cost %d, want %d", got.Cost, want.Cost))
	}
	if !bytes.Equal(got.Body, want.Body) {
		d = append(d, fmt.Sprintf("Body %q, want %q", got.Body, want.Body))
	}
	if len(got.Events) != len(want.Events) {
		d = append(d, fmt.Sprintf("%d events, want %d", len(got.Events), len(want.Events)))
	} else {
		for i := range got.Events {
			g, w := got.Events[i], want.Events[i]
			if g.Name != w.Name || !bytes.Equal(g.Data, w.Data) {
				d = append(d, fmt.Sprintf("event %d = {%q %q}, want {%q %q}", i, g.Name, g.Data, w.Name, w.Data))
			}
		}
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

// wantCode fails t unless err carries code.
func wantCode(t *testing.T, err error, code string, what string) {
	t.Helper()
	if got := groundhog.ErrorCode(err); got != code {
		t.Fatalf("%s: error %v (code %q), want code %q", what, err, got, code)
	}
}

// must fails t on err.
func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// timeEq compares instants (location and monotonic reading ignored).
func timeEq(a, b time.Time) bool { return a.Equal(b) }
