package observe_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/observe"
)

// slogLine is what slog itself prints for e at t: the reference the
// hand-encoded line must equal byte for byte.
func slogLine(t time.Time, e *groundhog.LedgerEntry, asJSON bool) []byte {
	var buf bytes.Buffer
	var h slog.Handler = slog.NewTextHandler(&buf, nil)
	if asJSON {
		h = slog.NewJSONHandler(&buf, nil)
	}
	r := slog.NewRecord(t, slog.LevelInfo, "call", 0)
	r.AddAttrs(observe.Attrs(e)...)
	if err := h.Handle(context.Background(), r); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func TestAccessLineEqualsSlog(t *testing.T) {
	base := groundhog.LedgerEntry{
		Tenant: "acme", Operation: "chat.completions", RequestHash: "sha256:0123456789abcdef0123456789abcdef",
		Shape: groundhog.ShapeChat, Model: "gpt-4o-mini", Provider: "openai", Outcome: "hit", Status: 200,
		Usage: groundhog.Usage{InputTokens: 1200, CachedInputTokens: 1024, CacheWriteTokens: 3, OutputTokens: 77},
		Cost:  0, Saved: 1234, Latency: 1234567 * time.Nanosecond, Attempt: 1, InFlight: true, Stream: true,
	}
	odd := []string{"", "two words", `say "hi"`, "line\nbreak", "tab\there", `back\slash`, "a=b", "ctl\x01\x7f",
		"café", "bad\xffutf8", "nbsp\u00a0x", "sep\u2028x", "<html>&amp;", "emoji🦫"}
	var entries []groundhog.LedgerEntry
	entries = append(entries, base)
	for _, s := range odd {
		e := base
		e.Tenant, e.Model, e.Operation = s, s+"!", "op "+s
		entries = append(entries, e)
	}
	for _, lat := range []time.Duration{0, time.Microsecond, 999 * time.Microsecond, 1500 * time.Millisecond, 3 * time.Hour,
		-time.Millisecond, 1999, time.Millisecond, 10*time.Millisecond + 120*time.Microsecond, 412 * time.Microsecond,
		999_999_999 * time.Microsecond, 1_000_000_000 * time.Microsecond, 123456*time.Millisecond + 7*time.Microsecond} {
		e := base
		e.Latency, e.Cost, e.Saved, e.Status = lat, groundhog.CostUnknown, -5, 502
		e.RequestHash, e.InFlight = "short", false
		entries = append(entries, e)
	}
	times := []time.Time{
		time.Date(2026, 12, 5, 14, 3, 4, 0, time.UTC),
		time.Date(2026, 12, 5, 14, 3, 4, 999999999, time.FixedZone("x", 5*3600+1800)),
		time.Now(), // monotonic reading included
		// The same second again, in other locations and at other fractions
		// (a line's second is formatted once and reused).
		time.Date(2026, 12, 5, 14, 3, 4, 100_000_000, time.UTC),
		time.Date(2026, 12, 5, 14, 3, 4, 120_000, time.UTC),
		time.Date(2026, 12, 5, 14, 3, 4, 1, time.UTC),
		time.Date(2026, 12, 5, 14, 3, 4, 100_000_000, time.FixedZone("y", -7*3600)),
		time.Date(2026, 12, 5, 14, 3, 4, 100_000_000, time.UTC).Local(),
		time.Date(2026, 12, 5, 14, 3, 5, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 5, time.UTC),
	}
	var b []byte
	for _, now := range times {
		for i := range entries {
			for _, asJSON := range []bool{false, true} {
				want := slogLine(now, &entries[i], asJSON)
				b = observe.AppendLine(b[:0], now, &entries[i], asJSON)
				if !bytes.Equal(b, want) {
					t.Errorf("json=%v entry %d:\n got %q\nwant %q", asJSON, i, b, want)
				}
			}
		}
	}
}

func benchEntry() groundhog.LedgerEntry {
	return groundhog.LedgerEntry{
		Tenant: "acme", Operation: "chat.completions", RequestHash: "sha256:0123456789abcdef0123456789abcdef",
		Shape: groundhog.ShapeChat, Model: "gpt-4o-mini", Provider: "openai", Outcome: "hit", Status: 200,
		Usage: groundhog.Usage{InputTokens: 1200, OutputTokens: 77}, Saved: 1234,
		Latency: 412 * time.Microsecond, Attempt: 1,
	}
}

// BenchmarkAccessLine is the cost per line of the hand encoder against the
// slog path it replaces, in one run (same entry, same discarded output).
func BenchmarkAccessLine(b *testing.B) {
	e := benchEntry()
	for _, asJSON := range []bool{false, true} {
		name := "text"
		if asJSON {
			name = "json"
		}
		b.Run(name+"/encoder", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = observe.AppendLine(buf[:0], time.Now(), &e, asJSON)
			}
		})
		b.Run(name+"/slog", func(b *testing.B) {
			b.ReportAllocs()
			var h slog.Handler = slog.NewTextHandler(discard{}, nil)
			if asJSON {
				h = slog.NewJSONHandler(discard{}, nil)
			}
			l := slog.New(h)
			for b.Loop() {
				l.LogAttrs(context.Background(), slog.LevelInfo, "call", observe.Attrs(&e)...)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
