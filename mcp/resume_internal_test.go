package mcp

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time { return c.now }

// The retained events never exceed max_bytes: past it the oldest streams
// are dropped (and no longer resumable), a stream larger than the bound
// alone included; an ended stream expires after the retention; a running
// one does not.
func TestStreamStoreBounds(t *testing.T) {
	clock := &stepClock{now: time.Unix(1_700_000_000, 0)}
	const maxBytes = 100
	s := newStreamStore(clock, time.Minute, maxBytes)
	ev := []byte(strings.Repeat("x", 30))
	var sts []*stream
	for i := range 5 {
		st := s.open("t", "sess")
		sts = append(sts, st)
		s.append(st, ev, false)
		s.append(st, ev, i != 4) // the last stream keeps running
		if s.bytes > maxBytes {
			t.Fatalf("after stream %d: %d bytes kept, bound %d", i, s.bytes, maxBytes)
		}
	}
	// 60 bytes a stream, 100 at most: only the newest is kept.
	for i, st := range sts[:4] {
		if _, _, _, _, _, err := s.after("t", "sess", st.eventID(0)); !errors.Is(err, errEventUnknown) {
			t.Fatalf("stream %d: %v, want it dropped", i, err)
		}
	}
	live := sts[4]
	_, evs, first, done, _, err := s.after("t", "sess", live.eventID(0))
	if err != nil || len(evs) != 2 || first != 1 || done {
		t.Fatalf("newest stream: %d events from %d, done %v, %v", len(evs), first, done, err)
	}
	if _, _, _, _, _, err := s.after("t", "other", live.eventID(0)); !errors.Is(err, errEventUnknown) {
		t.Fatalf("another session: %v", err)
	}

	// A running stream outlives the retention; once ended, it expires.
	clock.now = clock.now.Add(time.Hour)
	if _, _, _, _, _, err := s.after("t", "sess", live.eventID(1)); err != nil {
		t.Fatalf("running stream: %v", err)
	}
	s.append(live, ev, true)
	clock.now = clock.now.Add(time.Minute - time.Nanosecond)
	if _, evs, _, done, _, err := s.after("t", "sess", live.eventID(2)); err != nil || len(evs) != 1 || !done {
		t.Fatalf("within the retention: %d events, done %v, %v", len(evs), done, err)
	}
	clock.now = clock.now.Add(time.Nanosecond)
	if _, _, _, _, _, err := s.after("t", "sess", live.eventID(2)); !errors.Is(err, errEventUnknown) {
		t.Fatalf("past the retention: %v", err)
	}
	if s.bytes != 0 || s.order.Len() != 0 {
		t.Fatalf("%d bytes in %d streams left", s.bytes, s.order.Len())
	}

	// One stream bigger than the bound is dropped as it grows.
	big := s.open("t", "sess")
	for range 4 {
		s.append(big, ev, false)
	}
	if s.bytes > maxBytes || !big.purged || len(big.events) != 0 {
		t.Fatalf("oversized stream: %d bytes kept, purged %v, %d events held", s.bytes, big.purged, len(big.events))
	}
}

func TestParseEventID(t *testing.T) {
	st := &stream{id: strings.Repeat("0f", 12)}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{st.eventID(0), true}, {st.eventID(12), true},
		{"gh-" + st.id + "-01", false}, {"gh-" + st.id + "--1", false}, {"gh-" + st.id, false},
		{"gh-xyz-1", false}, {st.id + "-1", false}, {"", false},
	} {
		id, n, ok := parseEventID(tc.in)
		if ok != tc.ok || ok && (id != st.id || st.eventID(n) != tc.in) {
			t.Errorf("parseEventID(%q) = %q, %d, %v", tc.in, id, n, ok)
		}
	}
}
