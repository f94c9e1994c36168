// Package demo runs groundhog's demonstrations: real calls through an
// in-process gateway to an in-process simulated provider, measured by the
// gateway's own ledger and checked against the provider's bill.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/sqlite"
)

// env is a gateway in front of a simulated provider, both on loopback, with
// the ledger in a temporary SQLite file. close removes everything.
type env struct {
	cfg     config.Config
	gwURL   string
	simURL  string
	db      *sqlite.DB
	ledger  *ledger.Writer
	cleanup []func()
}

// newEnv starts the simulated provider and the gateway (keyless, single
// tenant, exact cache off unless a request asks for it).
func newEnv(ctx context.Context) (_ *env, err error) {
	e := &env{cfg: config.Default()}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	dir, err := os.MkdirTemp("", "groundhog-demo-")
	if err != nil {
		return nil, err
	}
	e.cleanup = append(e.cleanup, func() { os.RemoveAll(dir) })
	e.cfg.DB = filepath.Join(dir, "groundhog.db")
	if err := e.cfg.Finish(); err != nil {
		return nil, err
	}
	s := sim.New(sim.Config{Prices: e.cfg.PriceTable})
	simURL, stopSim, err := s.Listen("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo: start the simulated provider: %w", err)
	}
	e.simURL = simURL
	e.cleanup = append(e.cleanup, func() { _ = stopSim(context.Background()) })
	if e.db, err = sqlite.Open(ctx, e.cfg.DB); err != nil {
		return nil, err
	}
	e.cleanup = append(e.cleanup, func() { _ = e.db.Close() })
	c, err := cache.New(cache.Options{Store: e.db, MaxBytes: e.cfg.Cache.MemoryBytes})
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if e.ledger, err = ledger.OpenWriter(ctx, e.db, ledger.WriterOptions{JournalDir: filepath.Join(dir, "journal"), Logger: log}); err != nil {
		return nil, err
	}
	e.cleanup = append(e.cleanup, func() { _ = e.ledger.Close(context.Background()) })
	idem := idempotency.New(idempotency.Options{Store: e.db, Lease: e.cfg.Idempotency.Lease, Retention: e.cfg.Idempotency.Retention, Logger: log})
	up := gateway.Upstream{BaseURL: simURL + "/v1", Provider: "sim"}
	gw := gateway.New(gateway.Options{Config: &e.cfg, Keys: e.db, Cache: c, Ledger: e.ledger, Idem: idem, Keyless: true,
		OpenAI: up, Anthropic: up, Logger: log, Ready: e.db.Ping})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("demo gateway", "err", err)
		}
	}()
	e.cleanup = append(e.cleanup, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = gw.Drain(sctx)
	})
	e.gwURL = "http://" + ln.Addr().String()
	return e, nil
}

// close stops the gateway, then the ledger, the store and the sim, and
// removes the temporary files, in the reverse order of their start.
func (e *env) close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.cleanup = nil
}
