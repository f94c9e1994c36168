package idempotency_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/idempotency"
)

// nopStore claims every key and accepts every write at once: what is left
// in BenchmarkShortClaim is the Service's own cost of a claim (lease
// renewal set-up and tear-down included), not the store's.
type nopStore struct{ groundhog.OperationStore }

func (nopStore) Begin(_ context.Context, p groundhog.BeginParams) (*groundhog.Operation, groundhog.BeginOutcome, error) {
	return &groundhog.Operation{ID: p.Key, Tenant: p.Tenant, Key: p.Key, RequestHash: p.RequestHash,
		Status: groundhog.StatusRunning, LeaseOwner: p.Owner, LeaseExpiresAt: p.Now.Add(p.Lease),
		FencingToken: 1, Attempts: 1, CreatedAt: p.Now, UpdatedAt: p.Now, ExpiresAt: p.Now.Add(p.Retention)}, groundhog.BeginClaimed, nil
}

func (nopStore) Complete(context.Context, string, string, int64, *groundhog.Response, time.Time) error {
	return nil
}

// BenchmarkShortClaim is Begin + Complete of a call far shorter than the
// renewal interval, on the wall clock, with a store that costs nothing:
// sequential (one caller) and parallel (GOMAXPROCS callers).
func BenchmarkShortClaim(b *testing.B) {
	ctx := context.Background()
	ok := resp(200, `{"ok":true}`)
	svc := idempotency.New(idempotency.Options{Store: nopStore{}, Owner: "bench"})
	keys := make([]string, 1<<12)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	run := func(i int) {
		c, _, _, err := svc.Begin(ctx, tenantA, keys[i&(len(keys)-1)], hash1)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Complete(ctx, ok); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			run(i)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				i++
				run(i)
			}
		})
	})
}
