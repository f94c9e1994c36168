// Package bench is groundhog's load tool. It starts every server it measures
// as its own process — the simulated provider, a bare httputil.ReverseProxy
// baseline, and groundhog gateways — drives each with a stdlib HTTP client
// over loopback, and reports throughput and server CPU per request as
// ratios against baselines measured in the same run, as a markdown table.
package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// Options configures a run.
type Options struct {
	Exe      string        // the groundhog binary to start servers with (default: this executable)
	Duration time.Duration // per scenario (default 5s)
	Conns    int           // concurrent connections (default 32)
	Dir      string        // scratch directory for databases (default: a temp dir)
	Log      io.Writer     // progress lines (default: discard)
}

// Result is one measured scenario.
type Result struct {
	Name      string
	Requests  int64
	Errors    int64
	Seconds   float64
	CPUPerReq time.Duration // CPU time of the server under test per request
}

// RPS is requests per second.
func (r Result) RPS() float64 { return float64(r.Requests) / r.Seconds }

// Report holds every result of a run plus the fingerprint micro-benchmarks.
type Report struct {
	Results     map[string]Result
	Fingerprint []FingerprintResult
	Conns       int
	Duration    time.Duration
}

// FingerprintResult compares fingerprint.Compute with sha256 over the same bytes.
type FingerprintResult struct {
	Size          int
	FingerprintNs float64
	SHA256Ns      float64
	RatioToSHA256 float64
}

// server is a child process under test.
type server struct {
	name string
	cmd  *exec.Cmd
	url  string
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (o *Options) start(ctx context.Context, name string, args ...string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args = append(args, "--addr", addr)
	cmd := exec.CommandContext(ctx, o.Exe, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.Env = append(os.Environ(), "GROUNDHOG_LOG_LEVEL=error")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{name: name, cmd: cmd, url: "http://" + addr}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(s.url + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not become healthy at %s", name, s.url)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = s.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
		}
	}
}

// cpu returns the process's user+system CPU time from /proc.
func (s *server) cpu() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	f := strings.Fields(rest)
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck, nil
}

// request builds one scenario request.
type request struct {
	path   string
	body   []byte
	header func(i int64) http.Header
}

