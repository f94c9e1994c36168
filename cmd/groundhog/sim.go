package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundhog-ai/groundhog/sim"
)

func init() {
	var addr, fault string
	var cfg sim.Config
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the simulated provider (OpenAI and Anthropic wire formats) as its own server",
		Long: `Run the simulated provider. It answers /v1/chat/completions, /v1/responses,
/v1/embeddings, /v1/models and /v1/messages deterministically, counts tokens,
caches prompt prefixes by the providers' rules (OpenAI automatic and
prompt_cache_options modes, Anthropic cache_control with 5m/1h TTLs; limits per
model), injects faults on request (header Sim-Fault) and keeps its bill at
GET /sim/v1/bill.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := sim.CheckFault(fault); err != nil {
				return err
			}
			cfg.Fault = fault
			s := sim.New(cfg)
			base, shutdown, err := s.Listen(addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "groundhog sim: listening on %s (OpenAI base URL %s/v1; bill at %s/sim/v1/bill)\n", base, base, base)
			if cfg.MCP {
				fmt.Fprintf(cmd.OutOrStdout(), "groundhog sim: MCP server at %s%s (effects at %s%s)\n", base, sim.MCPPath, base, sim.MCPEffectsPath)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return shutdown(sctx)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&addr, "addr", "127.0.0.1:9001", "listen address")
	fs.DurationVar(&cfg.FirstToken, "first-token", 0, "base time to first token")
	fs.DurationVar(&cfg.PerPromptToken, "per-prompt-token", 0, "added time to first token per uncached prompt token")
	fs.DurationVar(&cfg.PerOutputToken, "per-output-token", 0, "delay per output token")
	fs.DurationVar(&cfg.PrefixCacheTTL, "prefix-cache-ttl", 0, "lifetime of a short-lived prompt-cache entry (OpenAI automatic caching, Anthropic 5m; default 5m); 30m and 1h entries keep theirs")
	fs.StringVar(&fault, "fault", "", "fault for every request (status=503 | timeout | reset-mid-stream | drop-after-success)")
	fs.BoolVar(&cfg.MCP, "mcp", false, "also serve a simulated MCP server at /mcp: a read-only search tool and a send_email tool whose emails are counted at /sim/v1/mcp/effects")
	fs.DurationVar(&cfg.MCPLatency, "mcp-latency", 0, "added time of every simulated tool call")
	rootCmd.AddCommand(cmd)
}
