package main

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/storetest"
)

func TestPostgresURLAddsPoolAndTimeoutUnlessSet(t *testing.T) {
	cfg := config.Default()
	cfg.Postgres.MaxConns, cfg.Postgres.StatementTimeout = 7, 1500*time.Millisecond
	for _, tc := range []struct {
		db              string
		pool, timeout   string
		applicationName string
	}{
		{"postgres://u:secret@h:5432/d?sslmode=disable", "7", "1500", "groundhog"},
		{"postgresql://h/d?pool_max_conns=3&statement_timeout=99&application_name=x", "3", "99", "x"},
	} {
		cfg.DB = tc.db
		s, err := postgresURL(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(s)
		q := u.Query()
		if q.Get("pool_max_conns") != tc.pool || q.Get("statement_timeout") != tc.timeout || q.Get("application_name") != tc.applicationName {
			t.Errorf("%s -> %s", tc.db, s)
		}
	}
	for in, want := range map[string]string{
		"postgres://u:secret@h/d":     "postgres://u:xxxxx@h/d",
		"rediss://:secret@r:6380/0":   "rediss://:xxxxx@r:6380/0",
		"./data/100%zz.db":            "./data/100%zz.db",
		"./data/me@host.db":           "./data/me@host.db",
		"postgres://u:secret@h:bad/d": "postgres://u:xxxxx@h:bad/d", // does not parse
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDefaultJournalDirIsPerReplica(t *testing.T) {
	cfg := config.Default()
	cfg.DB = "/var/lib/g.db"
	if got := defaultJournalDir(&cfg); got != "/var/lib/g.db.journal" {
		t.Errorf("sqlite journal = %q", got)
	}
	cfg.DB = "postgres://h/d"
	cfg.Addr = "10.0.0.5:8080"
	a := defaultJournalDir(&cfg)
	cfg.Addr = "10.0.0.5:8081"
	if b := defaultJournalDir(&cfg); a == b || a != "groundhog-10.0.0.5_8080.journal" {
		t.Errorf("postgres journals %q and %q: want one per listen address", a, b)
	}
}

// The pool size and statement timeout put into the URL reach pgxpool and
// the server.
func TestPostgresURLSettingsReachTheServer(t *testing.T) {
	cfg := config.Default()
	cfg.DB = storetest.PostgresURL(t)
	cfg.Postgres.MaxConns, cfg.Postgres.StatementTimeout = 3, 2500*time.Millisecond
	u, err := postgresURL(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if got := pool.Config().MaxConns; got != 3 {
		t.Errorf("MaxConns = %d, want 3", got)
	}
	var v string
	if err := pool.QueryRow(ctx, "SHOW statement_timeout").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "2500ms" {
		t.Errorf("statement_timeout = %q, want 2500ms", v)
	}
}
