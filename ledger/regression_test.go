//go:build unix

// Regression tests from the review of the journal writer: each one
// demonstrated a defect (since fixed) and fails if it comes back.
package ledger

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// crashWriter leaves w exactly as a kill -9 would leave its files: the
// committer stops, descriptors close, nothing is committed or removed.
func crashWriter(t *testing.T, w *Writer) {
	t.Helper()
	w.cancel()
	<-w.done
	w.mu.Lock()
	if w.active.f != nil {
		w.active.f.Close()
	}
	for _, s := range w.pending {
		if s.f != nil {
			s.f.Close()
		}
	}
	w.mu.Unlock()
	if w.lock != nil {
		unlockDir(w.lock)
	}
}

// bigEntry is a row whose encoded payload exceeds maxRecordSize: the model
// name is client-controlled (the "model" field of a request body up to
// max_body_bytes, 32 MiB by default) and nothing bounds it before Record.
func bigEntry(i int) groundhog.LedgerEntry {
	e := testEntry(i)
	e.Model = strings.Repeat("m", maxRecordSize+1)
	return e
}

// recordAll records entries; an oversized row must be refused (a reader
// would take it for a torn tail) and every other row accepted.
func recordAll(t *testing.T, w *Writer, entries []groundhog.LedgerEntry) (accepted []groundhog.LedgerEntry) {
	t.Helper()
	for _, e := range entries {
		err := w.Record(e)
		big := len(e.Model) > maxRecordSize
		switch {
		case big && err == nil:
			t.Fatalf("Record accepted an oversized row %s that replay could not read", e.ID)
		case !big && err != nil:
			t.Fatalf("Record(%s): %v", e.ID, err)
		case !big:
			accepted = append(accepted, e)
		}
	}
	return accepted
}

// A row accepted by Record (nil error: "it survives a kill -9") must be
// replayed after a crash, and so must every row recorded after an
// oversized one (which Record refuses).
func TestReviewOversizedRowLostOnReplay(t *testing.T) {
	db := openDB(t)
	dir := filepath.Join(t.TempDir(), "journal")
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, BatchSize: 100, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	entries := recordAll(t, w, []groundhog.LedgerEntry{testEntry(0), bigEntry(1), testEntry(2), testEntry(3)})
	crashWriter(t, w)

	w2, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close(context.Background())
	have := map[string]bool{}
	for _, r := range stored(t, db) {
		have[r.ID] = true
	}
	for _, e := range entries {
		if !have[e.ID] {
			t.Errorf("row %s was acknowledged by Record but is lost after replay", e.ID)
		}
	}
}

// The same without any crash: during a store outage the active segment
// spills to its file, and the committer reads it back when the store returns.
// Flush reports success while rows are silently dropped.
func TestReviewOversizedRowLostOnSpill(t *testing.T) {
	db := openDB(t)
	store := &flakyStore{LedgerStore: db}
	dir := filepath.Join(t.TempDir(), "journal")
	w, err := OpenWriter(context.Background(), store, WriterOptions{JournalDir: dir, BatchSize: 100, FlushInterval: time.Hour, MaxBufferedRows: 2, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	store.setFail(errors.New("down"))
	entries := recordAll(t, w, []groundhog.LedgerEntry{testEntry(0), testEntry(1), testEntry(2), bigEntry(3), testEntry(4), testEntry(5)})
	store.setFail(nil)
	ferr := w.Flush(context.Background())
	have := map[string]bool{}
	for _, r := range stored(t, db) {
		have[r.ID] = true
	}
	for _, e := range entries {
		if !have[e.ID] {
			t.Errorf("row %s was acknowledged by Record but is not in the store after Flush (Flush err = %v)", e.ID, ferr)
		}
	}
}

// hangStore's AppendLedger blocks until its context ends or release is
// closed: a store that hangs (a stuck lock, a dead network peer).
type hangStore struct {
	groundhog.LedgerStore
	entered chan struct{}
	release chan struct{}
}

func (s *hangStore) AppendLedger(ctx context.Context, rows []groundhog.LedgerEntry) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.release:
		return errors.New("released")
	}
}

