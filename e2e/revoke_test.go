package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A gateway key created with `groundhog keys create --db postgres://…`
// works on every replica at once, and `keys revoke` reaches every replica
// within the gateway's key-cache TTL (10 s).
func TestKeyCreatedAndRevokedOnPostgresReachesEveryReplica(t *testing.T) {
	pg := freshPostgres(t)
	out, err := exec.Command(binary, "keys", "create", "--tenant", "acme", "--db", pg).Output()
	if err != nil {
		t.Fatalf("keys create: %v", err)
	}
	secret := strings.TrimSpace(string(out))
	// A second key stays: revoking the only key would put the gateways in
	// keyless (single-tenant) mode, where any key is accepted on loopback.
	if err := exec.Command(binary, "keys", "create", "--tenant", "other", "--db", pg).Run(); err != nil {
		t.Fatalf("keys create: %v", err)
	}
	dir := t.TempDir()
	var replicas []*proc
	for _, j := range []string{"a", "b"} {
		replicas = append(replicas, start(t, nil, "serve", "--db", pg, "--journal-dir", filepath.Join(dir, j)))
	}
	ctx := context.Background()
	auth := map[string]string{"Authorization": "Bearer " + secret}
	for i, r := range replicas {
		if res := post(ctx, r.URL+"/v1/chat/completions", chat("hello"), auth); res.status != 200 {
			t.Fatalf("replica %d with the new key: status %d", i, res.status)
		}
	}
	list, err := exec.Command(binary, "keys", "list", "--db", pg).Output()
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, line := range strings.Split(string(list), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[1] == "acme" {
			id = f[0]
		}
	}
	if out, err := exec.Command(binary, "keys", "revoke", id, "--db", pg).CombinedOutput(); err != nil {
		t.Fatalf("keys revoke: %v\n%s", err, out)
	}
	revoked := time.Now()
	const keyCacheTTL = 10 * time.Second
	for i, r := range replicas {
		for {
			res := post(ctx, r.URL+"/v1/chat/completions", chat("hello"), auth)
			if res.status == 401 {
				break
			}
			if time.Since(revoked) > keyCacheTTL+2*time.Second {
				t.Fatalf("replica %d still accepts the revoked key after %s (status %d)", i, time.Since(revoked), res.status)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
