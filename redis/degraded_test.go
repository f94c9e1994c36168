package redis_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/wake"
	"github.com/groundhog-ai/groundhog/redis"
	"github.com/groundhog-ai/groundhog/storetest"
)

// ownRedis starts a redis-server of the test's own on addr (never the
// shared one) and returns a function that kills it.
func ownRedis(t *testing.T, addr string) func() {
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
	stop := func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			t.Fatal("own redis-server did not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return stop
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Down: cache calls answer at once (miss / no-op), wake-ups stay local;
// back: the cache and cross-process wake-ups work again without a new DB.
func TestDegradedModeAndRecovery(t *testing.T) {
	storetest.RedisURL(t)
	ctx := context.Background()
	addr := freeAddr(t)
	url := "redis://" + addr + "/0"
	if _, err := redis.Open(ctx, url, redis.Options{}); groundhog.ErrorCode(err) != groundhog.EUNAVAILABLE {
		t.Fatalf("Open without StartDegraded and no Redis: %v, want EUNAVAILABLE", err)
	}
	db, err := redis.Open(ctx, url, redis.Options{StartDegraded: true})
	if err != nil {
		t.Fatalf("Open with StartDegraded: %v", err)
	}
	defer db.Close()
	if !db.Degraded() {
		t.Fatal("not degraded with Redis down")
	}
	now := time.Now()
	e := &groundhog.CacheEntry{Tenant: "t", RequestHash: "sha256:d", CreatedAt: now, ExpiresAt: now.Add(time.Hour),
		Response: groundhog.Response{Status: 200, Body: []byte(`{}`)}}
	if err := db.PutCache(ctx, e); err != nil {
		t.Errorf("PutCache while degraded: %v, want nil (memory tier keeps it)", err)
	}
	if _, err := db.GetCache(ctx, "t", "sha256:d", now); !groundhog.IsNotFound(err) {
		t.Errorf("GetCache while degraded: %v, want ENOTFOUND", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	local := wake.IdemNotifier{T: db}.Subscribe(sctx, "t", "k0")
	wake.IdemNotifier{T: db}.Notify("t", "k0")
	select {
	case <-local:
	case <-time.After(10 * time.Second):
		t.Fatal("a wake-up while degraded did not reach this process's waiter")
	}

	ownRedis(t, addr)
	other, err := redis.Open(ctx, url, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for deadline := time.Now().Add(20 * time.Second); db.Degraded(); {
		if time.Now().After(deadline) {
			t.Fatal("still degraded 20 s after Redis came up")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := db.PutCache(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := other.GetCache(ctx, "t", "sha256:d", now); err != nil {
		t.Errorf("entry written after recovery not in Redis: %v", err)
	}
	// The subscription made while Redis was down is in place now: a
	// Notify from another process wakes this one (retried, since the
	// resubscription completes in the background).
	woken := wake.IdemNotifier{T: db}.Subscribe(sctx, "t", "k1")
	for deadline := time.Now().Add(20 * time.Second); ; {
		wake.IdemNotifier{T: other}.Notify("t", "k1")
		select {
		case <-woken:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no cross-process wake-up after recovery")
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the goroutines of a DB.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// go-redis's own lines (a failed dial, twice a second while Redis is down)
// go to the DB's Logger at debug level, not as plain lines to stderr
// around the log format: the degraded mode is logged once at warn level.
func TestLibraryLogGoesToTheLogger(t *testing.T) {
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db, err := redis.Open(context.Background(), "redis://"+freeAddr(t)+"/0", redis.Options{StartDegraded: true, Logger: log})
	if err != nil {
		t.Fatalf("Open with StartDegraded: %v", err)
	}
	defer db.Close()
	out := buf.String()
	if !strings.Contains(out, `"level":"DEBUG","msg":"redis: connection pool: failed to dial`) ||
		!strings.Contains(out, `"source":"go-redis"`) {
		t.Fatalf("go-redis's dial failure is not in the DB's log at debug level:\n%s", out)
	}
	if strings.Count(out, `"level":"WARN"`) != 1 {
		t.Fatalf("want one warning for the degraded mode:\n%s", out)
	}
}

// A Redis URL that does not parse is refused without quoting it: the
// password it holds stays out of the error (serve prints it).
func TestOpenInvalidURLHidesPassword(t *testing.T) {
	_, err := redis.Open(context.Background(), "redis://:REDISPW@127.0.0.1:badport/0", redis.Options{})
	if groundhog.ErrorCode(err) != groundhog.EINVALID || strings.Contains(err.Error(), "REDISPW") || !strings.Contains(err.Error(), "invalid port") {
		t.Fatalf("Open: %v; want EINVALID naming the port, without the password", err)
	}
}
