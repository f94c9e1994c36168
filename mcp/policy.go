package mcp

import (
	"context"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog/config"
)

// toolPolicy is what the stage does with one tool's calls.
type toolPolicy struct {
	readOnly bool
	cacheTTL time.Duration // read-only: cache answers this long
	dedupe   time.Duration // side effect without a key: replay inside this window
}

// serverPolicy is what a server's tools/list said, and when.
type serverPolicy struct {
	at       time.Time
	readOnly map[string]bool
}

// policy returns tool's policy on up: the configuration's override, else
// the server's readOnlyHint. A tool whose annotations cannot be read is a
// side effect: executed every time, never shared.
func (g *Gateway) policy(ctx context.Context, up *upstream, tool string) toolPolicy {
	t := up.cfg.Tools[tool]
	p := toolPolicy{cacheTTL: t.CacheTTL, dedupe: t.DedupeWindow}
	switch t.Policy {
	case config.MCPReadOnly:
		p.readOnly = true
		return p
	case config.MCPSideEffect:
		return p
	}
	now := g.clock.Now()
	g.mu.Lock()
	sp := g.policies[up.name]
	g.mu.Unlock()
	if sp == nil || now.Sub(sp.at) >= g.o.PolicyTTL || (sp.readOnly != nil && !has(sp.readOnly, tool)) {
		sp = g.readAnnotations(ctx, up, now)
		g.mu.Lock()
		g.policies[up.name] = sp
		g.mu.Unlock()
	}
	p.readOnly = sp.readOnly[tool]
	return p
}

func has(m map[string]bool, k string) bool { _, ok := m[k]; return ok }

// readAnnotations lists up's tools with the MCP client of the official SDK,
// on a session of the gateway's own.
func (g *Gateway) readAnnotations(ctx context.Context, up *upstream, now time.Time) *serverPolicy {
	sp := &serverPolicy{at: now, readOnly: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if up.stdio != nil {
		ro, err := up.stdio.stdioTools(ctx)
		if err != nil {
			g.log.Warn("mcp: listing tools failed; tools count as side effects", "server", up.name, "err", err)
			sp.at = now.Add(-g.o.PolicyTTL + 10*time.Second) // try again soon
			return sp
		}
		sp.readOnly = ro
		return sp
	}
	hc := &http.Client{Transport: headerTransport{base: g.client.Transport, headers: up.cfg.Headers}, CheckRedirect: g.client.CheckRedirect}
	cl := sdk.NewClient(&sdk.Implementation{Name: "groundhog", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: up.cfg.URL, HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		g.log.Warn("mcp: reading tool annotations failed; tools count as side effects", "server", up.name, "err", err)
		sp.at = now.Add(-g.o.PolicyTTL + 10*time.Second) // try again soon
		return sp
	}
	defer cs.Close()
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			g.log.Warn("mcp: listing tools failed; tools count as side effects", "server", up.name, "err", err)
			break
		}
		sp.readOnly[t.Name] = t.Annotations != nil && t.Annotations.ReadOnlyHint
	}
	return sp
}

// headerTransport adds a server's configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return base.RoundTrip(r)
}
