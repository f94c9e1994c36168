package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `serve` with no upstream says it serves from the simulated provider, and
// refuses a non-loopback address while no gateway key exists; once a key
// exists (`keys create`, printed once, stored hashed) it serves that
// address and answers only with a key.
func TestServeKeysAndLoopbackRule(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")

	out, err := exec.Command(binary, "serve", "--db", db, "--addr", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to listen on 0.0.0.0:0 without gateway keys") {
		t.Fatalf("non-loopback without keys: err %v, output %q", err, out)
	}
	// On PostgreSQL the refusal names the database without its password.
	pg := freshPostgres(t)
	u, _ := url.Parse(pg)
	u.User = url.UserPassword("postgres", "s3cret-pw")
	out, err = exec.Command(binary, "serve", "--db", u.String(), "--addr", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to listen") || strings.Contains(string(out), "s3cret-pw") {
		t.Fatalf("non-loopback without keys on PostgreSQL: err %v, output %q", err, out)
	}

	cmd := exec.Command(binary, "keys", "create", "--tenant", "acme", "--db", db)
	key, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(string(key))
	if !strings.HasPrefix(secret, "gh_") || len(secret) < 40 {
		t.Fatalf("keys create printed %q", secret)
	}
	for _, f := range []string{db, db + "-wal"} {
		raw, _ := os.ReadFile(f)
		if strings.Contains(string(raw), secret) || strings.Contains(string(raw), secret[3:]) {
			t.Fatalf("the key secret is stored in clear in %s", f)
		}
	}
	list, err := exec.Command(binary, "keys", "list", "--db", db).Output()
	if err != nil || !strings.Contains(string(list), "acme") || strings.Contains(string(list), secret) {
		t.Fatalf("keys list: %v %q", err, list)
	}

	gw := start(t, nil, "serve", "--db", db)
	body := `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`
	r := post(context.Background(), gw.URL+"/v1/chat/completions", body, nil)
	if r.status != 401 {
		t.Fatalf("no key once keys exist: %d %s", r.status, r.body)
	}
	r = post(context.Background(), gw.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + secret, "Groundhog-Operation": "greet"})
	if r.status != 200 {
		t.Fatalf("with the key: %d %s", r.status, r.body)
	}

	// /metrics counts the call (the test is a loopback client).
	res, err := http.Get(gw.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(m), `groundhog_calls_total{operation="greet",outcome="upstream",tenant="acme"} 1`) {
		t.Fatalf("metrics do not count the call:\n%s", m)
	}
	if strings.Contains(string(m), secret) {
		t.Fatal("a gateway key leaked into /metrics")
	}
}

// With no upstream configured, serve says it uses the simulated provider.
func TestServeAnnouncesSimulatedProvider(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "serve", "--db", filepath.Join(dir, "g.db"), "--addr", "127.0.0.1:0")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "listening on") {
		n, err := stdout.Read(buf)
		if err != nil {
			t.Fatalf("serve output ended: %q (%v)", got.String(), err)
		}
		got.Write(buf[:n])
	}
	if !strings.Contains(got.String(), "no upstream configured: serving from the built-in simulated provider") {
		t.Fatalf("startup output: %q", got.String())
	}
}

// A gateway key declared in the configuration file by its SHA-256 serves
// its tenant; the secret itself is never in the file.
func TestConfigFileKey(t *testing.T) {
	dir := t.TempDir()
	secret := "gh_config_declared_secret_0123456789abcdef"
	sum := sha256.Sum256([]byte(secret))
	cfg := filepath.Join(dir, "g.yaml")
	if err := os.WriteFile(cfg, []byte("keys:\n  - {tenant: globex, sha256: "+hex.EncodeToString(sum[:])+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := start(t, nil, "serve", "--config", cfg, "--db", filepath.Join(dir, "g.db"))
	body := `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`
	if r := post(context.Background(), gw.URL+"/v1/chat/completions", body, nil); r.status != 401 {
		t.Fatalf("without the key: %d", r.status)
	}
	r := post(context.Background(), gw.URL+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + secret})
	if r.status != 200 {
		t.Fatalf("with the configured key: %d %s", r.status, r.body)
	}
}

// keys revoke: the revoked key stops working (the gateway re-reads keys
// within 10 s; a fresh gateway at once).
func TestKeysRevoke(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	secret, err := exec.Command(binary, "keys", "create", "--tenant", "acme", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(secret))
	id := key[:len("gh_")+8]
	if out, err := exec.Command(binary, "keys", "revoke", id, "--db", db).CombinedOutput(); err != nil || !strings.Contains(string(out), "revoked 1 key") {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if out, err := exec.Command(binary, "keys", "revoke", id, "--db", db).CombinedOutput(); err == nil {
		t.Fatalf("revoking twice succeeded: %s", out)
	}
	groundhogKey(t, db, "other") // keep the gateway in keyed mode
	gw := start(t, nil, "serve", "--db", db)
	r := post(context.Background(), gw.URL+"/v1/chat/completions", `{"model":"sim-small","messages":[]}`, map[string]string{"Authorization": "Bearer " + key})
	if r.status != 401 {
		t.Fatalf("revoked key: %d %s", r.status, r.body)
	}
}

// groundhogKey creates a key for tenant with the CLI and returns it.
func groundhogKey(t *testing.T, db, tenant string) string {
	t.Helper()
	out, err := exec.Command(binary, "keys", "create", "--tenant", tenant, "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// keys list and keys revoke on a SQLite file that does not exist (a typo in
// --db) name the missing file and create nothing, as report does; keys
// create still creates the database (keys may be made before the first
// serve).
func TestKeysListAndRevokeRefuseMissingDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "typo.db")
	for _, args := range [][]string{{"keys", "list", "--db", db}, {"keys", "revoke", "gh_0123", "--db", db}, {"report", "--db", db}} {
		out, err := exec.Command(binary, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "database "+db+": stat "+db+": no such file or directory") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("%v created %s", args, db)
		}
	}
	groundhogKey(t, db, "acme")
	if out, err := exec.Command(binary, "keys", "list", "--db", db).CombinedOutput(); err != nil || !strings.Contains(string(out), "acme") {
		t.Fatalf("keys list after create: %v\n%s", err, out)
	}
}

// groundhog prices MODEL for an unknown model prints "unknown" once, on
// stdout, and exits 1 (README: two lines with `; echo $?`), with no second
// "groundhog: unknown model" on stderr.
func TestPricesUnknownModelSaysItOnce(t *testing.T) {
	cmd := exec.Command(binary, "prices", "gpt-9")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1", err)
	}
	if want := "gpt-9: unknown (in neither the built-in table, prices_file nor prices:)\n"; stdout.String() != want || stderr.String() != "" {
		t.Fatalf("stdout %q (want %q), stderr %q (want none)", stdout.String(), want, stderr.String())
	}
}
