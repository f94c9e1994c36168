package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/internal/gctune"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/mcp"
	"github.com/groundhog-ai/groundhog/metrics"
	"github.com/groundhog-ai/groundhog/observe"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

func init() {
	var cf configFlags
	var pprofAddr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway (OpenAI and Anthropic compatible)",
		Long: `Run the groundhog gateway. With no upstream configured it serves from the
built-in simulated provider, on one SQLite file, listening on loopback.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := cf.load(cmd)
			if err != nil {
				return err
			}
			stopPprof, err := startPprof(pprofAddr)
			if err != nil {
				return err
			}
			defer stopPprof()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, cmd.OutOrStdout())
		},
	}
	d := config.Default()
	fs := cmd.Flags()
	addConfigFlags(fs, &cf)
	fs.StringVar(&cf.cfg.Cache.Backend, "cache", d.Cache.Backend, `shared cache tier: "memory" (the database) or a redis:// / rediss:// URL`)
	fs.StringVar(&cf.cfg.Cache.RedisPrefix, "redis-prefix", d.Cache.RedisPrefix, "prefix of every Redis key and channel")
	fs.Int64Var(&cf.cfg.Cache.RedisMaxEntryBytes, "redis-max-entry-bytes", d.Cache.RedisMaxEntryBytes, "largest cache entry written to Redis; larger ones stay in the memory tier")
	fs.StringVar(&cf.cfg.Addr, "addr", d.Addr, "listen address (a non-loopback address requires gateway keys)")
	fs.StringVar(&cf.cfg.Upstream, "upstream", d.Upstream, `OpenAI-compatible base URL ending in /v1, or "sim" for the built-in simulated provider`)
	fs.StringVar(&cf.cfg.AnthropicUpstream, "anthropic-upstream", "", `Anthropic base URL (default: "sim" when --upstream is sim, else https://api.anthropic.com/v1)`)
	fs.Int64Var(&cf.cfg.MaxBodyBytes, "max-body-bytes", d.MaxBodyBytes, "largest request body accepted (bytes)")
	fs.DurationVar(&cf.cfg.UpstreamTimeout, "upstream-timeout", d.UpstreamTimeout, "deadline of one upstream call, streaming included")
	fs.StringVar(&cf.cfg.LogLevel, "log-level", d.LogLevel, "debug, info, warn or error")
	fs.StringVar(&cf.cfg.LogFormat, "log-format", "text", "log format: text or json (one line per call)")
	fs.StringVar(&cf.cfg.OTLPEndpoint, "otlp-endpoint", "", "export one OpenTelemetry span per call over OTLP/HTTP to this URL (off when empty)")
	fs.StringVar(&cf.cfg.MetricsToken, "metrics-token", "", "bearer token that lets other hosts scrape /metrics (loopback only without it)")
	fs.StringVar(&pprofAddr, "pprof", "", "serve net/http/pprof on this loopback address (e.g. 127.0.0.1:6060; off when empty)")
	fs.Int64Var(&cf.cfg.Cache.MemoryBytes, "cache-memory-bytes", d.Cache.MemoryBytes, "in-memory cache tier budget (bytes)")
	fs.StringVar(&cf.cfg.Ledger.JournalDir, "journal-dir", "", "ledger journal directory (default: <db>.journal)")
	fs.DurationVar(&cf.cfg.Idempotency.Lease, "lease", d.Idempotency.Lease, "idempotency lease length")
	fs.DurationVar(&cf.cfg.Idempotency.Retention, "retention", d.Idempotency.Retention, "idempotency record retention")
	rootCmd.AddCommand(cmd)
}

