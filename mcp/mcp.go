// Package mcp is the gateway's MCP stage (DESIGN.md §9): it proxies the
// upstream MCP servers of the configuration — Streamable HTTP servers, and
// stdio servers it runs itself (stdio.go) — at /mcp/NAME over Streamable
// HTTP, behind the gateway's authentication, and applies groundhog's
// mechanisms to tools/call:
//
//   - a read-only tool (readOnlyHint, or policy read_only in the config):
//     identical concurrent calls — same tenant, server, tool and canonical
//     arguments — run once upstream; with a cache TTL, a tenant-scoped exact
//     cache answers repeats;
//   - a side-effect tool called with an operation identity
//     (_meta["io.groundhog/idempotency-key"] or an Idempotency-Key header):
//     at most one execution per tenant and key, on the operation records of
//     the idempotency package (leases, fencing); a retry gets the stored
//     result, a concurrent duplicate waits for it, the key reused with other
//     arguments is a JSON-RPC error naming the conflict;
//   - a side-effect tool called without a key: executed every time
//     (identical text is not the same intention), an identical call in the
//     same session counted as a suspected duplicate — or, with the tool's
//     dedupe_window, answered with the first result inside the window.
//
// Every other message (initialize, lists, resources, prompts, notifications,
// responses to the server's requests, the GET stream, DELETE) is relayed as
// it is to an HTTP server; a stdio server's process is shared by every
// client, so the gateway multiplexes it (see stdio.go). Each tools/call gets a ledger row with operation "mcp:SERVER/TOOL".
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/coalesce"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/idempotency"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
)

// PathPrefix is where the gateway mounts the MCP servers: PathPrefix+NAME.
const PathPrefix = "/mcp/"

// Shape is the ledger shape of a tool call.
const Shape groundhog.Shape = "mcp"

// MetaIdempotencyKey is the _meta field of tools/call params that carries
// the call's operation identity.
const MetaIdempotencyKey = "io.groundhog/idempotency-key"

// Recorder takes ledger rows (gateway.Recorder has the same method).
type Recorder interface {
	Record(e groundhog.LedgerEntry) error
}

// Options wire a Gateway. Config and Idem are required.
type Options struct {
	Config config.MCPConfig
	// Idem keeps the operation records of side-effect calls with a key.
	Idem *idempotency.Service
	// Cache answers repeats of read-only tools with a cache_ttl; nil
	// disables caching (coalescing stays).
	Cache *cache.Cache
	// Ledger takes one row per tools/call; nil records nothing.
	Ledger Recorder
	Clock  groundhog.Clock
	Logger *slog.Logger
	// Client makes the upstream requests; nil uses a client without
	// redirects over http.DefaultTransport.
	Client *http.Client
	// PolicyTTL is how long tool annotations read from a server are
	// trusted; 0 is five minutes.
	PolicyTTL time.Duration
	// Resources records which tenant opened which session (sessions.go);
	// replicas that share it accept each other's sessions. nil keeps the
	// bindings in this process only.
	Resources groundhog.ResourceStore
}

// Gateway is the MCP stage. Create it with New.
type Gateway struct {
	o      Options
	clock  groundhog.Clock
	log    *slog.Logger
	client *http.Client

	flights coalesce.Group           // read-only calls in flight
	tracker coalesce.Tracker[string] // every tool call in flight, for the ledger's in-flight flag

	stdio map[string]*stdioServer // servers run as a command, by name

	streams *streamStore // the answer streams kept for resumption; nil when disabled

	mu       sync.Mutex
	sessions map[string]string        // upstream (or, for a stdio server, the gateway's) session id → tenant
	policies map[string]*serverPolicy // server name → annotations read from it
	seen     map[string]seenCall      // side-effect calls without a key: suspected duplicates
	running  map[string]chan struct{} // side-effect calls without a key, running (for dedupe_window)
}

