package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/mcp"
	"github.com/groundhog-ai/groundhog/sim"
)

var stdiosim struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if stdiosim.dir != "" {
		_ = os.RemoveAll(stdiosim.dir)
	}
	os.Exit(code)
}

// stdiosimBinary builds testdata/stdiosim once per test run.
func stdiosimBinary(t *testing.T) string {
	t.Helper()
	stdiosim.once.Do(func() {
		stdiosim.dir, stdiosim.err = os.MkdirTemp("", "stdiosim")
		if stdiosim.err != nil {
			return
		}
		stdiosim.path = filepath.Join(stdiosim.dir, "stdiosim")
		out, err := exec.Command("go", "build", "-o", stdiosim.path, "./testdata/stdiosim").CombinedOutput()
		if err != nil {
			stdiosim.err = fmt.Errorf("building stdiosim: %v\n%s", err, out)
		}
	})
	if stdiosim.err != nil {
		t.Fatal(stdiosim.err)
	}
	return stdiosim.path
}

// stdioFiles are what the stdio server reports through its files.
type stdioFiles struct {
	t     *testing.T
	calls string // a line per tools/call that reached the process: the tool
	pids  string // a line per process start: its pid
	gate  string // tool calls wait until this file exists
}

// newStdioEnv is newEnv with the simulated MCP server run by the gateway
// as a stdio server ("sim"); with gated, its tool calls wait for
// files.open.
func newStdioEnv(t *testing.T, gated bool, opts ...envOpt) (*env, *stdioFiles) {
	t.Helper()
	bin := stdiosimBinary(t)
	dir := t.TempDir()
	f := &stdioFiles{t: t, calls: filepath.Join(dir, "calls"), pids: filepath.Join(dir, "pids"), gate: filepath.Join(dir, "gate")}
	opts = append(opts, func(s *config.MCPServer, _ *sim.Config) {
		s.Command = []string{bin}
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env["STDIOSIM_CALLS"], s.Env["STDIOSIM_PIDS"] = f.calls, f.pids
		if gated {
			s.Env["STDIOSIM_GATE"] = f.gate
		}
	})
	e := newEnv(t, opts...)
	t.Cleanup(f.open) // held calls end before the process is stopped
	return e, f
}

func (f *stdioFiles) lines(path string) []string {
	f.t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// count returns how many calls of tool reached the process.
func (f *stdioFiles) count(tool string) int {
	n := 0
	for _, l := range f.lines(f.calls) {
		if l == tool {
			n++
		}
	}
	return n
}

func (f *stdioFiles) open() {
	if err := os.WriteFile(f.gate, nil, 0o600); err != nil {
		f.t.Error(err)
	}
}

// eventually polls cond, which reads an outside process's state, until it
// holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The official client reaches every feature of a stdio server through the
// gateway: tools with their annotations, a call with its progress
// notification, resources and prompts; the call is booked like an HTTP
// server's, and the process is started once.
func TestStdioServerProxiesEveryFeature(t *testing.T) {
	e, f := newStdioEnv(t, false)
	passesEveryFeature(t, e)
	if got := f.count("search"); got != 1 {
		t.Fatalf("%d search calls reached the process, want 1", got)
	}
	if pids := f.lines(f.pids); len(pids) != 1 {
		t.Fatalf("the process started %d times, want once: %v", len(pids), pids)
	}
	if e.Sent.Load() != 0 {
		t.Fatalf("%d HTTP requests went upstream for a stdio server", e.Sent.Load())
	}
}

// Identical concurrent calls of a read-only tool (its readOnlyHint, read
// over stdio) run once in the process.
func TestStdioReadOnlyCoalesces(t *testing.T) {
	e, f := newStdioEnv(t, true)
	ctx := context.Background()
	cs := e.client(bearer{key: e.KeyA}, nil)
	const n = 20
	results, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "otters"}})
			if err != nil {
				errs[i] = err
				return
			}
			results[i] = text(t, res)
		}()
	}
	eventually(t, "the leader reached the process", func() bool { return f.count("search") == 1 })
	waitFollowers(t, e, n)
	f.open()
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i] != `3 results for "otters"` {
			t.Fatalf("call %d: %q, %v", i, results[i], errs[i])
		}
	}
	if got := f.count("search"); got != 1 {
		t.Fatalf("%d search calls reached the process for %d identical concurrent ones, want 1", got, n)
	}
	if got := e.rows(); got[groundhog.OutcomeUpstream] != 1 || got[groundhog.OutcomeCoalesced] != n-1 {
		t.Fatalf("ledger %v, want 1 upstream + %d coalesced", got, n-1)
	}
}