// serve runs the gateway until ctx ends, then drains: in-flight requests
// finish, the ledger journal is flushed into the store, the store closes.
func serve(ctx context.Context, cfg *config.Config, out io.Writer) error {
	defer gctune.MinHeap(gcHeapFloor)() // no collection before the heap reaches 24 MiB (GOGC, if set, wins)
	log, err := newFormatLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	st, err := openStores(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	db := st.DB
	if err := addConfigKeys(ctx, db, cfg.Keys); err != nil {
		return err
	}
	nkeys, err := db.CountKeys(ctx)
	if err != nil {
		return err
	}
	if nkeys == 0 && !config.IsLoopback(cfg.Addr) {
		return fmt.Errorf("refusing to listen on %s without gateway keys: anyone who can reach it would use your provider account. Create a key with `groundhog keys create --tenant NAME --db %s`, or listen on 127.0.0.1", cfg.Addr, redact(cfg.DB))
	}

	openai := gateway.Upstream{BaseURL: cfg.Upstream, APIKey: cfg.OpenAIAPIKey, Provider: "openai"}
	anthropic := gateway.Upstream{BaseURL: cfg.AnthropicUpstream, APIKey: cfg.AnthropicAPIKey, Provider: "anthropic"}
	bedrockUp := gateway.Upstream{BaseURL: cfg.BedrockUpstream, APIKey: cfg.BedrockAPIKey, Provider: "bedrock"}
	if cfg.BedrockUpstream != "sim" && cfg.BedrockUpstream != "" && cfg.BedrockAPIKey == "" {
		// No Bedrock API key: sign with SigV4 from the AWS configuration chain.
		sign, region, err := bedrock.LoadSigner(ctx, cfg.BedrockRegion)
		if err != nil {
			fmt.Fprintf(out, "groundhog: warning: no Bedrock API key and no AWS signing (%v): Bedrock calls go unsigned\n", err)
		} else {
			bedrockUp.Sign = sign
			fmt.Fprintf(out, "groundhog: Bedrock calls to %s are signed with SigV4 for %s (AWS configuration chain)\n", redact(cfg.BedrockUpstream), region)
		}
	}
	if cfg.OpenAIOnBedrock {
		// Bedrock's OpenAI-compatible endpoint: the Bedrock API key, else
		// the same SigV4 signing as the Bedrock routes.
		openai = gateway.Upstream{BaseURL: cfg.Upstream, APIKey: cfg.BedrockAPIKey, Provider: "bedrock", Sign: bedrockUp.Sign}
		fmt.Fprintf(out, "groundhog: the OpenAI routes go to Bedrock's OpenAI-compatible endpoint %s\n", redact(cfg.Upstream))
	}
	geminiUp := gateway.Upstream{BaseURL: cfg.GeminiUpstream, APIKey: cfg.GeminiAPIKey, Provider: "gemini"}
	if cfg.Upstream == "sim" || cfg.AnthropicUpstream == "sim" || cfg.BedrockUpstream == "sim" || cfg.GeminiUpstream == "sim" {
		if err := sim.CheckFault(cfg.Sim.Fault); err != nil {
			return fmt.Errorf("sim.fault: %w", err)
		}
		s := sim.New(sim.Config{Prices: cfg.PriceTable, FirstToken: cfg.Sim.FirstToken,
			PerPromptToken: cfg.Sim.PerPromptToken, PerOutputToken: cfg.Sim.PerOutputToken, Fault: cfg.Sim.Fault})
		base, shutdown, err := s.Listen("127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("start simulated provider: %w", err)
		}
		defer shutdown(context.Background())
		simUp := gateway.Upstream{BaseURL: base + "/v1", Provider: "sim"}
		if cfg.Upstream == "sim" {
			openai = simUp
		}
		if cfg.AnthropicUpstream == "sim" {
			anthropic = simUp
		}
		if cfg.GeminiUpstream == "sim" {
			geminiUp = gateway.Upstream{BaseURL: base, Provider: "sim"} // the sim serves /v1beta/models/{model}:generateContent at its root
		}
		if cfg.BedrockUpstream == "sim" {
			bedrockUp = gateway.Upstream{BaseURL: base, Provider: "sim"} // the sim serves /model/{modelId}/converse at its root
		}
		why := "upstream sim"
		if upstreamUnset {
			why = "no upstream configured"
		}
		fmt.Fprintf(out, "groundhog: %s: serving from the built-in simulated provider (%s; bill at %s/sim/v1/bill)\n", why, base, base)
	}
	if cfg.Upstream != "sim" && cfg.OpenAIAPIKey == "" {
		fmt.Fprintf(out, "groundhog: warning: no OpenAI provider key (set OPENAI_API_KEY or openai_api_key): calls to %s go without one\n", redact(cfg.Upstream))
	}
	if cfg.AnthropicUpstream != "sim" && cfg.AnthropicAPIKey == "" {
		fmt.Fprintf(out, "groundhog: warning: no Anthropic provider key (set ANTHROPIC_API_KEY or anthropic_api_key): calls to %s go without one\n", redact(cfg.AnthropicUpstream))
	}

	c, err := cache.New(cache.Options{Store: st.Cache, MaxBytes: cfg.Cache.MemoryBytes, OwnStore: st.cacheLocal()})
	if err != nil {
		return err
	}
	journal := cfg.Ledger.JournalDir
	if journal == "" {
		journal = defaultJournalDir(cfg)
	}
	lw, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: journal, Logger: log, FlushInterval: cfg.Ledger.FlushInterval})
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	var gw *gateway.Server
	m := metrics.New(func() float64 { return float64(gw.InFlight()) })
	for name := range cfg.Operations {
		m.DeclareOperations(name)
	}
	for _, r := range cfg.Rules {
		m.DeclareOperations(r.Operation)
	}
	rec := &observe.Recorder{Metrics: m, Log: log}
	if log.Enabled(ctx, slog.LevelInfo) {
		// The call lines, off the request's path; Close (after the
		// drain below, and on every return) writes the queued ones.
		access := observe.NewAccessLog(os.Stderr, cfg.LogFormat == "json", accessLogQueue, log)
		defer access.Close()
		rec.Access = access
		m.CounterFunc("groundhog_access_log_dropped_total", "Access-log lines dropped because the log writer could not keep up.",
			func() float64 { return float64(access.Dropped()) })
	}
	st.register(m)
	if cfg.Ledger.Disabled {
		fmt.Fprintln(out, "groundhog: ledger disabled by configuration: no rows, no report")
	} else {
		rec.Next = lw
	}
	if cfg.OTLPEndpoint != "" {
		tracer, stopTraces, err := observe.OTLP(ctx, cfg.OTLPEndpoint, version)
		if err != nil {
			_ = lw.Close(context.Background())
			return err
		}
		defer stopTraces(context.Background())
		rec.Tracer = tracer
		fmt.Fprintf(out, "groundhog: exporting a trace span per call to %s\n", redact(cfg.OTLPEndpoint))
	}
	idem := idempotency.New(idempotency.Options{Store: db, Lease: cfg.Idempotency.Lease, Retention: cfg.Idempotency.Retention, Logger: log,
		Notifier: st.notifier()})
	var mcpGW *mcp.Gateway
	if len(cfg.MCP.Servers) > 0 {
		mcpGW = mcp.New(mcp.Options{Config: cfg.MCP, Idem: idem, Cache: c, Ledger: rec, Logger: log, Resources: db})
		// Last out: the stdio MCP servers outlive the requests drained below.
		defer func() {
			if err := mcpGW.Close(); err != nil {
				log.Error("shutdown: MCP servers not stopped cleanly", "err", err)
			}
		}()
	}
	pct := openPromptCache(cfg, journal, log) // restored from the snapshot beside the database or the journal
	gw = gateway.New(gateway.Options{
		Config: cfg, Keys: db, Cache: c, Ledger: rec, Idem: idem, Flights: st.flights(cfg, log), FanOutShared: st.fanOut(), OpenAI: openai, Anthropic: anthropic, Bedrock: bedrockUp, Gemini: geminiUp,
		Logger: log, Ready: st.Ready, Degraded: st.degraded, PromptCache: pct,
		Extra: withContextRoutes(withStateRoutes(withMCPRoutes(extraRoutes(lw.Fresh(db), idem, m, cfg.MetricsToken, log), mcpGW), db, cfg, log), db, cfg, log,
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gw.ServeHTTP(w, r) })),
		// Keyless only for a loopback gateway that starts without keys: one
		// that starts with keys, or listens beyond loopback, never serves
		// without a key, even after its last key is revoked.
		Keyless: nkeys == 0 && config.IsLoopback(cfg.Addr),
	})
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	go idem.PurgeLoop(bg, time.Hour)
	go purgeCache(bg, st.Cache, log)
	// Managed Gemini explicit caches: swept every 30 seconds; the ones
	// left are deleted on shutdown, before the ledger closes.
	ectx, stopExplicit := context.WithCancel(context.Background())
	defer stopExplicit()
	explicitDone := make(chan struct{})
	go func() { gw.ExplicitCacheLoop(ectx, 30*time.Second); close(explicitDone) }()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		_ = lw.Close(context.Background())
		return err
	}
	base, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	// No ReadTimeout or WriteTimeout: they would cut long streams (and a
	// ReadTimeout cancels the request once it fires after the body). The
	// guard bounds slow clients per request instead: a minimum body rate
	// and a deadline on each response write.
	srv := &http.Server{Handler: httpguard.Handler(gw, httpguard.Options{}), ReadHeaderTimeout: serveReadHeaderTimeout, IdleTimeout: serveIdleTimeout,
		BaseContext: func(net.Listener) context.Context { return base }}
	mode := "keyless: single tenant \"local\""
	if nkeys > 0 {
		mode = fmt.Sprintf("%d gateway key(s)", nkeys)
	}
	fmt.Fprintf(out, "groundhog: stores: %s\n", st.Describe)
	fmt.Fprintf(out, "groundhog: listening on http://%s (database %s, %s)\n", ln.Addr(), redact(cfg.DB), mode)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		_ = lw.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	// Graceful stop: stop accepting, let requests finish for the grace
	// period, then cancel the rest (their rows are recorded as 499) and
	// wait for handlers and upstream flights before the ledger closes, so
	// no row is written to a closed ledger.
	log.Info("shutting down: draining requests and the ledger")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	serr := srv.Shutdown(sctx)
	cancelRequests()
	_ = srv.Close()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	if err := gw.Drain(dctx); err != nil {
		log.Error("shutdown: work still running", "err", err)
	}
	stopExplicit()
	<-explicitDone
	if rec.Access != nil {
		rec.Access.Close()
	}
	if err := savePromptCache(pct, cfg, journal); err != nil {
		log.Error("shutdown: prompt-cache diagnosis not saved", "err", err)
	}
	if err := lw.Close(dctx); err != nil {
		log.Error("ledger drain failed; the journal keeps the rows for the next start", "err", err)
	}
	if serr != nil && !errors.Is(serr, http.ErrServerClosed) && !errors.Is(serr, context.DeadlineExceeded) {
		return serr
	}
	return nil
}