// New returns a Gateway for the servers of o.Config.
func New(o Options) *Gateway {
	if o.Idem == nil {
		panic("mcp: Options.Idem is nil")
	}
	if o.Clock == nil {
		o.Clock = groundhog.SystemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Config.MaxMessageBytes <= 0 {
		o.Config.MaxMessageBytes = config.DefaultMCPMaxMessageBytes
	}
	if o.PolicyTTL <= 0 {
		o.PolicyTTL = 5 * time.Minute
	}
	c := o.Client
	if c == nil {
		c = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	g := &Gateway{o: o, clock: o.Clock, log: o.Logger, client: c, stdio: map[string]*stdioServer{},
		sessions: map[string]string{}, policies: map[string]*serverPolicy{},
		seen: map[string]seenCall{}, running: map[string]chan struct{}{}}
	if rc := o.Config.Resume; !rc.Disabled {
		retain, maxBytes := rc.Retention, rc.MaxBytes
		if retain <= 0 {
			retain = config.DefaultMCPResumeRetention
		}
		if maxBytes <= 0 {
			maxBytes = config.DefaultMCPResumeMaxBytes
		}
		g.streams = newStreamStore(o.Clock, retain, maxBytes)
	}
	for name, srv := range o.Config.Servers {
		if srv.Command != nil {
			g.stdio[name] = newStdioServer(name, srv, o.Logger)
		}
	}
	return g
}

// Close stops the processes of the stdio servers (stdin closed, then
// SIGTERM, then SIGKILL) and refuses their further messages. HTTP servers
// need nothing.
func (g *Gateway) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, 0, len(g.stdio))
	var mu sync.Mutex
	for _, s := range g.stdio {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.close(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("stopping MCP server %s: %w", s.name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Handler serves PathPrefix+"{name}": auth maps the request to a tenant
// (the gateway's authenticate), before anything else reads the request.
func (g *Gateway) Handler(auth func(*http.Request) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, err := auth(r)
		if err != nil {
			writeError(w, statusFor(err), nil, codeFor(err), groundhog.ErrorMessage(err))
			return
		}
		if _, _, err := groundhog.SessionHeaders(r.Header.Values(groundhog.HeaderSession), r.Header.Values(groundhog.HeaderParentSession)); err != nil {
			writeError(w, http.StatusBadRequest, nil, codeInvalidRequest, groundhog.ErrorMessage(err))
			return
		}
		name := strings.TrimPrefix(r.URL.Path, PathPrefix)
		srv, ok := g.o.Config.Servers[name]
		if !ok || name == "" {
			writeError(w, http.StatusNotFound, nil, codeInvalidRequest, "unknown MCP server \""+name+"\": declare it under mcp.servers in the configuration")
			return
		}
		up := &upstream{name: name, cfg: srv, stdio: g.stdio[name]}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			owned, err := g.ownsSession(r.Context(), tenant, name, sid)
			if err != nil {
				writeError(w, statusFor(err), nil, codeInternal, groundhog.ErrorMessage(err))
				return
			}
			if !owned {
				// Another tenant's session is as unknown as a made-up one.
				writeError(w, http.StatusNotFound, nil, codeInvalidRequest, "session not found: initialize a new session")
				return
			}
		}
		if last := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && (strings.HasPrefix(last, eventIDPrefix) || last != "" && up.stdio != nil) {
			// One of the gateway's own streams (a stdio server has no
			// others); any other id is an HTTP server's, relayed to it.
			g.resume(w, r, tenant)
			return
		}
		if r.Method == http.MethodDelete && g.streams != nil {
			defer g.streams.dropSession(r.Header.Get("Mcp-Session-Id"))
		}
		switch r.Method {
		case http.MethodGet, http.MethodDelete:
			if up.stdio != nil {
				g.relayStdio(w, r, tenant, up, nil)
				return
			}
			g.relay(w, r, tenant, up, nil)
			return
		case http.MethodPost:
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			writeError(w, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "method "+r.Method+" not allowed on an MCP endpoint")
			return
		}
		if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
			// Streamable HTTP posts JSON; anything else is refused here,
			// never relayed.
			writeError(w, http.StatusUnsupportedMediaType, nil, codeInvalidRequest, "Content-Type must be application/json, not \""+ct+"\"")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, g.o.Config.MaxMessageBytes+1))
		if err != nil {
			// A stalled client (the slow-client guard cut it off) is 408,
			// as on the provider routes; the read error's detail stays out.
			err = httpguard.BodyError(err)
			writeError(w, statusFor(err), nil, codeInvalidRequest, groundhog.ErrorMessage(err))
			return
		}
		if int64(len(body)) > g.o.Config.MaxMessageBytes {
			writeError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest, "message larger than mcp.max_message_bytes")
			return
		}
		msg, err := parseMessage(body)
		if err != nil {
			writeError(w, http.StatusBadRequest, msg.idOrNil(), codeOf(err), err.Error())
			return
		}
		if msg.Method == "tools/call" && msg.isCall() {
			g.toolCall(w, r, tenant, up, msg, body)
			return
		}
		if up.stdio != nil {
			g.relayStdio(w, r, tenant, up, msg)
			return
		}
		g.relay(w, r, tenant, up, body)
	})
}

