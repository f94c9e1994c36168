package main

import (
	"net/url"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/config"
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
	if got := redact("postgres://u:secret@h/d"); got != "postgres://u:xxxxx@h/d" {
		t.Errorf("redact = %q", got)
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
