package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startListening runs `groundhog args... --addr listen` and waits until it
// answers /healthz on 127.0.0.1 at listen's port: a gateway bound beyond
// loopback, reached as any client would.
func startListening(t *testing.T, listen string, args ...string) *proc {
	t.Helper()
	_, port, _ := net.SplitHostPort(listen)
	cmd := exec.Command(binary, append(args, "--addr", listen)...)
	p := &proc{t: t, cmd: cmd, URL: "http://127.0.0.1:" + port, done: make(chan struct{})}
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if res, err := http.Get(p.URL + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return p
			}
		}
		if p.exited() {
			t.Fatalf("groundhog %v exited before serving", args)
		}
		if time.Now().After(deadline) {
			t.Fatalf("groundhog %v not healthy in 30s", args)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func getWithKey(url, key string) int {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestRevokingTheLastKeyKeepsAPublicGatewayClosed: a
// gateway on 0.0.0.0 that started with one key; `keys revoke` of that key
// must never make it serve keyless. The loop runs until the revoked key
// itself is refused (the gateway remembers a found key for up to 10 s);
// until then, and after, no request without a key may get through.
func TestRevokingTheLastKeyKeepsAPublicGatewayClosed(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	secret := groundhogKey(t, db, "alice")
	_, port, _ := net.SplitHostPort(freeAddr(t))
	gw := startListening(t, "0.0.0.0:"+port, "serve", "--db", db)
	body := `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`
	chat := gw.URL + "/v1/chat/completions"
	if r := post(context.Background(), chat, body, map[string]string{"Authorization": "Bearer " + secret}); r.status != 200 {
		t.Fatalf("with the key: %d %s", r.status, r.body)
	}
	if r := post(context.Background(), chat, body, nil); r.status != 401 {
		t.Fatalf("without a key: %d", r.status)
	}
	if out, err := exec.Command(binary, "keys", "revoke", secret[:len("gh_")+16], "--db", db).CombinedOutput(); err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r := post(context.Background(), chat, body, nil); r.status != 401 {
			t.Fatalf("after revoking the last key, a request without a key got %d %s", r.status, r.body)
		}
		if code := getWithKey(gw.URL+"/groundhog/v1/report", ""); code != 401 {
			t.Fatalf("after revoking the last key, the report without a key got %d", code)
		}
		r := post(context.Background(), chat, body, map[string]string{"Authorization": "Bearer " + secret})
		if r.status == 401 {
			break // the revoked key is refused: the gateway has seen the revocation
		}
		if time.Now().After(deadline) {
			t.Fatalf("the revoked key still answers %d after 30 s", r.status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, key := range []string{"", "gh_any_key_at_all", secret} {
		if r := post(context.Background(), chat, body, map[string]string{"Authorization": "Bearer " + key}); r.status != 401 {
			t.Fatalf("key %q after the revocation: %d %s", key, r.status, r.body)
		}
	}
}

// TestKeysRevokeRefusesAmbiguousAndConfigIDs: key IDs carry 16 hex digits;
// a prefix matching several keys revokes nothing and says why; a key
// declared in the config file is refused with the advice to remove its
// line (revoking it in the store would last until the next start).
func TestKeysRevokeRefusesAmbiguousAndConfigIDs(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	a, b := groundhogKey(t, db, "alice"), groundhogKey(t, db, "bob")
	list, err := exec.Command(binary, "keys", "list", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{a, b} {
		if !strings.Contains(string(list), k[:len("gh_")+16]+"…") {
			t.Fatalf("keys list does not show the 16-hex-digit id of %s…:\n%s", k[:11], list)
		}
	}
	out, err := exec.Command(binary, "keys", "revoke", "gh_", "--db", db).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "ambiguous") || !strings.Contains(string(out), "nothing revoked") {
		t.Fatalf("revoke of a prefix matching two keys: %v %s", err, out)
	}
	list2, _ := exec.Command(binary, "keys", "list", "--db", db).Output()
	if strings.Count(string(list2), "gh_") != 2 {
		t.Fatalf("an ambiguous revoke removed a key:\n%s", list2)
	}
	if out, err := exec.Command(binary, "keys", "revoke", a[:len("gh_")+16], "--db", db).CombinedOutput(); err != nil || !strings.Contains(string(out), "revoked 1 key") {
		t.Fatalf("revoke by id: %v %s", err, out)
	}

	// A config-declared key, stored by serve at start.
	sum := sha256.Sum256([]byte("gh_config_declared_secret_for_revoke"))
	hash := hex.EncodeToString(sum[:])
	cfg := filepath.Join(dir, "g.yaml")
	if err := os.WriteFile(cfg, []byte("keys:\n  - {tenant: globex, sha256: "+hash+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := start(t, nil, "serve", "--config", cfg, "--db", db)
	gw.kill()
	out, err = exec.Command(binary, "keys", "revoke", "cfg-"+hash[:8], "--db", db).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "configuration file") || !strings.Contains(string(out), "Remove its line") {
		t.Fatalf("revoke of a config key: %v %s", err, out)
	}
	list3, _ := exec.Command(binary, "keys", "list", "--db", db).Output()
	if !strings.Contains(string(list3), "cfg-"+hash[:16]) {
		t.Fatalf("the config key is gone after a refused revoke:\n%s", list3)
	}
}

// reportCalls runs `groundhog report --format json` on db and returns the
// total's calls.
func reportCalls(t *testing.T, args ...string) int64 {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"report", "--format", "json"}, args...)...).Output()
	if err != nil {
		t.Fatalf("report: %v %s", err, out)
	}
	var rep struct {
		Total struct {
			Calls int64 `json:"calls"`
		} `json:"total"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report output: %v %s", err, out)
	}
	return rep.Total.Calls
}

// TestReportIncludesEveryAnsweredCall: right after N
// answered calls — no wait — `groundhog report` on the running gateway's
// database and GET /groundhog/v1/report both count N. The gateway's
// commit interval is set to an hour so the rows are certainly still only in
// its journal; each call is counted once after the commit too.
func TestReportIncludesEveryAnsweredCall(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	cfg := filepath.Join(dir, "g.yaml")
	if err := os.WriteFile(cfg, []byte("ledger:\n  flush_interval: 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := start(t, nil, "serve", "--config", cfg, "--db", db)
	const n = 6
	for i := range n {
		body := fmt.Sprintf(`{"model":"sim-small","messages":[{"role":"user","content":"call %d"}]}`, i%4)
		if r := post(context.Background(), gw.URL+"/v1/chat/completions", body, nil); r.status != 200 {
			t.Fatalf("call %d: %d %s", i, r.status, r.body)
		}
	}
	if got := reportCalls(t, "--db", db); got != n {
		t.Fatalf("groundhog report right after %d calls: %d calls", n, got)
	}
	res, err := http.Get(gw.URL + "/groundhog/v1/report")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Total struct {
			Calls int64 `json:"calls"`
		} `json:"total"`
	}
	err = json.NewDecoder(res.Body).Decode(&rep)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET report: %d %v", res.StatusCode, err)
	}
	if rep.Total.Calls != n {
		t.Fatalf("GET /groundhog/v1/report right after %d calls: %d calls", n, rep.Total.Calls)
	}
	// Now committed (the GET flushed): the CLI still counts each call once.
	if got := reportCalls(t, "--db", db); got != n {
		t.Fatalf("groundhog report after the commit: %d calls, want %d", got, n)
	}
}

// TestAnalyzeLargeCostsCLI: three
// identical lines with cost_usd 200000 project exactly $12,000,000.
func TestAnalyzeLargeCostsCLI(t *testing.T) {
	line := `{"timestamp":"2025-03-14T10:00:0%dZ","operation":"op","request":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"a"}]},"cost_usd":200000}`
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, line+"\n", i)
	}
	f := filepath.Join(t.TempDir(), "calls.jsonl")
	if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "analyze", f, "--format", "json").Output()
	if err != nil {
		t.Fatalf("analyze: %v %s", err, out)
	}
	for _, want := range []string{`"projected_30d_usd": 12000000.000000`, `"spend_usd": 600000.000000`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("analyze output lacks %s:\n%s", want, out)
		}
	}
}