// load drives target for d with conns connections and measures target's CPU.
func load(ctx context.Context, target *server, req request, conns int, d time.Duration) (Result, error) {
	tr := &http.Transport{MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var n, errs, seq atomic.Int64
	do := func() bool {
		i := seq.Add(1)
		hr, _ := http.NewRequestWithContext(ctx, http.MethodPost, target.url+req.path, bytes.NewReader(req.body))
		hr.Header.Set("Content-Type", "application/json")
		if req.header != nil {
			for k, v := range req.header(i) {
				hr.Header[k] = v
			}
		}
		res, err := client.Do(hr)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode == 200
	}
	// Warm up: connections, caches, the first upstream call of a hit path.
	for i := 0; i < conns; i++ {
		do()
	}
	cpu0, err := target.cpu()
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && ctx.Err() == nil {
				if do() {
					n.Add(1)
				} else {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	cpu1, err := target.cpu()
	if err != nil {
		return Result{}, err
	}
	r := Result{Requests: n.Load(), Errors: errs.Load(), Seconds: elapsed}
	if r.Requests > 0 {
		r.CPUPerReq = (cpu1 - cpu0) / time.Duration(r.Requests)
	}
	return r, nil
}

// chatBody returns a chat request of about size bytes.
func chatBody(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"sim-small","max_tokens":16,"temperature":0.2,"messages":[{"role":"system","content":"You are a careful assistant."}`)
	i := 0
	for b.Len() < size-64 {
		fmt.Fprintf(&b, `,{"role":"user","content":"Turn %d: tell me about caching, coalescing and idempotency — ünïcode too."}`, i)
		i++
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// Run measures every scenario and returns the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Exe = exe
	}
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "groundhog-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	rep := &Report{Results: map[string]Result{}, Conns: o.Conns, Duration: o.Duration}
	rep.Fingerprint = fingerprintBench()

	simSrv, err := o.start(ctx, "sim", "sim")
	if err != nil {
		return nil, err
	}
	defer simSrv.stop()
	proxy, err := o.start(ctx, "proxy", "bench-proxy", "--target", simSrv.url)
	if err != nil {
		return nil, err
	}
	defer proxy.stop()
	gw, err := o.start(ctx, "gateway", "serve", "--db", filepath.Join(o.Dir, "on.db"), "--upstream", simSrv.url+"/v1")
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	noLedger := filepath.Join(o.Dir, "noledger.yaml")
	if err := os.WriteFile(noLedger, []byte("ledger:\n  disabled: true\n"), 0o600); err != nil {
		return nil, err
	}
	gwNL, err := o.start(ctx, "gateway-no-ledger", "serve", "--config", noLedger, "--db", filepath.Join(o.Dir, "off.db"), "--upstream", simSrv.url+"/v1")
	if err != nil {
		return nil, err
	}
	defer gwNL.stop()

	body := chatBody(1024)
	hdr := func(kv ...string) func(int64) http.Header {
		return func(int64) http.Header {
			h := http.Header{}
			for i := 0; i+1 < len(kv); i += 2 {
				h.Set(kv[i], kv[i+1])
			}
			return h
		}
	}
	run := []struct {
		name   string
		target *server
		req    request
	}{
		{"direct-sim", simSrv, request{path: "/v1/chat/completions", body: body}},
		{"proxy-miss", proxy, request{path: "/v1/chat/completions", body: body}},
		{"gateway-miss", gw, request{path: "/v1/chat/completions", body: body}},
		{"gateway-hit", gw, request{path: "/v1/chat/completions", body: body, header: hdr("Groundhog-Cache", "use")}},
		{"gateway-hit-no-ledger", gwNL, request{path: "/v1/chat/completions", body: body, header: hdr("Groundhog-Cache", "use")}},
		{"gateway-idempotent-new-keys", gw, request{path: "/v1/chat/completions", body: body, header: func(i int64) http.Header {
			return http.Header{"Idempotency-Key": {fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)}}
		}}},
		{"gateway-idempotent-replay", gw, request{path: "/v1/chat/completions", body: body, header: hdr("Idempotency-Key", "bench-replay-key")}},
	}
	for _, sc := range run {
		fmt.Fprintf(o.Log, "bench: %s (%d connections, %s)\n", sc.name, o.Conns, o.Duration)
		r, err := load(ctx, sc.target, sc.req, o.Conns, o.Duration)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sc.name, err)
		}
		r.Name = sc.name
		rep.Results[sc.name] = r
	}
	return rep, nil
}

// fingerprintBench measures fingerprint.Compute against sha256.Sum256 over
// the same bytes (the goal: at most 3× at 200 KB).
func fingerprintBench() []FingerprintResult {
	var out []FingerprintResult
	for _, size := range []int{1 << 10, 200 << 10} {
		body := chatBody(size)
		fp := testing.Benchmark(func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for i := 0; i < b.N; i++ {
				if _, err := fingerprint.Compute(fingerprint.Params{Shape: groundhog.ShapeChat, Tenant: "t"}, body); err != nil {
					b.Fatal(err)
				}
			}
		})
		sh := testing.Benchmark(func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for i := 0; i < b.N; i++ {
				_ = sha256.Sum256(body)
			}
		})
		f, s := float64(fp.NsPerOp()), float64(sh.NsPerOp())
		out = append(out, FingerprintResult{Size: len(body), FingerprintNs: f, SHA256Ns: s, RatioToSHA256: f / s})
	}
	return out
}

// WriteMarkdown writes the report as markdown tables with the goals of the
// issues beside the measured ratios.
func (r *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "## Fingerprint vs sha256.Sum256 (same bytes)\n\n| body | fingerprint | sha256 | ratio | goal |\n|---:|---:|---:|---:|---|\n")
	for _, f := range r.Fingerprint {
		goal := ""
		if f.Size > 100<<10 {
			goal = "≤ 3×"
		}
		fmt.Fprintf(w, "| %d B | %.1f µs | %.1f µs | %.2f× | %s |\n", f.Size, f.FingerprintNs/1e3, f.SHA256Ns/1e3, f.RatioToSHA256, goal)
	}
	fmt.Fprintf(w, "\n## HTTP, %d connections, %s per scenario, 1 KB chat request, zero-latency sim\n\n", r.Conns, r.Duration)
	fmt.Fprintf(w, "| scenario | requests/s | errors | server CPU / request |\n|---|---:|---:|---:|\n")
	for _, name := range []string{"direct-sim", "proxy-miss", "gateway-miss", "gateway-hit", "gateway-hit-no-ledger", "gateway-idempotent-new-keys", "gateway-idempotent-replay"} {
		res, ok := r.Results[name]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "| %s | %.0f | %d | %.1f µs |\n", name, res.RPS(), res.Errors, float64(res.CPUPerReq)/1e3)
	}
	ratio := func(a, b string) float64 {
		ra, rb := r.Results[a], r.Results[b]
		if rb.RPS() == 0 {
			return 0
		}
		return ra.RPS() / rb.RPS()
	}
	fmt.Fprintf(w, "\n| ratio | measured | goal |\n|---|---:|---|\n")
	fmt.Fprintf(w, "| miss path (cache off) / bare ReverseProxy | %.2f× | ≥ 0.8× |\n", ratio("gateway-miss", "proxy-miss"))
	fmt.Fprintf(w, "| hit path / bare ReverseProxy miss path | %.2f× | ≥ 3× |\n", ratio("gateway-hit", "proxy-miss"))
	fmt.Fprintf(w, "| hit path CPU per request | %.1f µs | < 40 µs |\n", float64(r.Results["gateway-hit"].CPUPerReq)/1e3)
	fmt.Fprintf(w, "| hit path ledger on / ledger off | %.2f× | ≥ 0.9× |\n", ratio("gateway-hit", "gateway-hit-no-ledger"))
	fmt.Fprintf(w, "| idempotent (new keys) / plain miss | %.2f× | |\n", ratio("gateway-idempotent-new-keys", "gateway-miss"))
	fmt.Fprintf(w, "| replay path CPU per request | %.1f µs | |\n", float64(r.Results["gateway-idempotent-replay"].CPUPerReq)/1e3)
}
