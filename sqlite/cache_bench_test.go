package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
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

// BenchmarkPutCache writes a 1.7 KB entry under a new key, as a cached
// call's miss does; baseline "unprepared" sends the same statement as SQL
// text on the writer, in the same run.
func BenchmarkPutCache(b *testing.B) {
	db := openTest(b)
	now := time.Now()
	body := make([]byte, 1700)
	e := groundhog.CacheEntry{Tenant: "t", Shape: groundhog.ShapeChat,
		Response:  groundhog.Response{Status: 200, ContentType: "application/json", Body: body, Model: "m"},
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	i := 0
	b.Run("prepared", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			e.RequestHash = fmt.Sprintf("sha256:p%d", i)
			if err := db.PutCache(ctx, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unprepared", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			i++
			e.RequestHash = fmt.Sprintf("sha256:u%d", i)
			args := append([]any{e.Tenant, e.RequestHash, string(e.Shape)}, respArgs(&e.Response)...)
			args = append(args, ns(e.CreatedAt), ns(e.ExpiresAt))
			if _, err := db.w.ExecContext(ctx, qPutCache, args...); err != nil {
				b.Fatal(err)
			}
		}
	})
}
