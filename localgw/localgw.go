// Package localgw runs a complete groundhog gateway in process, on loopback:
// the simulated provider (OpenAI, Anthropic and Gemini routes), one SQLite file, the response cache, the ledger,
// the operations API, the report, the state and evidence endpoints, and the
// session context and compaction endpoints. Tests and examples/agent use it; `groundhog serve` wires the
// same parts in cmd/groundhog.
package localgw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"

	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/compaction"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/contextapi"
	"github.com/groundhog-ai/groundhog/dashboard"
	"github.com/groundhog-ai/groundhog/evidence"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/sqlite"
	"github.com/groundhog-ai/groundhog/state"
)

// Gateway is a running in-process gateway. URL is its base URL
// ("http://127.0.0.1:port"); SimURL the simulated provider's.
type Gateway struct {
	URL     string
	SimURL  string
	Config  *config.Config
	DB      *sqlite.DB
	Sim     *sim.Server
	Ledger  *ledger.Writer
	Handler http.Handler

	close func() error
}

// Options adjusts the gateway; the zero value is the default configuration.
// Configure runs on the configuration before it is finished. Routes
// registers more routes beside the built-in ones (for instance the state and
// evidence endpoints).
type Options struct {
	Configure func(*config.Config)
	Routes    func(mux *http.ServeMux, auth func(*http.Request) (string, error), db *sqlite.DB)
	Logger    *slog.Logger
	// OpenAI, Anthropic and Gemini, when their BaseURL is set, replace the
	// simulated provider as the upstream of that provider's routes (a
	// replay of recorded traffic, for instance).
	OpenAI, Anthropic, Gemini gateway.Upstream
}

// Start runs a gateway whose database lives in dir. Close stops it.
func Start(ctx context.Context, dir string, o Options) (g *Gateway, err error) {
	cfg := config.Default()
	cfg.DB = filepath.Join(dir, "groundhog.db")
	cfg.Addr = "127.0.0.1:0"
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	if err := cfg.Finish(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var closers []func() error
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i]()
			}
		}
	}()
	if err := sim.CheckFault(cfg.Sim.Fault); err != nil {
		return nil, err
	}
	s := sim.New(sim.Config{Prices: cfg.PriceTable, FirstToken: cfg.Sim.FirstToken,
		PerPromptToken: cfg.Sim.PerPromptToken, PerOutputToken: cfg.Sim.PerOutputToken, Fault: cfg.Sim.Fault})
	simURL, shutdown, err := s.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() error { return shutdown(context.Background()) })
	db, err := sqlite.Open(ctx, cfg.DB)
	if err != nil {
		return nil, err
	}
	closers = append(closers, db.Close)
	c, err := cache.New(cache.Options{Store: db, MaxBytes: cfg.Cache.MemoryBytes, OwnStore: true})
	if err != nil {
		return nil, err
	}
	lw, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: cfg.DB + ".journal", Logger: log})
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() error { return lw.Close(context.Background()) })
	idem := idempotency.New(idempotency.Options{Store: db, Lease: cfg.Idempotency.Lease, Retention: cfg.Idempotency.Retention, Logger: log})
	up := gateway.Upstream{BaseURL: simURL + "/v1", Provider: "sim"}
	openai, anthropic := up, up
	if o.OpenAI.BaseURL != "" {
		openai = o.OpenAI
	}
	if o.Anthropic.BaseURL != "" {
		anthropic = o.Anthropic
	}
	gemini := gateway.Upstream{BaseURL: simURL, Provider: "sim"} // the sim serves /v1beta/models/{model}:generateContent at its root
	if o.Gemini.BaseURL != "" {
		gemini = o.Gemini
	}

	// The compactor calls the gateway itself, which exists only once New
	// returns: it reaches it through gw, set right after.
	var gw *gateway.Server
	self := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gw.ServeHTTP(w, r) })
	comp := &compaction.Compactor{Gateway: self, States: db, Evidence: db, Config: cfg.Compaction, Prices: cfg.PriceTable, MaxStateBytes: cfg.State.MaxBytes}
	gw = gateway.New(gateway.Options{
		Config: &cfg, Keys: db, Cache: c, Ledger: lw, Idem: idem, OpenAI: openai, Anthropic: anthropic, Gemini: gemini,
		Logger: log, Ready: db.Ping, Keyless: true, // loopback, started without keys, as serve would
		Extra: func(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
			d := dashboard.New(dashboard.Options{Store: db, Auth: auth, Logger: log})
			mux.Handle(dashboard.ReportPath, d.ReportHandler())
			ops := idem.Handler(auth)
			mux.Handle(idempotency.OperationsPath, ops)
			mux.Handle(idempotency.OperationsPath+"/", ops)
			state.New(db, state.Limits{MaxBytes: cfg.State.MaxBytes}, log).Register(mux, auth)
			evidence.New(db, evidence.Limits{QuotaBytes: cfg.Evidence.QuotaBytes, MaxUploadBytes: cfg.Evidence.MaxUploadBytes}, log).Register(mux, auth)
			contextapi.Mount(mux, auth, contextapi.Options{States: db, Evidence: db, Compactor: comp, Logger: log})
			if o.Routes != nil {
				o.Routes(mux, auth, db)
			}
		},
	})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: gw}
	go func() { _ = srv.Serve(ln) }()
	closers = append(closers, func() error {
		if err := srv.Shutdown(context.Background()); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return gw.Drain(context.Background())
	})
	g = &Gateway{URL: "http://" + ln.Addr().String(), SimURL: simURL, Config: &cfg, DB: db, Sim: s, Ledger: lw, Handler: gw}
	g.close = func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(errs...)
	}
	return g, nil
}

// Close stops the server, drains the ledger and closes the stores.
func (g *Gateway) Close() error {
	if g == nil || g.close == nil {
		return nil
	}
	err := g.close()
	g.close = nil
	if err != nil {
		return fmt.Errorf("localgw: close: %w", err)
	}
	return nil
}
