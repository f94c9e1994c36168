// Package bench is groundhog's load tool. It starts every server it measures
// as its own process — the simulated provider, a bare net/http server that
// answers a stored response from memory ("floor"), a bare
// httputil.ReverseProxy, and groundhog gateways — drives each with a stdlib
// HTTP client over loopback, and reports throughput and server CPU per
// request as ratios against baselines measured in the same run, as
// markdown tables with their goals beside them.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
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
	"time"

	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// Options configures a run.
type Options struct {
	Exe      string        // the groundhog binary to start servers with (default: this executable)
	Duration time.Duration // per scenario (default 3s)
	Conns    int           // concurrent connections (default 32)
	Dir      string        // scratch directory for databases (default: a temp dir)
	Log      io.Writer     // progress lines (default: discard)
	// Bodies are the request bodies to measure, each "small" (about 1 KB),
	// "large" (a 200 KB, ~340-message agent request, internal/benchbody) or
	// the name of a file holding a chat request. Default: small and large.
	Bodies []string
	// Stream sends "stream": true: the hit path then answers stored SSE
	// events and the floor the same bytes.
	Stream bool
	// API is the provider API of every request (default chat; see API).
	API API
	// Profile, when set, is a directory that receives a CPU profile
	// (<scenario>.cpu.pprof) and an allocation profile (<scenario>.allocs.pprof,
	// the allocations made during the scenario) of the gateway process for
	// every gateway scenario, taken through serve --pprof over the
	// measured interval. Profiling costs the gateway some CPU.
	Profile string
	// Only, when set, runs just the scenarios whose name starts with one of
	// these prefixes (e.g. "gateway-hit/", "floor/"); ratios with a missing
	// side print as "—".
	Only []string
	// Micro runs the in-process figures too: fingerprint ÷ sha256 and
	// analyze ÷ line reading (on by default from the command line).
	Micro bool
	// AnalyzeLines is the size of the request log of the analyze figure
	// (default 200,000).
	AnalyzeLines int
	// Rounds splits each scenario's Duration into this many slices, the
	// scenarios taking turns (default 3; 1 with Profile).
	Rounds int
	// Database, a postgres:// URL, puts every gateway on PostgreSQL, each in
	// a schema of its own, dropped at the end (default: a SQLite file each).
	Database string
	// Redis, a redis:// URL, gives every gateway's cache a Redis tier, each
	// under a key prefix of its own, deleted at the end (serve --cache).
	Redis string
}

// Result is one measured scenario.
type Result struct {
	Name      string
	Requests  int64
	Errors    int64
	Seconds   float64
	CPU       time.Duration // CPU time of the server under test over the measured interval
	CPUPerReq time.Duration // CPU / Requests
	// StoreCPU is the CPU time of the local PostgreSQL and Redis servers
	// over the measured interval, when the gateway runs on them (stores.cpu).
	StoreCPU time.Duration
}

// StorePerReq is StoreCPU / Requests.
func (r Result) StorePerReq() time.Duration {
	if r.Requests == 0 {
		return 0
	}
	return r.StoreCPU / time.Duration(r.Requests)
}

// RPS is requests per second.
func (r Result) RPS() float64 {
	if r.Seconds == 0 {
		return 0
	}
	return float64(r.Requests) / r.Seconds
}

// Report holds every result of a run plus the in-process figures.
type Report struct {
	Results     map[string]Result
	Bodies      []BodyInfo // in run order
	Fingerprint []FingerprintResult
	Analyze     *AnalyzeResult
	Conns       int
	Duration    time.Duration
	Stream      bool
	API         API
	Profile     string
	Stores      string // the gateways' stores
	// CacheStore names where a hit past the memory tier is read from:
	// "Redis" with --cache, else "the database" ("" reads as the latter).
	CacheStore string
	// StoresMeasured: the gateways' PostgreSQL or Redis run on this
	// machine, and the report shows their CPU a request.
	StoresMeasured bool
}

// BodyInfo describes one measured request body.
type BodyInfo struct {
	Label    string // "1KB", "200KB" or the file's base name: the suffix of its scenario names
	Kind     string // "small", "large" or "file"
	Bytes    int
	Messages int
	keyed    bool // the body sets API.keyedMember itself: no cached-miss scenario
}

