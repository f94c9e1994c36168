package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/groundhog-ai/groundhog/config"
)

// startPprof serves net/http/pprof on its own listener at addr, apart from
// the gateway's handler so no gateway route or key can reach it. Profiles
// show request data in memory and cost CPU to take, so addr must be a
// loopback address; anything else is refused. An empty addr starts
// nothing. The returned stop closes the listener.
func startPprof(addr string) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	if !config.IsLoopback(addr) {
		return nil, fmt.Errorf("--pprof %s: profiling is served on loopback only (e.g. 127.0.0.1:6060)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("groundhog: pprof listener stopped: %v\n", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
