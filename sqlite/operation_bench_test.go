package sqlite

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// BenchmarkOperationWrites is the claim of a new key and the Complete of
// its 1.7 KB result, by 32 concurrent callers (the gateway bench's
// connections), as the gateway's idempotent path makes them.
func BenchmarkOperationWrites(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "groundhog.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	body := make([]byte, 1700)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	result := &groundhog.Response{Status: 200, ContentType: "application/json", Body: body}
	var seq atomic.Int64
	b.SetParallelism(16) // × GOMAXPROCS callers
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := time.Now()
			op, outcome, err := db.Begin(ctx, groundhog.BeginParams{Tenant: "t", Key: "bench-" + strconv.FormatInt(seq.Add(1), 10),
				RequestHash: "sha256:00", Owner: "bench", Lease: 30 * time.Second, Retention: time.Hour, Now: now})
			if err != nil || outcome != groundhog.BeginClaimed {
				b.Fatal(outcome, err)
			}
			if err := db.Complete(ctx, "t", op.ID, op.FencingToken, result, now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	if c := batchCommits(db); c > 0 {
		b.ReportMetric(float64(batchWrites(db))/float64(c), "writes/commit")
	}
}
