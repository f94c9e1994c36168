package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// nginx's baseline caches on the body: a repeated body is a hit the
// upstream never sees, another body is another key.
func TestNginxCachesOnTheBody(t *testing.T) {
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(append([]byte(`{"echo":`), append(b, '}')...))
	}))
	defer up.Close()
	ctx := context.Background()
	o := &Options{Dir: t.TempDir()}
	ngx, err := o.startNginx(ctx, up.URL)
	if err != nil {
		t.Fatal(err)
	}
	if ngx == nil {
		t.Skip("nginx is not installed")
	}
	defer ngx.stop()
	one := request{api: APIChat, body: []byte(`{"n":1}`)}
	if err := nginxHits(ctx, ngx, one); err != nil { // two misses' worth of priming, then a hit
		t.Fatal(err)
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("upstream called %d times for one body, want 1", got)
	}
	res, err := request{api: one.api, body: []byte(`{"n":2}`)}.do(ctx, http.DefaultClient, ngx.url, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if st := res.Header.Get("X-Cache-Status"); st != "MISS" || string(b) != `{"echo":{"n":2}}` {
		t.Fatalf("another body: X-Cache-Status %q, body %s; want MISS and its own answer", st, b)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("upstream called %d times for two bodies, want 2", got)
	}
}
