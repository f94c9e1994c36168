package ledger

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// flakyStore wraps a real store: it fails AppendLedger while fail is set,
// and reports every successful append on appended (if not nil).
type flakyStore struct {
	groundhog.LedgerStore
	mu       sync.Mutex
	fail     error
	appended chan int
}

func (s *flakyStore) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

func (s *flakyStore) AppendLedger(ctx context.Context, rows []groundhog.LedgerEntry) error {
	s.mu.Lock()
	err := s.fail
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.LedgerStore.AppendLedger(ctx, rows); err != nil {
		return err
	}
	if s.appended != nil {
		s.appended <- len(rows)
	}
	return nil
}

var quiet = slog.New(slog.DiscardHandler)

// testEntry is a fully filled ledger row.
func testEntry(i int) groundhog.LedgerEntry {
	return groundhog.LedgerEntry{
		ID:          fmt.Sprintf("row-%06d", i),
		Time:        time.Date(2025, 3, 14, 9, 0, 0, i, time.UTC),
		Tenant:      "acme",
		Operation:   "summarize",
		RequestHash: fmt.Sprintf("sha256:%064d", i%7),
		Shape:       groundhog.ShapeChat,
		Model:       "gpt-4o-mini",
		Provider:    "openai",
		Outcome:     groundhog.OutcomeUpstream,
		Status:      200,
		Usage:       groundhog.Usage{InputTokens: int64(1000 + i), CachedInputTokens: 10, CacheWriteTokens: 3, OutputTokens: 77},
		Cost:        groundhog.Money(4_000_000_000 + i),
		Saved:       groundhog.Money(i % 3),
		FullCost:    groundhog.Money(4_000_000_000 + i),
		Latency:     812 * time.Millisecond,
		Attempt:     1,
		InFlight:    i%2 == 0,
		CacheOn:     i%3 == 0,
		Idempotent:  i%5 == 0,
		Stream:      true,
	}
}