// Close(ctx) promises: "If ctx ends first, the uncommitted rows stay in the
// journal for the next OpenWriter and Close returns an error." But an
// attempt made for Flush runs under Flush's own context only (not merged
// with w.ctx, no storeTimeout), so w.cancel() cannot abort it and Close
// waits for <-w.done forever while a Flush is stuck on a hung store.
func TestReviewCloseHangsBehindFlush(t *testing.T) {
	store := &hangStore{LedgerStore: openDB(t), entered: make(chan struct{}, 1), release: make(chan struct{})}
	w, err := OpenWriter(context.Background(), store, WriterOptions{JournalDir: t.TempDir(), BatchSize: 100, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Record(testEntry(1)); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush(context.Background()) }()
	select {
	case <-store.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("Flush did not reach the store")
	}
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		closed <- w.Close(ctx)
	}()
	select {
	case err := <-closed:
		if err == nil {
			t.Error("Close succeeded with the store hung")
		}
	case <-time.After(3 * time.Second):
		t.Error("Close(ctx with a 100ms deadline) still blocked after 3s: it waits for a Flush attempt it cannot cancel")
		close(store.release) // let the test end
		<-closed
	}
	<-flushed
}

// createSegment creates the file with O_EXCL and then writes the magic; if
// that write fails (disk full: the inode is created, the first block is
// not) it closes the file but leaves it on disk, and newSegment does not
// advance nextSeq. Every later rotation retries the same name and fails
// with EEXIST, forever: after a transient ENOSPC the Writer never commits
// another row until the process restarts (attempt returns rotErr each
// time), and the active segment grows without bound.
//
// The write failure is produced for real with RLIMIT_FSIZE (Go ignores
// SIGXFSZ, so the write returns EFBIG), held only around the one Flush.
func TestReviewSegmentCreateFailureWedgesRotation(t *testing.T) {
	// The file-size limit is the whole process's: in the test binary that
	// go test runs, a write of its own test log (-test.testlogfile, when
	// results may be cached) falling inside the window fails and fails the
	// package. So the disk-full part runs in a child process of its own.
	if os.Getenv(fsizeChildEnv) != "1" {
		runFsizeChild(t)
		return
	}
	db := openDB(t)
	dir := t.TempDir()
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, BatchSize: 100, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Bounded: with the defect, Close retries the same failing
		// rotation until its context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		w.Close(ctx)
	}()
	if err := w.Record(testEntry(1)); err != nil {
		t.Fatal(err)
	}

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	lim := old
	lim.Cur = 4 // smaller than the 8-byte magic
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip(err)
	}
	ferr := w.Flush(context.Background()) // "disk full" while cutting the segment
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if ferr == nil {
		t.Skip("segment creation did not fail under RLIMIT_FSIZE")
	}
	t.Logf("flush while the disk is full: %v", ferr)

	// The disk has room again: the next attempts must commit.
	var last error
	for range 3 {
		if last = w.Flush(context.Background()); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("Flush after the disk recovered still fails: %v", last)
	}
	if n := len(stored(t, db)); n != 1 {
		t.Fatalf("store has %d rows, want 1", n)
	}
}

// fsizeChildEnv marks the child process of
// TestReviewSegmentCreateFailureWedgesRotation.
const fsizeChildEnv = "GROUNDHOG_LEDGER_FSIZE_CHILD"

// runFsizeChild runs the calling test alone in a child process of this
// test binary (no test log, its own file-size limit) and reports its result
// as the test's own.
func runFsizeChild(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), fsizeChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("child process: %v\n%s", err, out)
	case strings.Contains(string(out), "--- SKIP: "+t.Name()):
		t.Skipf("child process skipped:\n%s", out)
	case !strings.Contains(string(out), "--- PASS: "+t.Name()):
		t.Fatalf("child process did not run the test:\n%s", out)
	}
	t.Logf("child process:\n%s", out)
}