// purgeCache deletes expired cache entries from the store every hour.
func purgeCache(ctx context.Context, db groundhog.CacheStore, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n, err := db.PurgeCache(ctx, now); err != nil {
				log.Warn("cache purge failed", "err", err)
			} else if n > 0 {
				log.Info("purged expired cache entries", "count", n)
			}
		}
	}
}

// addConfigKeys makes the configuration file's gateway keys (hashes) the
// store's "cfg-" keys: the missing ones are added, and the ones no longer in
// the file are removed — deleting a key from the file revokes it.
func addConfigKeys(ctx context.Context, db groundhog.KeyStore, keys []config.KeyConfig) error {
	declared := map[string]bool{}
	for _, k := range keys {
		declared[k.SHA256] = true
	}
	stored, err := db.ListKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range stored {
		if strings.HasPrefix(k.ID, groundhog.ConfigKeyIDPrefix) && !declared[k.Hash] {
			if _, err := db.DeleteKey(ctx, k.ID); err != nil && !groundhog.IsNotFound(err) {
				return err
			}
		}
	}
	for _, k := range keys {
		tenant, err := db.TenantForKey(ctx, k.SHA256)
		switch {
		case err == nil && tenant != k.Tenant:
			return fmt.Errorf("config key %s… is already stored for tenant %q, not %q", k.SHA256[:8], tenant, k.Tenant)
		case err == nil:
		case groundhog.IsNotFound(err):
			if err := db.CreateKey(ctx, groundhog.APIKey{ID: groundhog.ConfigKeyIDPrefix + k.SHA256[:groundhog.KeyIDHexLen], Tenant: k.Tenant, Hash: k.SHA256, CreatedAt: time.Now().UTC()}); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return nil
}

// The listener's timeouts: a client gets this long to send a request's
// head, and an idle keep-alive connection is closed after serveIdleTimeout.
const (
	serveReadHeaderTimeout = 30 * time.Second
	serveIdleTimeout       = 120 * time.Second
)

// gcHeapFloor is the heap size below which serve does not collect
// (internal/gctune): a gateway's live heap is a few MB and it allocates a few
// KB a request, so GOGC=100 alone collects about ten times a second under
// load. It costs up to this much memory; GOGC in the environment turns it
// off. 24 MiB measured better than 64 MiB on the 1 KB hit: a heap that stays
// within the last-level cache keeps allocations cache-warm
// (docs/design/0008-gc-heap-floor.md).
const gcHeapFloor = 24 << 20

// accessLogQueue is how many access lines may wait for the log writer
// before new ones are dropped (and counted) rather than delay a call.
const accessLogQueue = 8192