// A side-effect call retried under one idempotency key sends one email;
// the retries get the stored answer.
func TestStdioIdempotencyKey(t *testing.T) {
	e, f := newStdioEnv(t, false)
	ctx := context.Background()
	cs := e.client(bearer{key: e.KeyA}, nil)
	var first string
	for i := range 3 {
		p := &sdk.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "ann@example.com", "subject": "hi"}}
		p.Meta = sdk.Meta{mcp.MetaIdempotencyKey: "email-ann-1"}
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got := text(t, res)
		if i == 0 {
			first = got
		}
		if got != first || got != "sent email-1 to ann@example.com" {
			t.Fatalf("attempt %d answered %q, want %q", i+1, got, "sent email-1 to ann@example.com")
		}
	}
	if got := f.count("send_email"); got != 1 {
		t.Fatalf("%d send_email calls reached the process, want exactly 1", got)
	}
	if got := e.rows(); got[groundhog.OutcomeUpstream] != 1 || got[groundhog.OutcomeReplayed] != 2 {
		t.Fatalf("ledger %v, want 1 upstream + 2 replayed", got)
	}
}

// A process killed between calls is started again by the next call, which
// works in the client's session; Close stops the process.
func TestStdioRestartAfterKill(t *testing.T) {
	e, f := newStdioEnv(t, false)
	ctx := context.Background()
	cs := e.client(bearer{key: e.KeyA}, nil)
	search := func(q string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": q}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := text(t, res), fmt.Sprintf("3 results for %q", q); got != want {
			t.Fatalf("search answered %q, want %q", got, want)
		}
	}
	search("otters")
	pids := f.lines(f.pids)
	if len(pids) != 1 {
		t.Fatalf("pids %v, want one process", pids)
	}
	pid, err := strconv.Atoi(pids[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Gone once the gateway has seen the exit and reaped the process.
	eventually(t, "the killed process is reaped", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	// The exit is logged right after the process is reaped.
	exited := `level=WARN msg="mcp: stdio server exited; the next message starts it again" server=sim pid=` + pids[0] + ` status="signal: killed"`
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.Logs.String(), exited) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	logs := e.Logs.String()
	for _, want := range []string{
		exited,
		`stderr="stdiosim: serving the simulated MCP server on stdin and stdout"`,
		`level=DEBUG msg="mcp: stdio server stderr" server=sim line="stdiosim: serving the simulated MCP server on stdin and stdout"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s:\n%s", want, logs)
		}
	}
	search("beavers")
	pids = f.lines(f.pids)
	if len(pids) != 2 || pids[1] == pids[0] {
		t.Fatalf("pids %v, want a second process", pids)
	}
	if got := f.count("search"); got != 2 {
		t.Fatalf("%d search calls reached the processes, want 2", got)
	}
	if err := e.MCP.Close(); err != nil {
		t.Fatal(err)
	}
	pid2, _ := strconv.Atoi(pids[1])
	if err := syscall.Kill(pid2, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("after Close the process %d is still there (kill 0: %v)", pid2, err)
	}
}

// Concurrent clients of two tenants post tool calls under the same
// JSON-RPC id and the same progress token; each gets its own answer and
// its own progress notification, under its id and token.
func TestStdioConcurrentClientsSameIDs(t *testing.T) {
	e, f := newStdioEnv(t, true)
	const n = 10
	answers := make([]sseAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := e.KeyA
			if i%2 == 1 {
				key = e.KeyB
			}
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"q%d"},"_meta":{"progressToken":"p"}}}`, i)
			answers[i] = postSSE(e.URL+mcp.PathPrefix+"sim", key, body)
		}()
	}
	eventually(t, "every call reached the process", func() bool { return f.count("search") == n })
	f.open()
	wg.Wait()
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("client %d: %v", i, a.err)
		}
		if want := fmt.Sprintf("3 results for %q", fmt.Sprintf("q%d", i)); a.id != "1" || a.text != want {
			t.Errorf("client %d: answer id %s %q, want id 1 %q", i, a.id, a.text, want)
		}
		if want := fmt.Sprintf(`p:searched q%d`, i); a.progress != want {
			t.Errorf("client %d: progress %q, want %q", i, a.progress, want)
		}
	}
}