// stored returns every ledger row of the store, in (Time, ID) order.
func stored(t testing.TB, s groundhog.LedgerStore) []groundhog.LedgerEntry {
	t.Helper()
	var rows []groundhog.LedgerEntry
	if err := s.ScanLedger(context.Background(), groundhog.LedgerFilter{}, func(e *groundhog.LedgerEntry) error {
		rows = append(rows, *e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestJournalRecordRoundTrip(t *testing.T) {
	cases := []groundhog.LedgerEntry{testEntry(1), testEntry(2), {ID: "x", Time: time.Unix(0, 1).UTC(), Cost: groundhog.CostUnknown, FullCost: groundhog.CostUnknown, Saved: -1}}
	long := testEntry(3)
	long.Operation = string(make([]byte, 300)) // a length that needs a two-byte varint
	cases = append(cases, long)
	for i, e := range cases {
		b := appendRecord(nil, &e)
		sr, err := newSegmentReader(io.MultiReader(bytesReader(segMagic), bytesReader(string(b))))
		if err != nil {
			t.Fatal(err)
		}
		var got groundhog.LedgerEntry
		if err := sr.next(&got); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("case %d: round trip\n got %+v\nwant %+v", i, got, e)
		}
		if err := sr.next(&got); err != io.EOF {
			t.Errorf("case %d: after the record: %v, want EOF", i, err)
		}
		// Any truncation of the record is detected, never misread.
		for cut := 1; cut < len(b); cut++ {
			sr, _ := newSegmentReader(io.MultiReader(bytesReader(segMagic), bytesReader(string(b[:cut]))))
			if err := sr.next(&got); !errors.Is(err, errCorrupt) {
				t.Fatalf("case %d cut at %d: err = %v, want errCorrupt", i, cut, err)
			}
		}
		// So is a flipped bit.
		bad := append([]byte(nil), b...)
		bad[len(bad)-2] ^= 0x10
		sr, _ = newSegmentReader(io.MultiReader(bytesReader(segMagic), bytesReader(string(bad))))
		if err := sr.next(&got); !errors.Is(err, errCorrupt) {
			t.Fatalf("case %d flipped bit: err = %v, want errCorrupt", i, err)
		}
	}
}

type stringReader struct{ s string }

func (r *stringReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}

func bytesReader(s string) io.Reader { return &stringReader{s} }

func TestWriterRecordFlush(t *testing.T) {
	db := openDB(t)
	dir := filepath.Join(t.TempDir(), "journal")
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, BatchSize: 100, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// Many goroutines record concurrently.
	const workers, each = 8, 250
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := w.Record(testEntry(g*each + i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := stored(t, db)
	if len(rows) != workers*each {
		t.Fatalf("stored %d rows, want %d", len(rows), workers*each)
	}
	// Every field survives journal and store.
	for _, r := range rows {
		var i int
		fmt.Sscanf(r.ID, "row-%d", &i)
		if want := testEntry(i); !reflect.DeepEqual(r, want) {
			t.Fatalf("row %d\n got %+v\nwant %+v", i, r, want)
		}
	}
	if s := w.Stats(); s.Backlog != 0 || s.Buffered != 0 {
		t.Errorf("stats after flush = %+v", s)
	}
	// An empty ID is filled in; a zero time is refused.
	if err := w.Record(groundhog.LedgerEntry{Time: day0}); err != nil {
		t.Fatal(err)
	}
	if err := w.Record(groundhog.LedgerEntry{ID: "no-time"}); err == nil {
		t.Error("Record accepted a row without time")
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(stored(t, db)); n != workers*each+1 {
		t.Errorf("after Close: %d rows, want %d", n, workers*each+1)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("journal directory left after Close: %v", err)
	}
	if err := w.Record(testEntry(1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Record after Close = %v, want ErrClosed", err)
	}
	if err := w.Flush(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close = %v, want ErrClosed", err)
	}
}

func TestWriterBatchTrigger(t *testing.T) {
	// BatchSize rows commit without Flush and long before FlushInterval.
	store := &flakyStore{LedgerStore: openDB(t), appended: make(chan int, 16)}
	w, err := OpenWriter(context.Background(), store, WriterOptions{JournalDir: t.TempDir(), BatchSize: 10, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	for i := range 10 {
		if err := w.Record(testEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case n := <-store.appended:
		if n != 10 {
			t.Fatalf("batch of %d rows, want 10", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch was not committed")
	}
}

func TestWriterFlushInterval(t *testing.T) {
	store := &flakyStore{LedgerStore: openDB(t), appended: make(chan int, 16)}
	w, err := OpenWriter(context.Background(), store, WriterOptions{JournalDir: t.TempDir(), BatchSize: 1000, FlushInterval: 5 * time.Millisecond, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	if err := w.Record(testEntry(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-store.appended:
		if n != 1 {
			t.Fatalf("batch of %d rows, want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a row was not committed after FlushInterval")
	}
}

func TestWriterStoreOutage(t *testing.T) {
	// While the store fails, Record keeps working, memory stays within
	// MaxBufferedRows (the rest is read back from the journal), Flush
	// reports the failure; once the store is back every row lands once.
	db := openDB(t)
	store := &flakyStore{LedgerStore: db}
	dir := t.TempDir()
	w, err := OpenWriter(context.Background(), store, WriterOptions{JournalDir: dir, BatchSize: 8, FlushInterval: time.Hour, MaxBufferedRows: 20, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	// Some rows are committed before the outage.
	for i := range 5 {
		w.Record(testEntry(i))
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	down := groundhog.Errorf(groundhog.EUNAVAILABLE, "store unavailable")
	store.setFail(down)
	for i := 5; i < 105; i++ {
		if err := w.Record(testEntry(i)); err != nil {
			t.Fatalf("Record during outage: %v", err)
		}
		if i%30 == 0 {
			if err := w.Flush(context.Background()); !errors.Is(err, down) {
				t.Fatalf("Flush during outage = %v, want the store error", err)
			}
		}
	}
	s := w.Stats()
	if s.Backlog != 100 || s.Buffered > 20 || s.LastError == nil {
		t.Fatalf("stats during outage = %+v (want backlog 100, buffered <= 20, an error)", s)
	}
	if n := len(stored(t, db)); n != 5 {
		t.Fatalf("store has %d rows during the outage, want 5", n)
	}
	store.setFail(nil)
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := stored(t, db)
	if len(rows) != 105 {
		t.Fatalf("after recovery: %d rows, want 105", len(rows))
	}
	for i, r := range rows {
		if want := testEntry(i); !reflect.DeepEqual(r, want) {
			t.Fatalf("row %d\n got %+v\nwant %+v", i, r, want)
		}
	}
	if s := w.Stats(); s.Backlog != 0 || s.Buffered != 0 || s.LastError != nil || s.Segments != 1 {
		t.Errorf("stats after recovery = %+v", s)
	}
	segs, _ := listSegments(dir)
	if len(segs) != 1 {
		t.Errorf("journal holds %d segments after recovery, want only the active one", len(segs))
	}
}

func TestWriterReplayAfterAbandon(t *testing.T) {
	// Close with the store down and an expired context leaves the journal;
	// the next OpenWriter replays it before accepting rows, skipping rows
	// that were already committed.
	db := openDB(t)
	store := &flakyStore{LedgerStore: db}
	dir := t.TempDir()
	w, err := OpenWriter(context.Background(), store, WriterOptions{JournalDir: dir, BatchSize: 4, FlushInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		w.Record(testEntry(i))
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	store.setFail(errors.New("disk on fire"))
	for i := 6; i < 20; i++ {
		w.Record(testEntry(i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Close(ctx); err == nil {
		t.Fatal("Close succeeded with the store down")
	}
	// Opening on a store that still fails refuses to start.
	if _, err := OpenWriter(context.Background(), store, WriterOptions{JournalDir: dir, Logger: quiet}); err == nil {
		t.Fatal("OpenWriter accepted rows before the journal was replayed")
	}
	// A duplicate of an already committed row in the journal (a crash
	// between commit and segment removal) is stored once.
	f, err := createSegment(dir, 999)
	if err != nil {
		t.Fatal(err)
	}
	e := testEntry(2)
	f.Write(appendRecord(nil, &e))
	f.Close()

	store.setFail(nil)
	w2, err := OpenWriter(context.Background(), store, WriterOptions{JournalDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(stored(t, db)); n != 20 {
		t.Fatalf("after replay: %d rows, want 20", n)
	}
	// New segments continue after the replayed ones.
	if w2.active.seq <= 999 {
		t.Errorf("new active segment %d does not follow the replayed 999", w2.active.seq)
	}
	if err := w2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWriterTornTail(t *testing.T) {
	// An OS crash can leave a torn last record: the rows before it are
	// replayed, the file is kept aside, and the writer starts.
	db := openDB(t)
	dir := t.TempDir()
	f, err := createSegment(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for i := range 3 {
		e := testEntry(i)
		b = appendRecord(b, &e)
	}
	e := testEntry(3)
	torn := appendRecord(nil, &e)
	b = append(b, torn[:len(torn)/2]...)
	f.Write(b)
	f.Close()
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	if n := len(stored(t, db)); n != 3 {
		t.Fatalf("replayed %d rows, want the 3 whole ones", n)
	}
	if _, err := os.Stat(filepath.Join(dir, segmentName(1)+".corrupt")); err != nil {
		t.Errorf("damaged segment not kept aside: %v", err)
	}
}

func TestWriterDirectoryLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	db := openDB(t)
	w, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	if _, err := OpenWriter(context.Background(), db, WriterOptions{JournalDir: dir, Logger: quiet}); err == nil {
		t.Fatal("two writers opened one journal directory")
	}
}

func TestWriterNoJournalBacklog(t *testing.T) {
	store := &flakyStore{LedgerStore: openDB(t)}
	store.setFail(errors.New("down"))
	w, err := OpenWriter(context.Background(), store, WriterOptions{BatchSize: 100, FlushInterval: time.Hour, MaxBufferedRows: 3, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := w.Record(testEntry(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Record(testEntry(3)); !errors.Is(err, ErrBacklogFull) {
		t.Fatalf("Record past the bound without a journal = %v, want ErrBacklogFull", err)
	}
	store.setFail(nil)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(stored(t, store)); n != 3 {
		t.Fatalf("stored %d, want 3", n)
	}
}

// blockingStore never commits: AppendLedger waits until its context ends.
type blockingStore struct{ groundhog.LedgerStore }

func (blockingStore) AppendLedger(ctx context.Context, _ []groundhog.LedgerEntry) error {
	<-ctx.Done()
	return ctx.Err()
}

const childEnv = "GROUNDHOG_LEDGER_KILL_CHILD"

// TestKill9Child is the gateway stand-in of TestKill9LosesNoRecordedRow: it
// records rows as fast as it can and prints each ID once Record returned
// (the moment the gateway would send the response), until it is killed.
func TestKill9Child(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("helper process for TestKill9LosesNoRecordedRow")
	}
	ctx := context.Background()
	var store groundhog.LedgerStore
	db, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	store = db
	if os.Getenv(childEnv+"_MODE") == "blocked" {
		store = blockingStore{db}
	}
	w, err := OpenWriter(ctx, store, WriterOptions{JournalDir: filepath.Join(dir, "journal"), BatchSize: 16, FlushInterval: time.Millisecond, Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; i < 1_000_000; i++ {
		e := testEntry(i)
		if err := w.Record(e); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintln(out, e.ID)
		out.Flush() // the "response": only after Record returned
	}
	select {} // wait for the kill
}

func TestKill9LosesNoRecordedRow(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	for _, mode := range []string{"committing", "blocked"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+dir, childEnv+"_MODE="+mode)
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
			for sc.Scan() && len(acked) < 3000 {
				acked = append(acked, sc.Text())
			}
			// SIGKILL mid-stream: no deferred code, no Close, no flush.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if len(acked) < 3000 {
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
			for _, id := range acked {
				if !have[id] {
					t.Fatalf("row %s was acknowledged before the kill but is lost", id)
				}
			}
			t.Logf("%s: %d rows acknowledged, %d in the store before replay, %d after", mode, len(acked), before, len(rows))
			if mode == "blocked" && before != 0 {
				t.Errorf("blocked store has %d rows before replay", before)
			}
		})
	}
}