// server is a child process under test.
type server struct {
	name  string
	cmd   *exec.Cmd
	url   string
	pprof string // base URL of its pprof listener, if any
	// children: the server's work is done by child processes (nginx's
	// workers), whose CPU counts too.
	children bool
	// storeCPU, when set, reads the CPU time of the database and cache
	// servers this server uses (stores.cpu), measured beside its own.
	storeCPU func() time.Duration
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// serveArgs are the arguments of a gateway process on the stores of
// storeArgs (--db, and --cache when it has one) with the simulated provider
// at sim as its OpenAI and its Anthropic upstream, then extra.
func serveArgs(storeArgs []string, sim string, extra ...string) []string {
	args := append([]string{"serve"}, storeArgs...)
	args = append(args, "--upstream", sim+"/v1", "--anthropic-upstream", sim+"/v1")
	return append(args, extra...)
}

// gateway starts the gateway process called name on stores of its own
// (stores.go).
func (o *Options) gateway(ctx context.Context, st *stores, name, sim string, extra ...string) (*server, error) {
	sa, err := st.args(ctx, name)
	if err != nil {
		return nil, err
	}
	s, err := o.start(ctx, name, serveArgs(sa, sim, extra...)...)
	if err == nil && st.measured() {
		s.storeCPU = st.cpu
	}
	return s, err
}

func (o *Options) start(ctx context.Context, name string, args ...string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{name: name, url: "http://" + addr}
	args = append(args, "--addr", addr)
	if o.Profile != "" && len(args) > 0 && args[0] == "serve" {
		paddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args = append(args, "--pprof", paddr)
		s.pprof = "http://" + paddr
	}
	cmd := exec.CommandContext(ctx, o.Exe, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.Env = append(os.Environ(), "GROUNDHOG_LOG_LEVEL=error")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.cmd = cmd
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

// cpu returns the process's user+system CPU time from /proc, its live
// children's included when s.children.
func (s *server) cpu() (time.Duration, error) {
	total, err := procCPU(s.cmd.Process.Pid)
	if err != nil || !s.children {
		return total, err
	}
	for _, pid := range childPIDs(s.cmd.Process.Pid) {
		if d, err := procCPU(pid); err == nil {
			total += d
		}
	}
	return total, nil
}

// procCPU returns one process's user+system CPU time from /proc.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
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

// scenario is one measured load: a request against a server.
type scenario struct {
	name   string // "<scenario>/<body label>"
	target *server
	req    request
}

// request builds one scenario request.
type request struct {
	api    API
	body   []byte
	header func(i int64) http.Header
	// unique makes every request a body never sent before (an end-user id
	// with the request's number, first member: API.appendUnique): what a miss is in real
	// traffic. The gateway's fingerprint memo (fingerprint.Memo) answers
	// a body sent again, so a repeated body would measure a retry, not a
	// miss. Every server of a miss scenario gets the same bodies.
	unique bool
	// keyed makes every body a new cache key as well (API.appendKeyed):
	// the unique member alone is left out of the key, so with the cache
	// on its bodies would all be one entry's hits.
	keyed bool
	// outcome, when set, is the Groundhog-Cache every answer must carry;
	// an answer with another counts as an error.
	outcome string
}

// uniqueSeq numbers unique bodies across the whole run (rounds and
// scenarios), so no body is ever sent twice.
var uniqueSeq atomic.Int64

// uniqueBody returns body (a JSON object starting with '{', see body) with
// api's unique member, numbered i, as its first member.
func uniqueBody(api API, body []byte, i int64, keyed bool) []byte {
	b := api.appendUnique(make([]byte, 0, len(body)+80), i)
	if keyed {
		b = api.appendKeyed(append(b, ','), i)
	}
	rest := bytes.TrimLeft(body[1:], " \t\r\n")
	if len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, rest...)
}

func (req request) do(ctx context.Context, client *http.Client, url string, i int64) (*http.Response, error) {
	body := req.body
	if req.unique {
		body = uniqueBody(req.api, body, uniqueSeq.Add(1), req.keyed)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url+req.api.path(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.api.setHeaders(hr.Header)
	if req.header != nil {
		for k, v := range req.header(i) {
			hr.Header[k] = v
		}
	}
	return client.Do(hr)
}

// load drives target for d with conns connections and measures target's
// CPU; with profile set it also saves target's profiles under that path
// prefix.
func load(ctx context.Context, target *server, req request, conns int, d time.Duration, profile string) (Result, error) {
	tr := &http.Transport{MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var n, errs, seq atomic.Int64
	do := func() bool {
		res, err := req.do(ctx, client, target.url, seq.Add(1))
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode == 200 && (req.outcome == "" || res.Header.Get("Groundhog-Cache") == req.outcome)
	}
	// Warm up: connections, caches, the first upstream call of a hit path.
	for i := 0; i < conns; i++ {
		do()
	}
	var profWG sync.WaitGroup
	var profErr error
	if profile != "" && target.pprof != "" {
		secs := max(1, int(d.Seconds()))
		for _, kind := range []string{"profile", "allocs"} {
			profWG.Add(1)
			go func() {
				defer profWG.Done()
				name := profile + ".cpu.pprof"
				if kind == "allocs" {
					name = profile + ".allocs.pprof"
				}
				if err := fetch(ctx, fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", target.pprof, kind, secs), name); err != nil {
					profErr = err
				}
			}()
		}
	}
	var store0 time.Duration
	if target.storeCPU != nil {
		store0 = target.storeCPU()
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
	r := Result{Requests: n.Load(), Errors: errs.Load(), Seconds: elapsed, CPU: cpu1 - cpu0}
	if target.storeCPU != nil {
		r.StoreCPU = target.storeCPU() - store0
	}
	profWG.Wait()
	if profErr != nil {
		return Result{}, fmt.Errorf("profile: %w", profErr)
	}
	if r.Requests > 0 {
		r.CPUPerReq = (cpu1 - cpu0) / time.Duration(r.Requests)
	}
	return r, nil
}

// fetch saves the body of a GET of url to the file name.
func fetch(ctx context.Context, url, name string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// body resolves one Options.Bodies entry.
func body(api API, spec string, stream bool) ([]byte, BodyInfo, error) {
	o := benchbody.Options{Model: "sim-small", Stream: stream}
	gen := api.generate
	var b []byte
	info := BodyInfo{Kind: spec}
	switch spec {
	case "small":
		b, info.Label = gen(1<<10, o), "1KB"
	case "large":
		b, info.Label = gen(200<<10, o), "200KB"
	default:
		var err error
		if b, err = os.ReadFile(spec); err != nil {
			return nil, info, err
		}
		// The miss scenarios write the API's unique member first into the
		// object (uniqueBody).
		b = bytes.TrimSpace(b)
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil || len(b) == 0 || b[0] != '{' {
			return nil, info, fmt.Errorf("--body %s: not a JSON object (a request body of the %s API is required)", spec, api.label())
		}
		if _, ok := top[api.uniqueMember()]; ok {
			return nil, info, fmt.Errorf("--body %s: remove its top-level %q: the miss scenarios set it to make every body new", spec, api.uniqueMember())
		}
		_, info.keyed = top[api.keyedMember()]
		info.Kind, info.Label = "file", filepath.Base(spec)
	}
	info.Bytes, info.Messages = len(b), benchbody.Messages(b)
	return b, info, nil
}

// stored is a hit response of the gateway, captured for the floor server.
type stored struct {
	contentType string
	body        []byte
}

// capture sends req twice with the cache on and returns the second (hit)
// response: the bytes the floor server answers with.
func capture(ctx context.Context, gw *server, req request) (stored, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	var st stored
	for i := range 2 {
		res, err := req.do(ctx, client, gw.url, int64(i))
		if err != nil {
			return st, err
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return st, err
		}
		if res.StatusCode != 200 {
			return st, fmt.Errorf("priming %s: status %d: %.200s", gw.name, res.StatusCode, b)
		}
		st = stored{contentType: res.Header.Get("Content-Type"), body: b}
	}
	return st, nil
}

func (o *Options) wanted(name string) bool {
	if len(o.Only) == 0 {
		return true
	}
	for _, p := range o.Only {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
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
		o.Duration = 3 * time.Second
	}
	if o.API == "" {
		o.API = APIChat
	}
	if o.Conns <= 0 {
		o.Conns = 32
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if len(o.Bodies) == 0 {
		o.Bodies = []string{"small", "large"}
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.AnalyzeLines <= 0 {
		o.AnalyzeLines = 200_000
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "groundhog-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	if o.Profile != "" {
		if err := os.MkdirAll(o.Profile, 0o755); err != nil {
			return nil, err
		}
	}
	rep := &Report{Results: map[string]Result{}, Conns: o.Conns, Duration: o.Duration, Stream: o.Stream, API: o.API, Profile: o.Profile}
	if o.Micro {
		fmt.Fprintf(o.Log, "bench: fingerprint ÷ sha256 (in process)\n")
		rep.Fingerprint = fingerprintBench()
		fmt.Fprintf(o.Log, "bench: analyze ÷ line reading (in process, %d lines)\n", o.AnalyzeLines)
		a, err := analyzeBench(ctx, o.Dir, o.AnalyzeLines)
		if err != nil {
			return nil, fmt.Errorf("analyze figure: %w", err)
		}
		rep.Analyze = a
	}

	dbs, err := newStores(ctx, &o)
	if err != nil {
		return nil, err
	}
	defer dbs.close()
	rep.Stores, rep.StoresMeasured, rep.CacheStore = dbs.label(), dbs.measured(), dbs.cacheStore()
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
	gw, err := o.gateway(ctx, dbs, "gateway", simSrv.url)
	if err != nil {
		return nil, err
	}
	defer gw.stop()
	noLedger := filepath.Join(o.Dir, "noledger.yaml")
	if err := os.WriteFile(noLedger, []byte("ledger:\n  disabled: true\n"), 0o600); err != nil {
		return nil, err
	}
	gwNL, err := o.gateway(ctx, dbs, "gateway-no-ledger", simSrv.url, "--config", noLedger)
	if err != nil {
		return nil, err
	}
	defer gwNL.stop()
	// nginx's proxy_cache keyed on the body, in front of the same sim
	// (nginx.go); skipped with a note when nginx is not installed.
	var ngx *server
	if o.wanted("nginx-hit/") {
		if ngx, err = o.startNginx(ctx, simSrv.url); err != nil {
			return nil, err
		}
		if ngx == nil {
			fmt.Fprintf(o.Log, "bench: nginx not installed; skipping nginx-hit (apt-get install nginx-light)\n")
		} else {
			defer ngx.stop()
		}
	}
	// The same gateway as gw with --log-level warn: no access line, so the
	// line's cost is the difference between the two hits.
	var gwWarn *server
	if o.wanted("gateway-hit-log-warn/") {
		if gwWarn, err = o.gateway(ctx, dbs, "gateway-log-warn", simSrv.url, "--log-level", "warn"); err != nil {
			return nil, err
		}
		defer gwWarn.stop()
	}

	// The same gateway without a memory tier: every hit is read from the
	// database, as after a restart, past the memory budget, or for an
	// entry another replica wrote.
	var gwStore *server
	if o.wanted("gateway-hit-store/") {
		if gwStore, err = o.gateway(ctx, dbs, "gateway-store", simSrv.url, "--cache-memory-bytes", "-1"); err != nil {
			return nil, err
		}
		defer gwStore.stop()
	}

	hdr := func(kv ...string) func(int64) http.Header {
		return func(int64) http.Header {
			h := http.Header{}
			for i := 0; i+1 < len(kv); i += 2 {
				h.Set(kv[i], kv[i+1])
			}
			return h
		}
	}
	api := o.API
	run0 := time.Now().UnixNano()
	var all []scenario
	var keySeq atomic.Int64
	for _, spec := range o.Bodies {
		b, info, err := body(api, spec, o.Stream)
		if err != nil {
			return nil, err
		}
		rep.Bodies = append(rep.Bodies, info)
		hit := request{api: api, body: b, header: hdr("Groundhog-Cache", "use")}
		// The floor answers exactly what a hit on this body returns.
		st, err := capture(ctx, gw, hit)
		if err != nil {
			return nil, err
		}
		if _, err := capture(ctx, gwNL, hit); err != nil {
			return nil, err
		}
		for _, g := range []*server{gwWarn, gwStore} {
			if g == nil {
				continue
			}
			if _, err := capture(ctx, g, hit); err != nil {
				return nil, err
			}
		}
		cachedMiss := gw
		if info.keyed {
			fmt.Fprintf(o.Log, "bench: gateway-miss-cached/%s skipped: the body sets %q, which the scenario numbers to make every body a new cache key\n", info.Label, api.keyedMember())
			cachedMiss = nil
		}
		ngxBody := ngx
		if ngx != nil && len(b) > nginxMaxBody {
			fmt.Fprintf(o.Log, "bench: nginx-hit/%s skipped: nginx does not cache a response keyed on a %d-byte body (nginx.go)\n", info.Label, len(b))
			ngxBody = nil
		}
		if ngxBody != nil {
			if err := nginxHits(ctx, ngxBody, request{api: api, body: b}); err != nil {
				return nil, err
			}
		}
		resp := filepath.Join(o.Dir, "floor-"+info.Label+".body")
		if err := os.WriteFile(resp, st.body, 0o600); err != nil {
			return nil, err
		}
		var floor *server
		if o.wanted("floor/" + info.Label) {
			if floor, err = o.start(ctx, "floor", "bench-floor", "--response", resp, "--content-type", st.contentType); err != nil {
				return nil, err
			}
			defer floor.stop()
		}
		var floorT *server
		if o.wanted("floor-timeouts/" + info.Label) {
			if floorT, err = o.start(ctx, "floor-timeouts", "bench-floor", "--response", resp, "--content-type", st.contentType, "--timeouts"); err != nil {
				return nil, err
			}
			defer floorT.stop()
		}
		for _, sc := range []scenario{
			{name: "floor", target: floor, req: request{api: api, body: b}},
			{name: "floor-timeouts", target: floorT, req: request{api: api, body: b}},
			{name: "direct-sim", target: simSrv, req: request{api: api, body: b, unique: true}},
			{name: "proxy-miss", target: proxy, req: request{api: api, body: b, unique: true}},
			{name: "gateway-miss", target: gw, req: request{api: api, body: b, unique: true}},
			{name: "gateway-miss-cached", target: cachedMiss, req: request{api: api, body: b, unique: true, keyed: true, outcome: "miss", header: hdr("Groundhog-Cache", "use")}},
			{name: "gateway-hit", target: gw, req: hit},
			{name: "gateway-hit-no-ledger", target: gwNL, req: hit},
			{name: "gateway-hit-log-warn", target: gwWarn, req: hit},
			{name: "gateway-hit-store", target: gwStore, req: request{api: api, body: b, header: hit.header, outcome: "hit"}},
			{name: "nginx-hit", target: ngxBody, req: request{api: api, body: b}},
			{name: "gateway-idempotent-new-keys", target: gw, req: request{api: api, body: b, unique: true, header: func(int64) http.Header {
				// A counter of the whole run: keys stay new across rounds.
				return http.Header{"Idempotency-Key": {fmt.Sprintf("bench-%d-%s-%d", run0, info.Label, keySeq.Add(1))}}
			}}},
			{name: "gateway-idempotent-replay", target: gw, req: request{api: api, body: b, header: hdr("Idempotency-Key", fmt.Sprintf("bench-replay-%d-%s", run0, info.Label))}},
		} {
			sc.name += "/" + info.Label
			if o.wanted(sc.name) && sc.target != nil {
				all = append(all, sc)
			}
		}
	}
	// Every scenario runs in o.Rounds slices, the scenarios taking turns,
	// so that a change in the machine's load during the run falls on both
	// sides of each ratio instead of on one scenario.
	rounds := o.Rounds
	if o.Profile != "" {
		rounds = 1 // a profile covers one whole scenario
	}
	slice := o.Duration / time.Duration(rounds)
	for round := range rounds {
		for _, sc := range all {
			fmt.Fprintf(o.Log, "bench: %s (%d bytes, %d connections, round %d/%d, %s)\n", sc.name, len(sc.req.body), o.Conns, round+1, rounds, slice)
			prof := ""
			if o.Profile != "" {
				prof = filepath.Join(o.Profile, strings.ReplaceAll(sc.name, "/", "-"))
			}
			r, err := load(ctx, sc.target, sc.req, o.Conns, slice, prof)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sc.name, err)
			}
			acc := rep.Results[sc.name]
			acc.Name = sc.name
			acc.Requests += r.Requests
			acc.Errors += r.Errors
			acc.Seconds += r.Seconds
			acc.CPU += r.CPU
			acc.StoreCPU += r.StoreCPU
			if acc.Requests > 0 {
				acc.CPUPerReq = acc.CPU / time.Duration(acc.Requests)
			}
			rep.Results[sc.name] = acc
		}
	}
	return rep, nil
}
