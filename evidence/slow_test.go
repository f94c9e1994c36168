package evidence_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog/evidence"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// An upload whose body stalls is cut off by the server's body-rate guard and
// answered 408, as every other endpoint answers a slow body — raw and
// multipart alike.
func TestSlowUploadIs408(t *testing.T) {
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ev.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mux := http.NewServeMux()
	evidence.New(db, evidence.Limits{}, nil).Register(mux, testAuth)
	srv := httptest.NewServer(httpguard.Handler(mux, httpguard.Options{BodyGrace: 100 * time.Millisecond, MinBodyRate: 1000}))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ name, ct, start string }{
		{"raw", "text/plain", "hello"},
		{"multipart", "multipart/form-data; boundary=b", "--b\r\nContent-Type: text/plain\r\n\r\nhello"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Headers and a few bytes, then nothing: the rest never comes.
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nContent-Type: %s\r\nContent-Length: 100000\r\n\r\n%s",
				evidence.Path, c.ct, c.start)
			_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // bounds a hang only
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("stalled upload: status %d, want 408", res.StatusCode)
			}
		})
	}
}
