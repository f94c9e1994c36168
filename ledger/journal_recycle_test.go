package ledger

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// TestRecycledSegmentShowsNoStaleRecord: once a committed segment's file is
// reused as the active one, a kill -9 (the files as they are in the page
// cache) replays exactly the rows recorded since, none of the file's
// previous use, even where its old records line up with the new ones
// (rows of the same length).
func TestRecycledSegmentShowsNoStaleRecord(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("segments are mapped (and recycled) on Linux only")
	}
	db := openDB(t)
	dir := t.TempDir()
	ctx := context.Background()
	w, err := OpenWriter(ctx, db, WriterOptions{JournalDir: dir, BatchSize: 1000, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(ctx)
	first, err := os.Stat(filepath.Join(dir, segmentName(1)))
	if err != nil {
		t.Fatal(err)
	}
	record := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := w.Record(testEntry(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	record(100_000, 10) // segment 1: 10 rows
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	record(100_010, 5) // segment 2
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	record(200_000, 3) // segment 3, in segment 1's file
	w.mu.Lock()
	active, mapped := w.active.seq, w.active.m != nil
	w.mu.Unlock()
	if !mapped {
		t.Skip("the journal cannot be mapped on this filesystem (no fallocate?)")
	}
	now, err := os.Stat(filepath.Join(dir, segmentName(active)))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(first, now) {
		t.Fatalf("segment %d is not segment 1's file recycled", active)
	}

	// The kill -9: copy every file of the journal as it is now.
	killed := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(killed, de.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(killed, "LOCK")) // the lock is on the original's descriptor; a copy is a plain file
	rows, err := ReadJournal(killed)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	if want := "row-200000 row-200001 row-200002"; strings.Join(ids, " ") != want {
		t.Fatalf("journal left by the kill holds %v, want %s", ids, want)
	}
	db2 := openDB(t)
	w2, err := OpenWriter(ctx, db2, WriterOptions{JournalDir: killed, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close(ctx)
	got := stored(t, db2)
	if len(got) != 3 {
		t.Fatalf("replay stored %d rows, want the 3 recorded since the last commit", len(got))
	}
	for i, r := range got {
		if want := testEntry(200_000 + i); r.ID != want.ID || r.Cost != want.Cost {
			t.Fatalf("replayed row %d = %s, want %s", i, r.ID, want.ID)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(killed, "*.corrupt")); len(left) != 0 {
		t.Errorf("replay kept %v aside as damaged", left)
	}
	if _, err := os.Stat(filepath.Join(killed, spareName)); err == nil {
		t.Errorf("the spare segment left by the kill was not removed")
	}
}

const recycleChildEnv = "GROUNDHOG_LEDGER_KILL_RECYCLE_CHILD"

// TestKill9RecycleChild is the gateway stand-in of
// TestKill9RecycledSegmentsLoseNothing: one goroutine records rows of the
// same encoded length, in order, printing each ID once Record returned, and
// "R n" (segments recycled so far) now and then, until it is killed. A 1 ms
// flush makes the committer recycle segments all along.
func TestKill9RecycleChild(t *testing.T) {
	dir := os.Getenv(recycleChildEnv)
	if dir == "" {
		t.Skip("helper process for TestKill9RecycledSegmentsLoseNothing")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w, err := OpenWriter(ctx, db, WriterOptions{JournalDir: filepath.Join(dir, "journal"), BatchSize: 256, FlushInterval: time.Millisecond, Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	var n atomic.Int64
	for i := 100_000; ; i++ {
		e := testEntry(i)
		if err := w.Record(e); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintln(out, e.ID) // the "response": only after Record returned
		if n.Add(1)%200 == 0 {
			w.mu.Lock()
			r := w.recycled
			w.mu.Unlock()
			fmt.Fprintln(out, "R", r)
		}
		out.Flush()
		if i%16 == 0 {
			// Paced by the committer, so that segments stay within their
			// mapping (and are recycled) however slow the store is here
			// (the race detector, a loaded machine): a gateway's ledger
			// keeps up the same way at its rate.
			for w.Stats().Backlog > 512 {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
}

// TestKill9RecycledSegmentsLoseNothing: SIGKILL a process whose journal
// recycles segment files. Every segment left holds its own rows only: in
// recording order, consecutive, and after those of earlier segments (a
// stale record of a file's previous use would break the order). After
// replay every row Record returned is in the store, once.
func TestKill9RecycledSegmentsLoseNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("segments are mapped (and recycled) on Linux only")
	}
	for round := range 3 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9RecycleChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), recycleChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		var acked []string
		recycled := 0
		// Until the committer has recycled a few segments (it runs at its
		// own pace), and a little further each round.
		for (len(acked) < 3000+1000*round || recycled < 5) && len(acked) < 200_000 && sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "R ") {
				recycled, _ = strconv.Atoi(line[2:])
			} else {
				acked = append(acked, line)
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if len(acked) < 3000 {
			t.Fatalf("child acknowledged only %d rows", len(acked))
		}
		if recycled == 0 {
			t.Fatalf("the child recycled no segment in %d rows", len(acked))
		}

		journal := filepath.Join(dir, "journal")
		seqs, err := listSegments(journal)
		if err != nil {
			t.Fatal(err)
		}
		last := -1
		for _, seq := range seqs {
			f, err := os.Open(filepath.Join(journal, segmentName(seq)))
			if err != nil {
				t.Fatal(err)
			}
			sr, err := newSegmentReader(f)
			prev := -1
			for err == nil {
				var e groundhog.LedgerEntry
				if err = sr.next(&e); err != nil {
					break
				}
				i, _ := strconv.Atoi(strings.TrimPrefix(e.ID, "row-"))
				if (prev >= 0 && i != prev+1) || i <= last {
					t.Fatalf("segment %d: row %d after row %d (last of the earlier segments %d): a stale record", seq, i, prev, last)
				}
				prev = i
			}
			f.Close()
			if err != io.EOF {
				t.Fatalf("segment %d: %v", seq, err)
			}
			if prev >= 0 {
				last = prev
			}
		}

		db, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: journal, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		rows := stored(t, db)
		have := make(map[string]bool, len(rows))
		for _, r := range rows {
			if have[r.ID] {
				t.Fatalf("row %s stored twice", r.ID)
			}
			have[r.ID] = true
		}
		for _, id := range acked {
			if !have[id] {
				t.Fatalf("row %s was returned by Record before the kill but is lost", id)
			}
		}
		t.Logf("round %d: %d rows returned, %d segments recycled, %d segment files left", round, len(acked), recycled, len(seqs))
		w.Close(context.Background())
		db.Close()
	}
}
