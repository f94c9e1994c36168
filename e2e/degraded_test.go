package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog/storetest"
)

// ownRedis is a redis-server started by the test on its own port (never
// the machine's shared one), so the test can stop and restart it.
type ownRedis struct {
	t    *testing.T
	addr string
	cmd  *exec.Cmd
}

func startOwnRedis(t *testing.T, addr string) *ownRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(bin, "--bind", host, "--port", port, "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &ownRedis{t: t, addr: addr, cmd: cmd}
	t.Cleanup(r.stop)
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("own redis-server did not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r
}

func (r *ownRedis) stop() {
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	_ = r.cmd.Wait()
}

func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	res, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		Status string `json:"status"`
	}
	b, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(b, &v)
	return res.StatusCode, v.Status
}

// metric is the value of the unlabelled series name on base's /metrics, ""
// when it has none.
func metric(tb testing.TB, base, name string) string {
	tb.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// Redis going down degrades the cache to each replica's memory tier:
// requests are still served (and cached in memory), /readyz says degraded,
// the metric is set; when Redis returns, the shared tier is used again
// without a restart.
func TestRedisDownDegradesToMemoryTier(t *testing.T) {
	storetest.RedisURL(t) // runs with the Redis tests
	addr := freeAddr(t)
	rs := startOwnRedis(t, addr)
	gw := start(t, nil, "serve", "--db", filepath.Join(t.TempDir(), "g.db"), "--cache", "redis://"+addr+"/0", "--redis-prefix", "deg:")
	ctx := context.Background()
	use := map[string]string{"Groundhog-Cache": "use"}
	call := func(content string) result {
		t.Helper()
		r := post(ctx, gw.URL+"/v1/chat/completions", chat(content), use)
		if r.err != nil || r.status != 200 {
			t.Fatalf("call %q: status %d, err %v, body %s", content, r.status, r.err, r.body)
		}
		return r
	}
	call("before")
	if got := call("before").header.Get("Groundhog-Cache"); got != "hit" {
		t.Fatalf("second call with Redis up: %q, want hit", got)
	}

	rs.stop()
	if got := call("during").header.Get("Groundhog-Cache"); got != "miss" {
		t.Errorf("first call with Redis down: %q, want miss", got)
	}
	if got := call("during").header.Get("Groundhog-Cache"); got != "hit" {
		t.Errorf("repeat with Redis down: %q, want hit from the memory tier", got)
	}
	if code, status := readyz(t, gw.URL); code != 200 || status != "degraded" {
		t.Errorf("/readyz with Redis down: %d %q, want 200 degraded", code, status)
	}
	if v := metric(t, gw.URL, "groundhog_cache_redis_degraded"); v != "1" {
		t.Errorf("groundhog_cache_redis_degraded = %q, want 1", v)
	}

	startOwnRedis(t, addr)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, status := readyz(t, gw.URL); status == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not leave the degraded mode after Redis returned")
		}
		time.Sleep(50 * time.Millisecond)
	}
	call("after")
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	keys, err := c.Keys(ctx, "deg:c:*").Result()
	if err != nil || len(keys) != 1 {
		t.Errorf("Redis keys after recovery = %v, %v; want the one entry written after it", keys, err)
	}
	if v := metric(t, gw.URL, "groundhog_cache_redis_degraded"); v != "0" {
		t.Errorf("groundhog_cache_redis_degraded after recovery = %q, want 0", v)
	}
}

// A replica started while Redis is down starts degraded (it serves from its
// memory tier) and joins Redis when it answers.
func TestServeStartsDegradedWhileRedisIsDown(t *testing.T) {
	storetest.RedisURL(t)
	addr := freeAddr(t) // nothing listens there yet
	gw := start(t, nil, "serve", "--db", filepath.Join(t.TempDir(), "g.db"), "--cache", "redis://"+addr+"/0", "--redis-prefix", "deg:")
	if code, status := readyz(t, gw.URL); code != 200 || status != "degraded" {
		t.Errorf("/readyz with Redis never up: %d %q, want 200 degraded", code, status)
	}
	ctx := context.Background()
	use := map[string]string{"Groundhog-Cache": "use"}
	for i, want := range []string{"miss", "hit"} {
		r := post(ctx, gw.URL+"/v1/chat/completions", chat("no redis yet"), use)
		if r.status != 200 || r.header.Get("Groundhog-Cache") != want {
			t.Fatalf("call %d: status %d, Groundhog-Cache %q; want 200 %s", i, r.status, r.header.Get("Groundhog-Cache"), want)
		}
	}
	startOwnRedis(t, addr)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, status := readyz(t, gw.URL); status == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateway did not join Redis once it answered")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := post(ctx, gw.URL+"/v1/chat/completions", chat("redis now"), use); r.status != 200 {
		t.Fatalf("status %d", r.status)
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	if keys, err := c.Keys(ctx, "deg:c:*").Result(); err != nil || len(keys) != 1 {
		t.Errorf("Redis keys = %v, %v; want the entry written after Redis came up", keys, err)
	}
}
