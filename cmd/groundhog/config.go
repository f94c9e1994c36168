package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/groundhog-ai/groundhog/config"
)

// configFlags are the flags every subcommand that reads the configuration
// shares. Precedence: defaults < --config file < GROUNDHOG_* env < flags.
type configFlags struct {
	file string
	cfg  config.Config // flag targets; only flags the user set are applied
}

func addConfigFlags(fs *pflag.FlagSet, cf *configFlags) {
	d := config.Default()
	fs.StringVar(&cf.file, "config", "", "YAML configuration file (optional)")
	fs.StringVar(&cf.cfg.DB, "db", d.DB, "SQLite database file, or a postgres:// URL (several replicas share one PostgreSQL)")
	fs.Int32Var(&cf.cfg.Postgres.MaxConns, "db-max-conns", d.Postgres.MaxConns, "PostgreSQL connection pool size of this process")
	fs.DurationVar(&cf.cfg.Postgres.StatementTimeout, "db-statement-timeout", d.Postgres.StatementTimeout, "PostgreSQL statement_timeout (0: the server's)")
	fs.DurationVar(&cf.cfg.Postgres.LedgerRetention, "ledger-retention", d.Postgres.LedgerRetention, "PostgreSQL: drop ledger days older than this, e.g. 2160h (0: keep all)")
}

// upstreamUnset records that the last load found no upstream in the file,
// the environment or the flags (serve says so at start).
var upstreamUnset bool

// load builds the effective configuration of cmd.
func (cf *configFlags) load(cmd *cobra.Command) (*config.Config, error) {
	c := config.Default()
	c.Upstream = "" // so that "no upstream configured" can be told from "upstream: sim"
	if cf.file != "" {
		if err := c.LoadFile(cf.file); err != nil {
			return nil, err
		}
	}
	if err := c.LoadEnv(os.Getenv); err != nil {
		return nil, err
	}
	fs := cmd.Flags()
	set := func(name string, apply func()) {
		if fs.Changed(name) {
			apply()
		}
	}
	set("db", func() { c.DB = cf.cfg.DB })
	set("db-max-conns", func() { c.Postgres.MaxConns = cf.cfg.Postgres.MaxConns })
	set("db-statement-timeout", func() { c.Postgres.StatementTimeout = cf.cfg.Postgres.StatementTimeout })
	set("ledger-retention", func() { c.Postgres.LedgerRetention = cf.cfg.Postgres.LedgerRetention })
	set("cache", func() { c.Cache.Backend = cf.cfg.Cache.Backend })
	set("redis-prefix", func() { c.Cache.RedisPrefix = cf.cfg.Cache.RedisPrefix })
	set("redis-max-entry-bytes", func() { c.Cache.RedisMaxEntryBytes = cf.cfg.Cache.RedisMaxEntryBytes })
	set("addr", func() { c.Addr = cf.cfg.Addr })
	set("upstream", func() { c.Upstream = cf.cfg.Upstream })
	set("anthropic-upstream", func() { c.AnthropicUpstream = cf.cfg.AnthropicUpstream })
	set("max-body-bytes", func() { c.MaxBodyBytes = cf.cfg.MaxBodyBytes })
	set("upstream-timeout", func() { c.UpstreamTimeout = cf.cfg.UpstreamTimeout })
	set("log-format", func() { c.LogFormat = cf.cfg.LogFormat })
	set("otlp-endpoint", func() { c.OTLPEndpoint = cf.cfg.OTLPEndpoint })
	set("metrics-token", func() { c.MetricsToken = cf.cfg.MetricsToken })
	set("log-level", func() { c.LogLevel = cf.cfg.LogLevel })
	set("cache-memory-bytes", func() { c.Cache.MemoryBytes = cf.cfg.Cache.MemoryBytes })
	set("journal-dir", func() { c.Ledger.JournalDir = cf.cfg.Ledger.JournalDir })
	set("lease", func() { c.Idempotency.Lease = cf.cfg.Idempotency.Lease })
	set("retention", func() { c.Idempotency.Retention = cf.cfg.Idempotency.Retention })
	upstreamUnset = c.Upstream == ""
	if err := c.Finish(); err != nil {
		return nil, err
	}
	return &c, nil
}

// openStore opens the database (SQLite or PostgreSQL) of cmd's effective
// configuration.
func (cf *configFlags) openStore(cmd *cobra.Command) (database, error) {
	cfg, err := cf.load(cmd)
	if err != nil {
		return nil, err
	}
	return openDatabase(cmd.Context(), cfg)
}

// openExistingStore is openStore for a command that only reads or removes:
// sqlite.Open would create an empty database, so a typo in --db would list
// no keys (or find none to revoke) instead of naming the missing file.
func (cf *configFlags) openExistingStore(cmd *cobra.Command) (database, error) {
	cfg, err := cf.load(cmd)
	if err != nil {
		return nil, err
	}
	if err := databaseExists(cfg); err != nil {
		return nil, err
	}
	return openDatabase(cmd.Context(), cfg)
}

// databaseExists checks that cfg's SQLite database file exists (a
// PostgreSQL database is not checked).
func databaseExists(cfg *config.Config) error {
	if isPostgresURL(cfg.DB) {
		return nil
	}
	if _, err := os.Stat(cfg.DB); err != nil {
		return fmt.Errorf("database %s: %w", cfg.DB, err)
	}
	return nil
}

func newLogger(level string) (*slog.Logger, error) {
	return newFormatLogger(level, "text")
}

// newFormatLogger logs to stderr at level, as text or JSON lines.
func newFormatLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
}
