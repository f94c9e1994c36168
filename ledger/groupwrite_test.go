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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// journalIDs reads the IDs of every whole record in the journal segments of
// dir, in file order.
func journalIDs(t testing.TB, dir string) []string {
	t.Helper()
	seqs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, seq := range seqs {
		f, err := os.Open(filepath.Join(dir, segmentName(seq)))
		if err != nil {
			t.Fatal(err)
		}
		sr, err := newSegmentReader(f)
		for err == nil {
			var e groundhog.LedgerEntry
			if err = sr.next(&e); err == nil {
				ids = append(ids, e.ID)
			}
		}
		f.Close()
		if err != io.EOF {
			t.Fatalf("segment %d: %v", seq, err)
		}
	}
	return ids
}

// TestGroupCommitSharesOneWrite holds the Writer's lock (a write in
// progress), lets n callers gather, and checks that they share one write(2),
// that none returns before that write, and that each finds its own row in the
// journal file the moment its Record returns.
func TestGroupCommitSharesOneWrite(t *testing.T) {
	db := openDB(t)
	dir := t.TempDir()
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())

	// A lone caller writes at once: one row, one write.
	if err := w.Record(testEntry(0)); err != nil {
		t.Fatal(err)
	}
	if got := w.Stats().JournalWrites; got != 1 {
		t.Fatalf("lone Record: %d journal writes, want 1", got)
	}

	const n = 40
	w.mu.Lock() // as if a write were in progress
	var returned atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := testEntry(i)
			if err := w.Record(e); err != nil {
				errs <- err
				return
			}
			returned.Add(1)
			// The guarantee: the row is in the file when Record returns.
			found := false
			for _, id := range journalIDs(t, dir) {
				found = found || id == e.ID
			}
			if !found {
				errs <- fmt.Errorf("Record(%s) returned before its row was in the journal", e.ID)
			}
		}()
	}
	// Wait (without a clock) until all n have joined the open group: the
	// first is its leader, blocked on w.mu; the others wait for it.
	for {
		w.gmu.Lock()
		joined := 0
		if w.open != nil {
			joined = int(w.open.refs.Load())
		}
		w.gmu.Unlock()
		if joined == n {
			break
		}
		runtime.Gosched()
	}
	if r := returned.Load(); r != 0 {
		t.Errorf("%d Record calls returned while the write was still pending", r)
	}
	w.mu.Unlock()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := w.Stats().JournalWrites; got != 2 {
		t.Errorf("%d callers gathered behind one write: %d journal writes in all, want 2 (the lone one and the shared one)", n, got)
	}
	ids := journalIDs(t, dir)
	if len(ids) != n+1 {
		t.Fatalf("journal holds %d rows, want %d", len(ids), n+1)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(stored(t, db)); got != n+1 {
		t.Fatalf("store holds %d rows after Flush, want %d", got, n+1)
	}
}

// TestGroupCommitAfterClose: members of a group written after Close get
// ErrClosed, like a lone caller.
func TestGroupCommitAfterClose(t *testing.T) {
	db := openDB(t)
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Record(testEntry(i)); err != ErrClosed {
				t.Errorf("Record after Close: %v, want ErrClosed", err)
			}
		}()
	}
	wg.Wait()
}

const concurrentChildEnv = "GROUNDHOG_LEDGER_KILL_CONCURRENT_CHILD"

// TestKill9ConcurrentChild is the gateway stand-in of
// TestKill9ConcurrentLosesNoReturnedRow: 32 goroutines record rows as fast
// as they can, each printing a row's ID once its Record returned, until the
// process is killed. It also prints "W rows writes" now and then.
func TestKill9ConcurrentChild(t *testing.T) {
	dir := os.Getenv(concurrentChildEnv)
	if dir == "" {
		t.Skip("helper process for TestKill9ConcurrentLosesNoReturnedRow")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var store groundhog.LedgerStore = db
	if os.Getenv(concurrentChildEnv+"_MODE") == "blocked" {
		store = blockingStore{db}
	}
	w, err := OpenWriter(ctx, store, WriterOptions{JournalDir: filepath.Join(dir, "journal"), BatchSize: 64, FlushInterval: time.Millisecond, Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var rows atomic.Int64
	for g := range 32 {
		go func() {
			for i := 0; ; i++ {
				e := testEntry(g*10_000_000 + i)
				if err := w.Record(e); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				n := rows.Add(1)
				mu.Lock()
				fmt.Fprintln(out, e.ID) // the "response": only after Record returned
				if n%500 == 0 {
					fmt.Fprintln(out, "W", n, w.Stats().JournalWrites)
				}
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	select {} // wait for the kill
}

func TestKill9ConcurrentLosesNoReturnedRow(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	for _, mode := range []string{"committing", "blocked"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestKill9ConcurrentChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), concurrentChildEnv+"="+dir, concurrentChildEnv+"_MODE="+mode)
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
			var writesLine string
			for len(acked) < 5000 && sc.Scan() {
				if line := sc.Text(); strings.HasPrefix(line, "W ") {
					writesLine = line
				} else {
					acked = append(acked, line)
				}
			}
			// SIGKILL while the 32 goroutines are mid-Record: no deferred
			// code, no Close, no flush.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if len(acked) < 5000 {
				t.Fatalf("child acknowledged only %d rows", len(acked))
			}

			db, err := sqlite.Open(context.Background(), filepath.Join(dir, "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			before := len(stored(t, db))
			w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: filepath.Join(dir, "journal"), Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close(context.Background())
			rows := stored(t, db)
			have := make(map[string]bool, len(rows))
			for _, r := range rows {
				if have[r.ID] {
					t.Fatalf("row %s stored twice", r.ID)
				}
				have[r.ID] = true
			}
			lost := 0
			for _, id := range acked {
				if !have[id] {
					lost++
					if lost <= 5 {
						t.Errorf("row %s was returned by Record before the kill but is lost", id)
					}
				}
			}
			if lost > 0 {
				t.Fatalf("%d of %d returned rows lost", lost, len(acked))
			}
			t.Logf("%s: %d rows returned, %d in the store before replay, %d after; child's last count (rows, journal writes): %q",
				mode, len(acked), before, len(rows), writesLine)
			if mode == "blocked" && before != 0 {
				t.Errorf("blocked store has %d rows before replay", before)
			}
		})
	}
}
