package main

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog/bench"
)

func init() {
	var o bench.Options
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test groundhog against same-run baselines (markdown table out)",
		Long: `Start the simulated provider, a bare httputil.ReverseProxy and groundhog gateways
as separate processes on loopback, drive each with a stdlib HTTP client, and print
throughput and server CPU per request as ratios against the baselines.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log = cmd.ErrOrStderr()
			rep, err := bench.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			rep.WriteMarkdown(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().DurationVar(&o.Duration, "duration", 5*time.Second, "duration of each scenario")
	cmd.Flags().IntVar(&o.Conns, "conns", 32, "concurrent connections")
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
			_ = os.Stdout
			return http.ListenAndServe(addr, mux)
		},
	}
	proxy.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address")
	proxy.Flags().StringVar(&target, "target", "", "upstream base URL")
	rootCmd.AddCommand(proxy)
}
