package ledger

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMappedSegmentLeftByKillReplays: the active segment of a killed process
// (copied as it is in the page cache: its records, then the zero-filled
// preallocated tail) replays every row, cleanly (not kept aside as damaged).
func TestMappedSegmentLeftByKillReplays(t *testing.T) {
	db := openDB(t)
	dir := t.TempDir()
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	for i := range 10 {
		if err := w.Record(testEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, segmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" {
		w.mu.Lock()
		used, mapped := w.active.size, len(w.active.m)
		w.mu.Unlock()
		if mapped == 0 {
			t.Skip("the journal cannot be mapped on this filesystem (no fallocate?)")
		}
		if len(b) != mapped || int64(len(b)) <= used {
			t.Fatalf("active segment not mapped: file %d bytes, %d written, %d mapped", len(b), used, mapped)
		}
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, segmentName(1)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	db2 := openDB(t)
	w2, err := OpenWriter(context.Background(), db2, WriterOptions{JournalDir: other, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close(context.Background())
	if n := len(stored(t, db2)); n != 10 {
		t.Fatalf("replayed %d rows, want 10", n)
	}
	if _, err := os.Stat(filepath.Join(other, segmentName(1)+".corrupt")); err == nil {
		t.Errorf("a clean mapped segment was kept aside as damaged")
	}
}

// TestMappedSegmentOverflow: rows past the mapped part of a segment grow the
// mapping ("grow") or, where it cannot grow, go to the file with pwrite(2)
// after the mapped ones ("pwrite"); either way all replay in order, and
// sealing cuts the file to the bytes written.
func TestMappedSegmentOverflow(t *testing.T) {
	for _, mode := range []string{"grow", "pwrite"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "pwrite" {
				defer func(m int64) { maxSegmentMap = m }(maxSegmentMap)
				maxSegmentMap = 64 << 10
			}
			testMappedSegmentOverflow(t, mode)
		})
	}
}

func testMappedSegmentOverflow(t *testing.T, mode string) {
	db := openDB(t)
	dir := t.TempDir()
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, FlushInterval: time.Hour, BatchSize: 64, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	w.mu.Lock()
	mapped := len(w.active.m)
	w.mu.Unlock()
	if runtime.GOOS == "linux" && mapped == 0 {
		t.Skip("the journal cannot be mapped on this filesystem (no fallocate?)")
	}
	if runtime.GOOS == "linux" && mapped != 64<<10 {
		t.Fatalf("mapped %d bytes, want 64 KiB", mapped)
	}
	// Rows of 4 KB: together several times the mapping (64 KiB for a
	// batch of 64 rows). 60 rows stay under the batch: no rotation.
	const n = 60
	want := make([]string, 0, n)
	for i := range n {
		e := testEntry(i)
		e.Operation = strings.Repeat("x", 4096)
		if err := w.Record(e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	got := journalIDs(t, dir)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("journal holds %d rows %v…, want %d in order", len(got), got[:min(3, len(got))], n)
	}
	if runtime.GOOS == "linux" {
		w.mu.Lock()
		used, mapped := w.active.size, int64(len(w.active.m))
		w.mu.Unlock()
		if grew := mapped >= used; grew != (mode == "grow") {
			t.Fatalf("%s: %d bytes written, mapping %d bytes", mode, used, mapped)
		}
	}
	if err := w.rotate(); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	sealed := w.pending[len(w.pending)-1]
	w.mu.Unlock()
	fi, err := os.Stat(filepath.Join(dir, segmentName(sealed.seq)))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != sealed.size {
		t.Errorf("sealed segment is %d bytes, %d written", fi.Size(), sealed.size)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(stored(t, db)); got != n {
		t.Fatalf("store holds %d rows, want %d", got, n)
	}
}

// TestUnmappedSegments: where a segment cannot be mapped (no fallocate, a
// full disk at creation, another platform) rows are written with pwrite(2):
// the file holds exactly the records, and they replay.
func TestUnmappedSegments(t *testing.T) {
	mapJournal = false
	defer func() { mapJournal = true }()
	db := openDB(t)
	dir := t.TempDir()
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	for i := range 100 {
		if err := w.Record(testEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	used, mapped := w.active.size, w.active.m
	w.mu.Unlock()
	fi, err := os.Stat(filepath.Join(dir, segmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if mapped != nil || fi.Size() != used {
		t.Fatalf("unmapped segment: file %d bytes, %d written, mapped %v", fi.Size(), used, mapped != nil)
	}
	if n := len(journalIDs(t, dir)); n != 100 {
		t.Fatalf("journal holds %d rows, want 100", n)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(stored(t, db)); n != 100 {
		t.Fatalf("store holds %d rows, want 100", n)
	}
}
