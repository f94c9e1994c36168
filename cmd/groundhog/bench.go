package main

import (
	"bytes"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog/bench"
	"github.com/groundhog-ai/groundhog/internal/gctune"
)

func init() {
	o := bench.Options{Micro: true}
	var rate int
	var api string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test groundhog against same-run baselines (markdown table out)",
		Long: `Start the simulated provider, a bare net/http server answering a stored response
from memory (floor), a bare httputil.ReverseProxy and groundhog gateways as separate
processes on loopback, drive each with a stdlib HTTP client, and print throughput
and server CPU per request as ratios against the baselines of the same run, with
the goals beside them. The fingerprint and analyze figures are measured in
this process first.

Each scenario runs for --duration per body (default small and large): about
20 scenarios, so the default run takes about a minute and a half.

With --rate N the load is open-loop instead: N requests a second at fixed
intervals, each on its own connection slot whether or not the earlier ones
were answered, and each request's latency counted from its scheduled start (a
stall is charged to every request due during it). It prints p50 and p99 of a
miss, a hit, an idempotent miss and a miss with prompt-cache diagnosis and
breakpoint injection, and what each adds over the simulated provider called
directly at the same rate (measured just before it), for the first --body.

The gateways run on a SQLite file each unless --db names a PostgreSQL
database and --cache a Redis, as replicas in production do.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = cmd.ErrOrStderr()
			var err error
			if o.API, err = bench.ParseAPI(api); err != nil {
				return err
			}
			if rate > 0 {
				// The load generator's own collections would hold back requests
				// due meanwhile, and the open loop charges that to the server
				// measured: at a few MB of live heap and GOGC 100 it collected
				// four times a second.
				defer gctune.MinHeap(loadGenHeapFloor)()
				ro := bench.RateOptions{Rate: rate, Duration: o.Duration, Log: o.Log, API: o.API, Database: o.Database, Redis: o.Redis}
				if cmd.Flags().Changed("body") && len(o.Bodies) > 0 {
					ro.Body = o.Bodies[0]
				}
				rep, err := bench.Rate(cmd.Context(), ro)
				if err != nil {
					return err
				}
				rep.WriteMarkdown(cmd.OutOrStdout())
				return nil
			}
			rep, err := bench.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			rep.WriteMarkdown(cmd.OutOrStdout())
			return nil
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "duration of each scenario")
	fs.IntVar(&o.Conns, "conns", 32, "concurrent connections")
	fs.IntVar(&o.Rounds, "rounds", 3, "slices each scenario's duration is run in, the scenarios taking turns (1 with --profile)")
	fs.StringSliceVar(&o.Bodies, "body", []string{"small", "large"}, "request bodies: small (1 KB), large (200 KB agent request) or a FILE holding a request of --api; repeatable")
	fs.StringVar(&api, "api", "chat", "provider API of the requests: chat (OpenAI chat completions), messages (Anthropic Messages, as coding agents send it) or responses (OpenAI Responses, as Codex CLI sends it: stateless, reasoning items sent back)")
	fs.BoolVar(&o.Stream, "stream", false, `send "stream": true (SSE answers; the floor answers the stored events)`)
	fs.StringVar(&o.Profile, "profile", "", "write CPU and allocation profiles of the gateway process for each scenario to this directory")
	fs.StringSliceVar(&o.Only, "only", nil, "run only scenarios whose name starts with one of these prefixes (e.g. gateway-hit/,floor/)")
	fs.BoolVar(&o.Micro, "micro", true, "measure the in-process figures (fingerprint ÷ sha256, analyze ÷ line reading and ÷ its own floor: line reading + one fingerprint per line)")
	fs.IntVar(&rate, "rate", 0, "open-loop load at this many requests a second (latency from each request's scheduled start) instead of the closed-loop throughput run; see above")
	fs.IntVar(&o.AnalyzeLines, "analyze-lines", 200_000, "lines of the request log of the analyze figure")
	fs.StringVar(&o.Database, "db", "", "run every gateway on this PostgreSQL database (a postgres:// URL), each in a schema of its own, dropped at the end (default: a SQLite file each)")
	fs.StringVar(&o.Redis, "cache", "", "give every gateway's cache this Redis tier (a redis:// URL), each under a key prefix of its own, deleted at the end")
	rootCmd.AddCommand(cmd)

	// bench-proxy is the baseline: a bare reverse proxy, nothing else.
	var addr, target string
	proxy := &cobra.Command{
		Use:    "bench-proxy",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url.Parse(target)
			if err != nil {
				return err
			}
			rp := httputil.NewSingleHostReverseProxy(u)
			rp.Transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
			mux := http.NewServeMux()
			mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
			mux.Handle("/", rp)
			return http.ListenAndServe(addr, mux)
		},
	}
	proxy.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	proxy.Flags().StringVar(&target, "target", "", "upstream base URL")
	rootCmd.AddCommand(proxy)

	// bench-floor is the hit path's floor: a bare net/http server that reads
	// the request body into a pooled buffer (a gateway must hold it to hash
	// it) and writes a stored response from memory in one write.
	var floorAddr, respFile, contentType string
	var floorTimeouts bool
	floor := &cobra.Command{
		Use:    "bench-floor",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			resp, err := os.ReadFile(respFile)
			if err != nil {
				return err
			}
			srv := &http.Server{Addr: floorAddr, Handler: floorHandler(resp, contentType)}
			if floorTimeouts {
				// serve's own server settings (cmd/groundhog/serve.go): net/http
				// then moves the connection's read deadline several times a request.
				srv.ReadHeaderTimeout, srv.IdleTimeout = serveReadHeaderTimeout, serveIdleTimeout
			}
			return srv.ListenAndServe()
		},
	}
	floor.Flags().StringVar(&floorAddr, "addr", "127.0.0.1:0", "listen address")
	floor.Flags().StringVar(&respFile, "response", "", "file holding the response body")
	floor.Flags().StringVar(&contentType, "content-type", "application/json", "Content-Type of the response")
	floor.Flags().BoolVar(&floorTimeouts, "timeouts", false, "use serve's ReadHeaderTimeout and IdleTimeout")
	rootCmd.AddCommand(floor)
}

// floorHandler answers GET /healthz, and any other request by reading its
// body and writing resp.
func floorHandler(resp []byte, contentType string) http.Handler {
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	length := strconv.Itoa(len(resp))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.WriteHeader(200)
			return
		}
		b := bufs.Get().(*bytes.Buffer)
		b.Reset()
		_, err := b.ReadFrom(r.Body)
		bufs.Put(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{contentType}
		h["Content-Length"] = []string{length}
		_, _ = w.Write(resp)
	})
}

// loadGenHeapFloor is the heap the open-loop load generator grows to before
// it collects (internal/gctune), as serve's gcHeapFloor does for the gateway.
const loadGenHeapFloor = 64 << 20
