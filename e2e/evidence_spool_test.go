package e2e

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An evidence upload killed mid-way (kill -9 of serve) leaves its spool
// file beside the database, not in the system's temporary directory; the
// next start removes it and logs how many it removed.
func TestKilledUploadSpoolSweptAtStart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	key := groundhogKey(t, db, "acme")
	gw := start(t, nil, "serve", "--db", db)
	spool := db + ".spool"
	spooled := func() []string {
		names, _ := filepath.Glob(filepath.Join(spool, "*"))
		return names
	}
	written := func() bool { // a spool file holds some of the body
		for _, name := range spooled() {
			if fi, err := os.Stat(name); err == nil && fi.Size() > 0 {
				return true
			}
		}
		return false
	}

	u, _ := url.Parse(gw.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const size = 64 << 20
	fmt.Fprintf(conn, "POST /groundhog/v1/evidence HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", key, size)
	chunk := []byte(strings.Repeat("evidence line\n", 4096))
	// Send part of the body, until the server has spooled some of it.
	deadline := time.Now().Add(20 * time.Second)
	for sent := 0; !written(); sent += len(chunk) {
		if sent+len(chunk) >= size || time.Now().After(deadline) {
			t.Fatalf("no spool file under %s after %d bytes", spool, sent)
		}
		if _, err := conn.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	gw.kill()
	left := spooled()
	if len(left) != 1 {
		t.Fatalf("after kill -9: spool holds %v, want the one interrupted upload", left)
	}

	again := start(t, nil, "serve", "--db", db)
	if names := spooled(); len(names) != 0 {
		t.Fatalf("after restart: spool still holds %v", names)
	}
	// The line is printed before serve listens; the reader of its output
	// may not have taken it in yet.
	for logged := time.Now().Add(20 * time.Second); ; {
		out := again.output()
		if strings.Contains(out, "evidence spool files left by an interrupted upload removed") && strings.Contains(out, "files=1") {
			break
		}
		if time.Now().After(logged) {
			t.Fatalf("restart did not log the sweep:\n%s", out)
		}
		time.Sleep(10 * time.Millisecond) // polling the output, not waiting for a result
	}
}
