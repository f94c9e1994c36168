package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The store settings layer like every other: file < GROUNDHOG_DB /
// GROUNDHOG_CACHE; a cache backend that is neither memory nor Redis is
// refused.
func TestStoreSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "g.yaml")
	if err := os.WriteFile(file, []byte(`
db: postgres://file@db/groundhog
cache: {backend: "redis://file:6379/0", redis_prefix: "team-a:", redis_max_entry_bytes: 1048576}
postgres: {max_conns: 50, statement_timeout: 3s}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Default()
	if c.Cache.Backend != "memory" || c.Cache.RedisMaxEntryBytes != 4<<20 || c.Postgres.MaxConns <= 0 {
		t.Fatalf("defaults: backend %q, max entry %d, pool %d", c.Cache.Backend, c.Cache.RedisMaxEntryBytes, c.Postgres.MaxConns)
	}
	if err := c.LoadFile(file); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GROUNDHOG_DB": "postgres://env@db/groundhog", "GROUNDHOG_CACHE": "rediss://env:6380/1"}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.DB != env["GROUNDHOG_DB"] || c.Cache.Backend != env["GROUNDHOG_CACHE"] {
		t.Errorf("env must override the file: db %q cache %q", c.DB, c.Cache.Backend)
	}
	if c.Cache.RedisPrefix != "team-a:" || c.Cache.RedisMaxEntryBytes != 1<<20 || c.Postgres.MaxConns != 50 || c.Postgres.StatementTimeout != 3*time.Second {
		t.Errorf("file settings lost: %+v %+v", c.Cache, c.Postgres)
	}

	for _, bad := range []string{"memcached://x", "redis", "http://redis:6379"} {
		c := Default()
		c.Cache.Backend = bad
		if err := c.Finish(); err == nil {
			t.Errorf("cache backend %q accepted", bad)
		}
	}
	c = Default()
	c.Cache.Backend = ""
	if err := c.Finish(); err != nil || c.Cache.Backend != "memory" {
		t.Errorf("empty backend: %v, %q; want memory", err, c.Cache.Backend)
	}
}
