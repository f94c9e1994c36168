package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// BenchmarkGetCache reads a 1.7 KB entry (found) and a key with no entry
// (absent: what every cached call's miss reads first), as the cache's
// database tier does when its memory tier does not hold the key: after a
// restart, past the memory budget, or for an entry another replica wrote.
// Baseline "unprepared": the same query sent as SQL text on the read pool,
// parsed by SQLite on every call, in the same run.
func BenchmarkGetCache(b *testing.B) {
	db := openTest(b)
	now := time.Now()
	body := make([]byte, 1700)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	e := &groundhog.CacheEntry{Tenant: "t", RequestHash: "sha256:found", Shape: groundhog.ShapeChat,
		Response:  groundhog.Response{Status: 200, ContentType: "application/json", Body: body, Model: "m"},
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := db.PutCache(ctx, e); err != nil {
		b.Fatal(err)
	}
	for _, hash := range []string{"sha256:found", "sha256:absent"} {
		found := hash == "sha256:found"
		name := map[bool]string{true: "found", false: "absent"}[found]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := db.GetCache(ctx, "t", hash, now)
				if found != (err == nil) || (found && len(got.Response.Body) != len(body)) {
					b.Fatal(got, err)
				}
			}
		})
		b.Run(name+"/unprepared", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var (
					shape            string
					rc               respCols
					created, expires sql.NullInt64
				)
				dest := append(append([]any{&shape}, rc.dest()...), &created, &expires)
				err := db.r.QueryRowContext(ctx, qGetCache, "t", hash, now.UnixNano()).Scan(dest...)
				if found != (err == nil) || (!found && !errors.Is(err, sql.ErrNoRows)) {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPutCache writes 1.7 KB entries under new keys from 32
// concurrent callers, as the misses of a loaded gateway with the cache on
// store their answers. Baselines in the same run: "alone", each write its
// own statement and commit on the writer (prepared), and "unprepared", the
// same sent as SQL text.
func BenchmarkPutCache(b *testing.B) {
	db := openTest(b)
	now := time.Now()
	body := make([]byte, 1700)
	var seq atomic.Int64
	for _, mode := range []string{"group", "alone", "unprepared"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(16) // × GOMAXPROCS callers
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e := groundhog.CacheEntry{Tenant: "t", RequestHash: fmt.Sprintf("sha256:%d", seq.Add(1)), Shape: groundhog.ShapeChat,
						Response:  groundhog.Response{Status: 200, ContentType: "application/json", Body: body, Model: "m"},
						CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
					var err error
					switch mode {
					case "group":
						err = db.PutCache(ctx, &e)
					default:
						args := append([]any{e.Tenant, e.RequestHash, string(e.Shape)}, respArgs(&e.Response)...)
						args = append(args, ns(e.CreatedAt), ns(e.ExpiresAt))
						if mode == "alone" {
							_, err = db.writeExec(ctx, qPutCache, args...)
						} else {
							_, err = db.w.ExecContext(ctx, qPutCache, args...)
						}
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
