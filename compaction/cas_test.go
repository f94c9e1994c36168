package compaction

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/pricing"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// racingStore is the real SQLite store with a second writer that updates
// the session right after the compaction has read it.
type racingStore struct {
	*sqlite.DB
	raced bool
}

func (s *racingStore) GetState(ctx context.Context, tenant, session string) (*groundhog.StateVersion, error) {
	v, err := s.DB.GetState(ctx, tenant, session)
	if err == nil && !s.raced {
		s.raced = true
		next := v.State
		next.NextStep = "written by the other writer"
		if _, err := s.DB.PutState(ctx, groundhog.StateVersion{Tenant: tenant, Session: session, State: next, Author: "other"}, v.Version); err != nil {
			return nil, err
		}
	}
	return v, err
}

// A compaction writes with compare-and-swap on the version it started
// from: a concurrent update wins, the compaction fails with EPRECONDITION,
// and nothing of it is written.
func TestCompactLosesToAConcurrentWriter(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "g.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.PutState(ctx, groundhog.StateVersion{Tenant: "t", Session: "s", State: seed(), Author: "a"}, 0); err != nil {
		t.Fatal(err)
	}
	c := &Compactor{States: &racingStore{DB: db}, Config: config.DefaultCompaction(), Prices: pricing.Default()}
	_, err = c.Compact(ctx, Request{Tenant: "t", Session: "s", Model: "sim-small", StepsLeft: -1,
		Proposal: []byte(`{"findings":["merged"],"evidence":["src/webhooks.py","incident-1042"]}`)})
	if groundhog.ErrorCode(err) != groundhog.EPRECONDITION {
		t.Fatalf("err %v, want code precondition", err)
	}
	v, err := db.GetState(ctx, "t", "s")
	if err != nil || v.Version != 2 || v.State.NextStep != "written by the other writer" || v.Author != "other" {
		t.Errorf("newest %+v %v: the concurrent update must stand", v, err)
	}
}
