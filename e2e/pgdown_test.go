package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog/storetest"
)

// ownPostgres is a PostgreSQL cluster created by the test in a temporary
// directory, on its own port (never the machine's shared server), so the
// test can stop and restart it.
type ownPostgres struct {
	t          *testing.T
	dir, port  string
	asPostgres []string // command prefix: run as the postgres user when we are root
}

func startOwnPostgres(t *testing.T) *ownPostgres {
	t.Helper()
	for _, b := range []string{"initdb", "pg_ctl"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed", b)
		}
	}
	dir, err := os.MkdirTemp("", "gh-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &ownPostgres{t: t, dir: dir}
	if os.Geteuid() == 0 { // PostgreSQL refuses to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		p.asPostgres = []string{"runuser", "-u", "postgres", "--"}
	}
	_, p.port, _ = strings.Cut(freeAddr(t), ":")
	p.run("initdb", "-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres")
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *ownPostgres) run(args ...string) {
	p.t.Helper()
	cmd := exec.Command(append(p.asPostgres, args...)[0], append(p.asPostgres, args...)[1:]...)
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func (p *ownPostgres) start() {
	p.run("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-l", filepath.Join(p.dir, "log"), "-w",
		"-o", fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=off", p.port, p.dir), "start")
}

func (p *ownPostgres) stop() {
	cmd := exec.Command(append(p.asPostgres, "pg_ctl")[0], append(p.asPostgres, "pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "immediate", "-w", "stop")[1:]...)
	_ = cmd.Run() // already stopped is fine
}

func (p *ownPostgres) URL() string {
	return "postgres://postgres@127.0.0.1:" + p.port + "/postgres?sslmode=disable"
}

// PostgreSQL going down: idempotent calls get 503 and are never executed
// (the sim bills nothing); when it returns, the same replica serves them
// again without a restart, exactly once.
func TestPostgresDownRefusesIdempotentCalls(t *testing.T) {
	storetest.PostgresURL(t) // runs with the PostgreSQL tests
	pg := startOwnPostgres(t)
	sim := start(t, nil, "sim")
	gw := start(t, nil, "serve", "--db", pg.URL(), "--upstream", sim.URL+"/v1", "--journal-dir", filepath.Join(t.TempDir(), "j"))
	ctx := context.Background()
	key := func(k string) map[string]string { return map[string]string{"Idempotency-Key": k} }

	if r := post(ctx, gw.URL+"/v1/chat/completions", chat("one"), key("k1")); r.status != 200 {
		t.Fatalf("with PostgreSQL up: status %d, err %v", r.status, r.err)
	}
	billed := simCalls(t, sim.URL)

	pg.stop()
	for i := range 3 {
		r := post(ctx, gw.URL+"/v1/chat/completions", chat("two"), key("k2"))
		if r.err != nil || r.status != 503 || !strings.Contains(string(r.body), `"error"`) {
			t.Fatalf("attempt %d with PostgreSQL down: status %d, err %v, body %s; want a 503 JSON error", i, r.status, r.err, r.body)
		}
	}
	if got := simCalls(t, sim.URL); got != billed {
		t.Fatalf("the sim billed %d calls while the store was down, want 0", got-billed)
	}
	if code, _ := readyz(t, gw.URL); code != 503 {
		t.Errorf("/readyz with PostgreSQL down: %d, want 503", code)
	}

	pg.start()
	first := post(ctx, gw.URL+"/v1/chat/completions", chat("two"), key("k2"))
	again := post(ctx, gw.URL+"/v1/chat/completions", chat("two"), key("k2"))
	if first.status != 200 || again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("after recovery: %d then %d (replayed %q), want 200 then a 200 replay", first.status, again.status, again.header.Get("Idempotent-Replayed"))
	}
	if got := simCalls(t, sim.URL) - billed; got != 1 {
		t.Errorf("after recovery the sim billed %d calls for k2, want exactly 1", got)
	}
}
