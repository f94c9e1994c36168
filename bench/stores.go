package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
)

// stores gives each gateway the run measures its own databases: a SQLite
// file in the run's directory by default; with Options.Database, a schema
// of its own in that PostgreSQL database; with Options.Redis, a key prefix
// of its own in that Redis as the cache's shared tier. What it created is
// removed when the run ends.
type stores struct {
	o       *Options
	run     string   // names this run's schemas and prefixes
	schemas []string // created in Options.Database
	pg      *pgx.Conn
	rdb     *goredis.Client
	prefix  []string // key prefixes given out in Options.Redis
}

func newStores(ctx context.Context, o *Options) (*stores, error) {
	st := &stores{o: o, run: fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano())}
	if o.Database != "" {
		if !strings.HasPrefix(o.Database, "postgres://") && !strings.HasPrefix(o.Database, "postgresql://") {
			return nil, fmt.Errorf("--db: want a postgres:// URL (the default is a SQLite file per gateway)")
		}
		u, err := url.Parse(o.Database)
		if err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
		if u.Query().Has("search_path") {
			return nil, fmt.Errorf("--db: remove search_path: every gateway gets a schema of its own")
		}
		if st.pg, err = pgx.Connect(ctx, o.Database); err != nil {
			return nil, fmt.Errorf("--db: %w", err)
		}
	}
	if o.Redis != "" {
		opt, err := goredis.ParseURL(o.Redis)
		if err != nil {
			st.close()
			return nil, fmt.Errorf("--cache: %w", err)
		}
		st.rdb = goredis.NewClient(opt)
		if err := st.rdb.Ping(ctx).Err(); err != nil {
			st.close()
			return nil, fmt.Errorf("--cache: %w", err)
		}
	}
	return st, nil
}

// label names the stores in the report.
func (st *stores) label() string {
	db := "SQLite (a file per gateway)"
	if st.pg != nil {
		db = "PostgreSQL (a schema per gateway)"
	}
	if st.rdb != nil {
		return db + ", Redis cache tier (a key prefix per gateway)"
	}
	return db
}

// cacheStore names where a hit past the memory tier is read from.
func (st *stores) cacheStore() string {
	if st.rdb != nil {
		return "Redis"
	}
	return "the database"
}

// args returns serve's store arguments for the gateway called name.
func (st *stores) args(ctx context.Context, name string) ([]string, error) {
	id := strings.ReplaceAll(name, "-", "_")
	var args []string
	if st.pg == nil {
		args = append(args, "--db", st.o.Dir+"/"+name+".db")
	} else {
		schema := "groundhog_bench_" + st.run + "_" + id
		if _, err := st.pg.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return nil, fmt.Errorf("--db: create schema %s: %w", schema, err)
		}
		st.schemas = append(st.schemas, schema)
		u, _ := url.Parse(st.o.Database)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		args = append(args, "--db", u.String())
	}
	if st.rdb != nil {
		p := "groundhog-bench-" + st.run + "-" + name + ":"
		st.prefix = append(st.prefix, p)
		args = append(args, "--cache", st.o.Redis, "--redis-prefix", p)
	}
	return args, nil
}

// storeProcs are the command names of the local servers whose CPU counts
// as the stores' (procCPU), by what the run uses.
func (st *stores) storeProcs() []string {
	var names []string
	if st.pg != nil {
		names = append(names, "postgres")
	}
	if st.rdb != nil {
		names = append(names, "redis-server")
	}
	return names
}

// measured reports whether the run uses PostgreSQL or Redis servers that
// run on this machine, whose CPU the report can then show.
func (st *stores) measured() bool {
	return len(st.storeProcs()) > 0 && st.cpu() > 0
}

// cpu returns the CPU time of every local process of the stores in use:
// the PostgreSQL server's backends and its own workers, Redis. Other work
// those servers do meanwhile counts too.
func (st *stores) cpu() time.Duration {
	want := st.storeProcs()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil || !slices.Contains(want, strings.TrimSpace(string(comm))) {
			continue
		}
		if d, err := procCPU(pid); err == nil {
			total += d
		}
	}
	return total
}

// close drops the schemas and deletes the keys the run made.
func (st *stores) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st.pg != nil {
		for _, s := range st.schemas {
			if _, err := st.pg.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
				fmt.Fprintf(st.o.Log, "bench: drop schema %s: %v\n", s, err)
			}
		}
		st.pg.Close(ctx)
	}
	if st.rdb != nil {
		for _, p := range st.prefix {
			it := st.rdb.Scan(ctx, 0, p+"*", 1000).Iterator()
			var keys []string
			for it.Next(ctx) {
				keys = append(keys, it.Val())
				if len(keys) == 1000 {
					st.rdb.Del(ctx, keys...)
					keys = keys[:0]
				}
			}
			if len(keys) > 0 {
				st.rdb.Del(ctx, keys...)
			}
		}
		st.rdb.Close()
	}
}