// sseAnswer is what postSSE read.
type sseAnswer struct {
	progress string // the progress notification: token:message
	id       string // the response's id
	text     string // the response's first text content
	err      error
}

// postSSE posts one JSON-RPC message and reads the answer.
func postSSE(url, key, body string) (a sseAnswer) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		a.err = err
		return a
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.err = err
		return a
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		a.err = fmt.Errorf("HTTP %d: %s", res.StatusCode, readAll(res))
		return a
	}
	var msgs [][]byte
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				msgs = append(msgs, append([]byte(nil), d...))
			}
		}
	} else {
		msgs = append(msgs, []byte(readAll(res)))
	}
	for _, raw := range msgs {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Token   json.RawMessage `json:"progressToken"`
				Message string          `json:"message"`
			} `json:"params"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			a.err = fmt.Errorf("%v: %s", err, raw)
			return a
		}
		var tok string
		switch {
		case m.Method == "notifications/progress" && json.Unmarshal(m.Params.Token, &tok) == nil:
			a.progress = tok + ":" + m.Params.Message
		case m.Method == "" && len(m.Result.Content) > 0:
			a.id, a.text = string(m.ID), m.Result.Content[0].Text
		}
	}
	return a
}

// A client's initialize is answered with the protocol version it asked
// for when the gateway speaks it (the MCP rule), whatever version the
// process was initialized with; an unknown version gets the process's.
func TestStdioInitializeKeepsClientVersion(t *testing.T) {
	e, _ := newStdioEnv(t, false)
	for asked, want := range map[string]string{"2025-06-18": "2025-06-18", "2024-11-05": "2024-11-05", "2025-11-25": "2025-11-25", "1999-01-01": "2025-11-25"} {
		req, err := http.NewRequest(http.MethodPost, e.URL+mcp.PathPrefix+"sim", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+asked+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(res)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(body, `"protocolVersion":"`+want+`"`) || !strings.Contains(body, `"serverInfo"`) {
			t.Errorf("initialize asking %s: HTTP %d %s, want protocolVersion %s and the process's serverInfo", asked, res.StatusCode, body, want)
		}
	}
}

// A command that cannot start answers initialize with an error naming the
// server, and the next attempt waits out the backoff instead of spinning.
func TestStdioCommandNotFound(t *testing.T) {
	e := newEnv(t, func(s *config.MCPServer, _ *sim.Config) {
		s.Command = []string{filepath.Join(t.TempDir(), "no-such-mcp-server")}
	})
	start := time.Now()
	for range 2 {
		req, err := http.NewRequest(http.MethodPost, e.URL+mcp.PathPrefix+"sim", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.KeyA)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(res)
		res.Body.Close()
		if res.StatusCode != http.StatusBadGateway || !strings.Contains(body, "MCP server sim unavailable: starting MCP server sim") {
			t.Fatalf("HTTP %d %s, want 502 naming the server that failed to start", res.StatusCode, body)
		}
	}
	// The second start waited the first backoff (250ms) after the failure.
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("two failed starts within %v: the second did not wait out the backoff", d)
	}
}

// A process killed while it runs a side-effect call with a key leaves the
// outcome unknown: the call and its retry under the key get -32010, and
// the retry is not run again, by the process started after it.
func TestStdioKilledMidCallIsOutcomeUnknown(t *testing.T) {
	e, f := newStdioEnv(t, true)
	ctx := context.Background()
	cs := e.client(bearer{key: e.KeyA}, nil)
	call := func() error {
		p := &sdk.CallToolParams{Name: "send_email", Arguments: map[string]any{"to": "ann@example.com", "subject": "hi"}}
		p.Meta = sdk.Meta{mcp.MetaIdempotencyKey: "email-ann-2"}
		_, err := cs.CallTool(ctx, p)
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- call() }()
	eventually(t, "the call reached the process", func() bool { return f.count("send_email") == 1 })
	pid, err := strconv.Atoi(f.lines(f.pids)[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i, err := range []error{<-errc, call()} {
		if err == nil || !strings.Contains(err.Error(), "outcome unknown") {
			t.Fatalf("attempt %d: %v, want the outcome-unknown error", i+1, err)
		}
	}
	if got := f.count("send_email"); got != 1 {
		t.Fatalf("%d send_email calls reached a process, want 1", got)
	}
	if got := e.rows(); got[groundhog.OutcomeError] != 1 || got[groundhog.OutcomeReplayed] != 1 {
		t.Fatalf("ledger %v, want 1 error + 1 replayed", got)
	}
}