// upstream is the server a request goes to.
type upstream struct {
	name  string
	cfg   config.MCPServer
	stdio *stdioServer // nil for a Streamable HTTP server
}

// forwarded are the client headers an upstream MCP server sees; the
// client's credentials for the gateway are never among them.
var forwarded = []string{"Accept", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID", "Mcp-Method", "Mcp-Name"}

// newRequest builds the upstream request with the client's headers hdr
// and body (nil: none).
func (g *Gateway) newRequest(ctx context.Context, method string, hdr http.Header, up *upstream, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, up.cfg.URL, rd)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EINTERNAL, "building the upstream MCP request", err)
	}
	for _, h := range forwarded {
		if v := hdr.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	for k, v := range hdr {
		if strings.HasPrefix(k, "Mcp-Param-") {
			req.Header[k] = v
		}
	}
	for k, v := range up.cfg.Headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// relay forwards r to the upstream server and streams the answer back.
func (g *Gateway) relay(w http.ResponseWriter, r *http.Request, tenant string, up *upstream, body []byte) {
	req, err := g.newRequest(r.Context(), r.Method, r.Header, up, body)
	if err != nil {
		writeError(w, http.StatusInternalServerError, nil, codeInternal, groundhog.ErrorMessage(err))
		return
	}
	res, err := g.client.Do(req)
	if err != nil {
		writeError(w, http.StatusBadGateway, nil, codeInternal, "MCP server "+up.name+" unreachable")
		return
	}
	defer res.Body.Close()
	if err := g.bindSession(r.Context(), tenant, up.name, r, res); err != nil {
		writeError(w, statusFor(err), nil, codeInternal, groundhog.ErrorMessage(err))
		return
	}
	copyHeaders(w.Header(), res.Header)
	w.WriteHeader(res.StatusCode)
	flushCopy(w, res.Body)
}

// copyHeaders copies the MCP-relevant response headers.
func copyHeaders(dst, src http.Header) {
	for _, h := range []string{"Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version", "Cache-Control", "Allow", "Www-Authenticate"} {
		if v := src.Values(h); len(v) > 0 {
			dst[h] = v
		}
	}
}

// flushCopy copies src to w, flushing after every read so a stream's
// events reach the client as they arrive.
func flushCopy(w http.ResponseWriter, src io.Reader) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// acceptsSSE reports whether a client's Accept header lists
// text/event-stream, as a Streamable HTTP client does.
func acceptsSSE(h http.Header) bool {
	for _, v := range h.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// isJSON reports whether a Content-Type is application/json (parameters
// such as charset allowed).
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// statusFor maps a groundhog error code to the HTTP status of an MCP
// endpoint's answer.
func statusFor(err error) int {
	switch groundhog.ErrorCode(err) {
	case groundhog.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case groundhog.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case groundhog.EINVALID:
		return http.StatusBadRequest
	case groundhog.ESLOWREQUEST:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// codeFor maps a groundhog error to a JSON-RPC error code.
func codeFor(err error) int {
	switch groundhog.ErrorCode(err) {
	case groundhog.EINVALID, groundhog.EMISMATCH:
		return codeInvalidParams
	case groundhog.EUNAUTHORIZED:
		return codeInvalidRequest
	}
	return codeInternal
}

// jsonOf marshals v (built by this package: it cannot fail).
func jsonOf(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
