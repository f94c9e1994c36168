// Package e2e holds tests that run groundhog as real processes: they build
// the binary once, start `groundhog serve` and `groundhog sim`, talk to
// them over loopback HTTP, and kill them with SIGKILL.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "groundhog-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "groundhog")
	build := exec.Command("go", "build", "-o", binary, "../cmd/groundhog")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building groundhog:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sourcesStated: start stats the module's files once per test binary.
var sourcesStated sync.Once

// statSources stats every file of the module under root. The tests run a
// binary built from sources this test binary does not import (the gateway,
// the command): `go test` caches a result by the test binary and by the
// files the tests opened or stat'ed (from m.Run on, not in TestMain), so
// without this a changed gateway would be answered "(cached)" from a run of
// the old one.
func statSources(root string) {
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		_, _ = os.Stat(path)
		return nil
	})
}

// proc is a running groundhog process.
type proc struct {
	t    testing.TB
	cmd  *exec.Cmd
	URL  string
	mu   sync.Mutex
	out  strings.Builder // everything the process printed so far
	done chan struct{}
}

// output is what the process has printed so far.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs `groundhog args... --addr <free>` with extra environment and
// waits until it answers /healthz.
func start(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	sourcesStated.Do(func() { statSources("..") })
	addr := freeAddr(t)
	cmd := exec.Command(binary, append(args, "--addr", addr)...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{t: t, cmd: cmd, URL: "http://" + addr, done: make(chan struct{})}
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(p.URL + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return p
			}
		}
		select {
		case <-p.done:
			var out []string
			for len(lines) > 0 {
				out = append(out, <-lines)
			}
			t.Fatalf("groundhog %v exited before serving:\n%s", args, strings.Join(out, "\n"))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("groundhog %v not healthy in 30s", args)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL — no deferred function, no flush, no shutdown hook
// runs — and waits for the process to be gone.
func (p *proc) kill() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Error("process did not exit after SIGKILL")
	}
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

type result struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func post(ctx context.Context, url, body string, hdr map[string]string) result {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return result{status: res.StatusCode, header: res.Header, body: b, err: err}
}

func simCalls(t testing.TB, simURL string) int64 {
	t.Helper()
	return simBill(t, simURL).Calls
}

// bill is the part of the sim's bill the e2e tests read.
type bill struct {
	Calls             int64 `json:"calls"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	CacheWriteTokens  int64 `json:"cache_write_tokens"`
}

func simBill(t testing.TB, simURL string) bill {
	t.Helper()
	res, err := http.Get(simURL + "/sim/v1/bill")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b bill
	if err := json.NewDecoder(res.Body).Decode(&b); err != nil {
		t.Fatal(err)
	}
	return b
}
