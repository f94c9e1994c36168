package sqlite

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// putPages writes n cache entries holding 4 KB of incompressible bytes
// each: about n pages of the WAL.
func putPages(t *testing.T, db *DB, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	body := make([]byte, 4096)
	for i := range n {
		for j := range body {
			body[j] = byte(rng.Uint32())
		}
		if err := db.PutCache(ctx, bodyEntry(int64(i), body)); err != nil {
			t.Fatal(err)
		}
	}
}

// bodyEntry is cache entry i of these tests, answering body.
func bodyEntry(i int64, body []byte) *groundhog.CacheEntry {
	return &groundhog.CacheEntry{Tenant: "t", RequestHash: fmt.Sprintf("sha256:%064x", i), Shape: groundhog.ShapeChat,
		Response: groundhog.Response{Status: 200, ContentType: "application/json", Body: body}, CreatedAt: time.Unix(1, 0)}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// openCheckpointing opens a new database whose checkpointer runs every
// every, and returns it with its path.
func openCheckpointing(t *testing.T, every time.Duration) (*DB, string) {
	t.Helper()
	defer func(d time.Duration) { checkpointEvery = d }(checkpointEvery)
	checkpointEvery = every
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// No commit copies the WAL into the main file, however far past SQLite's
// automatic threshold (1000 pages) the WAL grows: that copy and its syncs
// are the checkpointer's, on a connection of its own, so no write waits
// for them. A checkpoint copies every frame, and the database reopened
// reads what was written.
func TestCommitsLeaveTheWALToTheCheckpointer(t *testing.T) {
	db, path := openCheckpointing(t, time.Hour) // only this test's own checkpoints run
	main0 := fileSize(t, path)
	putPages(t, db, 2500)
	if got := fileSize(t, path); got != main0 {
		t.Fatalf("the main file went from %d to %d bytes during the writes: a commit checkpointed", main0, got)
	}
	if got := fileSize(t, path+"-wal"); got < 2500*4096 {
		t.Fatalf("WAL is %d bytes after 2,500 pages written", got)
	}
	log, copied, err := db.ckpt.run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if log < 2500 || copied != log {
		t.Fatalf("checkpoint: %d frames in the WAL, %d copied; want all of at least 2,500", log, copied)
	}
	if got := fileSize(t, path); got < main0+2500*4096 {
		t.Fatalf("the main file is %d bytes after the checkpoint (%d before the writes)", got, main0)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := db.GetCache(ctx, "t", fmt.Sprintf("sha256:%064x", 2499), time.Unix(2, 0))
	if err != nil || e == nil || len(e.Response.Body) != 4096 {
		t.Fatalf("last entry after reopening: %v, %v", e, err)
	}
}

// The checkpointer runs on its own: the main file takes the written pages
// without any call but the writes.
func TestCheckpointerCopiesInTheBackground(t *testing.T) {
	db, path := openCheckpointing(t, 20*time.Millisecond)
	main0 := fileSize(t, path)
	putPages(t, db, 300)
	deadline := time.Now().Add(10 * time.Second)
	for fileSize(t, path) < main0+300*4096 {
		if time.Now().After(deadline) {
			t.Fatalf("main file still %d bytes 10 s after 300 pages were written (%d before)", fileSize(t, path), main0)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkWriteLatency is the latency of cache writes from 8 writers
// at once, 2 KB each (the writes of idempotent calls and cache fills wait
// for the one writer connection alike), with SQLite checkpointing inside
// the commit that passes 1000 pages (writer) and with the checkpointer
// (background), taking turns in one run: p50, p99 and the slowest write.
func BenchmarkWriteLatency(b *testing.B) {
	for _, mode := range []string{"writer", "background"} {
		b.Run(mode, func(b *testing.B) {
			defer func(w bool) { writerCheckpoints = w }(writerCheckpoints)
			writerCheckpoints = mode == "writer"
			db, err := Open(ctx, filepath.Join(b.TempDir(), "x.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			body := make([]byte, 2048)
			rng := rand.New(rand.NewPCG(3, 4))
			for j := range body {
				body[j] = byte(rng.Uint32())
			}
			const writers = 8
			lat := make([][]time.Duration, writers)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						e := bodyEntry(i, body)
						t0 := time.Now()
						if err := db.PutCache(ctx, e); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			slices.Sort(all)
			if len(all) == 0 {
				return
			}
			q := func(p float64) float64 { return float64(all[min(len(all)-1, int(p*float64(len(all))))]) / 1e3 }
			b.ReportMetric(q(0.50), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(float64(all[len(all)-1])/1e3, "max-µs")
		})
	}
}
