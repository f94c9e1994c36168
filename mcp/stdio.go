package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
)

// A stdio server (config command) is one process per configured server,
// shared by every client and tenant. The gateway is the process's only MCP
// client:
//
//   - it starts the process on the first message that needs it, initializes
//     it itself, and answers a client's initialize with the process's
//     initialize result and a session id of its own (bound to the tenant);
//   - it gives every request it forwards an id of its own (and a progress
//     token of its own when the request carries one), so the ids of
//     concurrent clients never collide, and answers each client under the
//     client's id; progress notifications go to the request they belong to;
//   - the process's own requests (sampling/createMessage,
//     elicitation/create, roots/list…) go to the client whose request
//     caused them (serverrequests.go): the one whose progress token the
//     request carries, else the only client request in flight; they reach
//     that client on its request's SSE stream under an id of the gateway's,
//     and the client's response goes back to the process under the
//     process's id. A request no client request explains is answered by the
//     gateway with an error, a ping with an empty result; the process's
//     other notifications are logged;
//   - the clients' notifications stay at the gateway (the gateway sent
//     notifications/initialized itself; a request whose client goes away
//     is cancelled upstream under the gateway's id), as do responses that
//     answer no forwarded request;
//   - when the process exits, the exit is logged, requests waiting on it
//     fail, and the next message starts it again — no sooner than a backoff
//     that doubles from stdioMinBackoff to stdioMaxBackoff while the process
//     keeps dying within a minute of its start.
//
// Close stops the process: stdin closed, then SIGTERM, then SIGKILL.

// stdioProtocolVersion is the MCP version the gateway asks a stdio server
// for.
const stdioProtocolVersion = "2025-11-25"

// stdioClientVersions are the MCP versions a client may speak with the
// gateway in front of a stdio server: the process speaks
// stdioProtocolVersion with the gateway, whose later additions the
// gateway's relaying does not depend on.
var stdioClientVersions = map[string]bool{"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, stdioProtocolVersion: true}

// initFor is the process's initialize result init as the answer to a
// client's initialize with params: the protocol version the client asked
// for when it is one of stdioClientVersions (the MCP rule: a server that
// supports the requested version answers with it), else the process's own,
// which a client that cannot speak it refuses. init is returned as it is
// when nothing changes.
func initFor(init, params json.RawMessage) json.RawMessage {
	var asked struct {
		Version string `json:"protocolVersion"`
	}
	if json.Unmarshal(params, &asked) != nil || !stdioClientVersions[asked.Version] {
		return init
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(init, &res) != nil {
		return init
	}
	v, _ := json.Marshal(asked.Version)
	if string(res["protocolVersion"]) == string(v) {
		return init
	}
	res["protocolVersion"] = v
	out, err := json.Marshal(res)
	if err != nil {
		return init
	}
	return out
}

const (
	stdioMinBackoff   = 250 * time.Millisecond
	stdioMaxBackoff   = 30 * time.Second
	stdioStableAfter  = time.Minute      // a process that ran this long resets the backoff
	stdioStartTimeout = 30 * time.Second // start and initialize
	stdioTerminate    = 2 * time.Second  // after closing stdin, before SIGTERM; again before SIGKILL
	stdioEvents       = 32               // notifications buffered per request before dropping
	stderrLineBytes   = 1024             // a stderr line longer than this is cut
	stderrTailLines   = 8                // stderr lines kept for the exit log
)

// errStdioExited fails the requests pending on a process that exited.
var errStdioExited = errors.New("the process exited")

// errStdioStopped refuses messages once the gateway stopped the server.
var errStdioStopped = errors.New("the gateway is shutting down")

// inheritedEnv are the variables of the gateway's environment a stdio
// server gets; the configuration's env adds to them.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"}

// stdioServer is one configured command and its current process.
type stdioServer struct {
	name string
	cfg  config.MCPServer
	log  *slog.Logger

	mu       sync.Mutex
	asked    map[string]*serverRequest // the process's requests forwarded to clients, by the gateway's id
	proc     *stdioProc                // the running process; nil when none
	starting chan struct{}             // closed when the start in progress ends
	startErr error                     // the last start's error, for those who waited on it
	exitedAt time.Time                 // when the last process exited
	backoff  time.Duration             // wait after exitedAt before the next start
	closed   bool
}

func newStdioServer(name string, cfg config.MCPServer, log *slog.Logger) *stdioServer {
	return &stdioServer{name: name, cfg: cfg, log: log}
}

// get returns the running process, starting it if there is none. One
// caller starts it; the others wait for that start.
func (s *stdioServer) get(ctx context.Context) (*stdioProc, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errStdioStopped
		}
		if p := s.proc; p != nil && !p.hasExited() {
			s.mu.Unlock()
			return p, nil
		}
		if ch := s.starting; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			s.mu.Lock()
			err := s.startErr
			s.mu.Unlock()
			if err != nil {
				return nil, err
			}
			continue
		}
		ch := make(chan struct{})
		s.starting, s.proc = ch, nil
		wait := time.Until(s.exitedAt.Add(s.backoff))
		s.mu.Unlock()

		// The start serves every waiter: it does not end with the first
		// caller's context.
		p, err := s.start(context.WithoutCancel(ctx), wait)
		s.mu.Lock()
		s.starting, s.startErr = nil, err
		if err == nil && s.closed {
			err = errStdioStopped
		}
		switch {
		case err == nil:
			s.proc = p
		case p == nil:
			// A process that started and failed to initialize counts its
			// exit in its read loop.
			s.exitedAt, s.backoff = time.Now(), nextBackoff(s.backoff)
		}
		s.mu.Unlock()
		close(ch)
		if err != nil {
			if p != nil {
				_ = p.conn.Close()
			}
			return nil, err
		}
		return p, nil
	}
}

func nextBackoff(b time.Duration) time.Duration {
	return min(max(2*b, stdioMinBackoff), stdioMaxBackoff)
}

// start waits out the backoff, then starts the command and initializes it.
func (s *stdioServer) start(ctx context.Context, wait time.Duration) (*stdioProc, error) {
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, stdioStartTimeout)
	defer cancel()
	cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = stdioEnv(s.cfg.Env)
	stderr := &stderrLog{log: s.log, server: s.name}
	cmd.Stderr = stderr
	cmd.WaitDelay = stdioTerminate // a child that keeps stderr open does not hold up Wait
	conn, err := (&sdk.CommandTransport{Command: cmd, TerminateDuration: stdioTerminate}).Connect(ctx)
	if err != nil {
		return nil, groundhog.WrapError(groundhog.EUPSTREAM, "starting MCP server "+s.name, err)
	}
	p := &stdioProc{s: s, conn: conn, pid: cmd.Process.Pid, started: time.Now(), stderr: stderr,
		pending: map[int64]*stdioCall{}, tokens: map[string]*stdioCall{}, exited: make(chan struct{})}
	go p.readLoop()
	// The capabilities are the clients': the gateway relays what the
	// process asks of them (a client without one answers "method not
	// found" itself).
	params := jsonOf(map[string]any{"protocolVersion": stdioProtocolVersion, "capabilities": relayedCapabilities,
		"clientInfo": map[string]any{"name": "groundhog", "version": "1"}})
	resp, _, err := p.call(ctx, "initialize", params, nil, nil)
	if err == nil && resp.Error != nil {
		err = resp.Error
	}
	if err != nil {
		return p, groundhog.WrapError(groundhog.EUPSTREAM, "initializing MCP server "+s.name, err)
	}
	p.init = resp.Result
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage("{}")}); err != nil {
		return p, groundhog.WrapError(groundhog.EUPSTREAM, "initializing MCP server "+s.name, err)
	}
	s.log.Info("mcp: stdio server started", "server", s.name, "pid", p.pid)
	return p, nil
}

// stdioEnv is the command's environment: the inherited variables, then
// the configured ones.
func stdioEnv(extra map[string]string) []string {
	var env []string
	for _, k := range inheritedEnv {
		if _, set := extra[k]; set {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// roundTrip sends one request and returns the process's response. A
// request that could not be written to a process that had just exited
// goes once more, to the process started after it: nothing was sent.
// sent reports whether the request reached a process.
func (s *stdioServer) roundTrip(ctx context.Context, method string, params json.RawMessage, owner *stdioClient, sink func([]byte)) (resp *jsonrpc.Response, sent bool, err error) {
	for attempt := 0; ; attempt++ {
		p, err := s.get(ctx)
		if err != nil {
			return nil, false, err
		}
		resp, sent, err = p.call(ctx, method, params, owner, sink)
		if err != nil && !sent && attempt == 0 && ctx.Err() == nil {
			continue
		}
		return resp, sent, err
	}
}

// close stops the process, if one runs, and refuses further messages.
func (s *stdioServer) close() error {
	s.mu.Lock()
	s.closed = true
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	err := p.conn.Close()
	<-p.exited
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // stopped by its signal, or exited with a status of its own on stdin's end
	}
	return err
}

// stdioProc is one running process of a stdioServer.
type stdioProc struct {
	s       *stdioServer
	conn    sdk.Connection
	pid     int
	started time.Time
	stderr  *stderrLog
	init    json.RawMessage // the process's initialize result
	next    atomic.Int64

	mu      sync.Mutex
	pending map[int64]*stdioCall  // by the gateway's id
	tokens  map[string]*stdioCall // by the gateway's progress token
	exited  chan struct{}         // closed when the process's stdout ended
}

// stdioCall is one request waiting for its response.
type stdioCall struct {
	token   json.RawMessage // the client's progress token; nil when none
	upToken string          // the gateway's progress token in its place
	owner   *stdioClient    // the client it was sent for; nil for the gateway's own
	events  chan stdioEvent // notifications and the process's requests, then the response: in the order the process sent them
	asked   []string        // the gateway's ids of the process's requests forwarded for it
}

type stdioEvent struct {
	note []byte            // a notification for the client, with the client's token
	req  *jsonrpc.Request  // a request of the process for the client
	resp *jsonrpc.Response // the response
}

func (p *stdioProc) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// call sends a request under an id of the gateway's own and waits for its
// response. Notifications the process sends for it (progress) go to sink
// (nil drops them), in order, from the caller's goroutine.
func (p *stdioProc) call(ctx context.Context, method string, params json.RawMessage, owner *stdioClient, sink func([]byte)) (*jsonrpc.Response, bool, error) {
	id := p.next.Add(1)
	upToken := "groundhog-" + strconv.FormatInt(id, 10)
	c := &stdioCall{events: make(chan stdioEvent, stdioEvents+1), upToken: upToken, owner: owner}
	var gone <-chan struct{}
	if owner != nil && sink != nil {
		gone = owner.gone
	} else {
		c.owner = nil // nowhere to send the process's requests
	}
	params, c.token = withProgressToken(params, upToken)
	p.mu.Lock()
	if p.hasExited() {
		p.mu.Unlock()
		return nil, false, errStdioExited
	}
	p.pending[id] = c
	if c.token != nil {
		p.tokens[upToken] = c
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		delete(p.tokens, upToken)
		p.mu.Unlock()
		p.s.unanswered(c, "the client's request ended before the client answered")
	}()
	rid, _ := jsonrpc.MakeID(float64(id)) // an int64 id; cannot fail
	if err := p.conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: params}); err != nil {
		return nil, false, err
	}
	for {
		select {
		case ev := <-c.events:
			switch {
			case ev.resp != nil:
				return ev.resp, true, nil
			case ev.req != nil:
				p.forward(c, ev.req, sink)
			case sink != nil:
				sink(ev.note)
			}
		case <-gone:
			// The call goes on (a side-effect call runs to its end), but
			// no one is left to answer the process's requests.
			gone = nil
			p.s.unanswered(c, "the client went away")
		case <-p.exited:
			// The response may have arrived just before the end.
			for {
				select {
				case ev := <-c.events:
					if ev.resp != nil {
						return ev.resp, true, nil
					}
				default:
					return nil, true, errStdioExited
				}
			}
		case <-ctx.Done():
			note := &jsonrpc.Request{Method: "notifications/cancelled", Params: jsonOf(map[string]any{"requestId": id, "reason": "the client went away"})}
			go func() { _ = p.conn.Write(context.Background(), note) }()
			return nil, true, ctx.Err()
		}
	}
}

// withProgressToken replaces params._meta.progressToken, if there is one,
// with token, and returns the client's.
func withProgressToken(params json.RawMessage, token string) (json.RawMessage, json.RawMessage) {
	var ps map[string]json.RawMessage
	if json.Unmarshal(params, &ps) != nil {
		return params, nil
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(ps["_meta"], &meta) != nil || len(meta["progressToken"]) == 0 {
		return params, nil
	}
	client := meta["progressToken"]
	meta["progressToken"] = jsonOf(token)
	ps["_meta"] = jsonOf(meta)
	return jsonOf(ps), client
}

// readLoop routes what the process writes until its stdout ends, then
// stops it and logs the exit.
func (p *stdioProc) readLoop() {
	var rerr error
	for {
		msg, err := p.conn.Read(context.Background())
		if err != nil {
			rerr = err
			break
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			p.route(m)
		case *jsonrpc.Request:
			if m.IsCall() {
				p.serverRequest(m)
			} else {
				p.notification(m)
			}
		}
	}
	p.mu.Lock()
	close(p.exited)
	p.mu.Unlock()
	werr := p.conn.Close() // reaps the process (it is stopped if it still runs)
	ran := time.Since(p.started)
	s := p.s
	s.mu.Lock()
	closed := s.closed
	s.exitedAt = time.Now()
	if ran >= stdioStableAfter {
		s.backoff = 0
	} else {
		s.backoff = nextBackoff(s.backoff)
	}
	s.mu.Unlock()
	status := "exited"
	if werr != nil {
		status = werr.Error()
	}
	attrs := []any{"server", s.name, "pid", p.pid, "status", status, "ran", ran.Round(time.Millisecond)}
	if rerr != nil && !errors.Is(rerr, io.EOF) {
		attrs = append(attrs, "read_err", rerr.Error())
	}
	if tail := p.stderr.tail(); tail != "" {
		attrs = append(attrs, "stderr", tail)
	}
	if closed {
		s.log.Info("mcp: stdio server stopped", attrs...)
		return
	}
	s.log.Warn("mcp: stdio server exited; the next message starts it again", attrs...)
}

// route hands a response to the request waiting for it.
func (p *stdioProc) route(m *jsonrpc.Response) {
	id, ok := m.ID.Raw().(int64)
	p.mu.Lock()
	c := p.pending[id]
	delete(p.pending, id) // a second response to the id finds no one
	p.mu.Unlock()
	if !ok || c == nil {
		p.s.log.Debug("mcp: stdio server answered no pending request", "server", p.s.name, "id", m.ID.Raw())
		return
	}
	c.events <- stdioEvent{resp: m} // room is kept for it: never blocks
}

// notification routes a progress notification to its request and logs
// the others.
func (p *stdioProc) notification(m *jsonrpc.Request) {
	if m.Method != "notifications/progress" {
		p.s.log.Debug("mcp: stdio server notification", "server", p.s.name, "method", m.Method)
		return
	}
	var ps map[string]json.RawMessage
	var token string
	if json.Unmarshal(m.Params, &ps) != nil || json.Unmarshal(ps["progressToken"], &token) != nil {
		return
	}
	p.mu.Lock()
	c := p.tokens[token]
	p.mu.Unlock()
	if c == nil {
		return
	}
	ps["progressToken"] = c.token
	note := jsonOf(map[string]any{"jsonrpc": "2.0", "method": m.Method, "params": ps})
	if len(c.events) < stdioEvents {
		c.events <- stdioEvent{note: note}
	}
}

// stderrLog logs a process's stderr line by line at debug level (lines cut
// at stderrLineBytes) and keeps the last lines for the exit log.
type stderrLog struct {
	log    *slog.Logger
	server string

	mu    sync.Mutex
	line  []byte
	cut   bool
	lines []string
}

func (w *stderrLog) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := strings.IndexByte(string(b), '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if room := stderrLineBytes - len(w.line); len(part) > room {
			part, w.cut = part[:room], true
		}
		w.line = append(w.line, part...)
		if i < 0 {
			break
		}
		w.emit()
		b = b[i+1:]
	}
	return n, nil
}

func (w *stderrLog) emit() {
	line := strings.TrimRight(string(w.line), "\r")
	if w.cut {
		line += "…"
	}
	w.line, w.cut = w.line[:0], false
	w.log.Debug("mcp: stdio server stderr", "server", w.server, "line", line)
	w.lines = append(w.lines, line)
	if len(w.lines) > stderrTailLines {
		w.lines = w.lines[1:]
	}
}

// tail returns the last stderr lines, joined.
func (w *stderrLog) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 {
		w.emit()
	}
	return strings.Join(w.lines, "\n")
}

// relayStdio answers a message other than a tools/call for a stdio server.
func (g *Gateway) relayStdio(w http.ResponseWriter, r *http.Request, tenant string, up *upstream, msg *message) {
	switch {
	case r.Method == http.MethodGet:
		// No standalone stream: the process's notifications belong to no
		// one client.
		w.Header().Set("Allow", "POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, nil, codeInvalidRequest, "MCP server "+up.name+" offers no stream at GET")
		return
	case r.Method == http.MethodDelete:
		g.closeSession(r.Context(), tenant, up.name, r.Header.Get("Mcp-Session-Id"))
		w.WriteHeader(http.StatusNoContent)
		return
	case !msg.isCall():
		// A response to a request of the process goes back to it; other
		// responses and notifications stay here (see the top of this file).
		if msg.Method == "" {
			up.stdio.answered(r.Context(), tenant, msg)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	case msg.Method == "initialize":
		p, err := up.stdio.get(r.Context())
		if err != nil {
			writeError(w, http.StatusBadGateway, msg.ID, codeInternal, "MCP server "+up.name+" unavailable: "+groundhog.ErrorMessage(err))
			return
		}
		sid := newSessionID()
		if err := g.openSession(r.Context(), tenant, up.name, sid); err != nil {
			writeError(w, statusFor(err), msg.ID, codeInternal, groundhog.ErrorMessage(err))
			return
		}
		w.Header().Set("Mcp-Session-Id", sid)
		(&clientStream{w: w}).finish(response(msg.ID, &stored{body: initFor(p.init, msg.Params)}))
		return
	}
	out := &clientStream{w: w}
	resp, _, err := up.stdio.roundTrip(r.Context(), msg.Method, msg.Params, &stdioClient{tenant: tenant, gone: r.Context().Done()}, out.send)
	if err != nil {
		if out.started {
			out.send(jsonOf(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": codeInternal, "message": "MCP server " + up.name + " gave no answer"}}))
			return
		}
		writeError(w, http.StatusBadGateway, msg.ID, codeInternal, "MCP server "+up.name+" gave no answer: "+groundhog.ErrorMessage(err))
		return
	}
	out.finish(response(msg.ID, storedOf(resp)))
}

// executeStdio is execute for a stdio server.
func (g *Gateway) executeStdio(ctx context.Context, c *call, sink func([]byte)) (*stored, bool, error) {
	var m message
	if err := json.Unmarshal(c.body, &m); err != nil {
		return nil, false, groundhog.WrapError(groundhog.EINTERNAL, "re-reading a tools/call", err)
	}
	resp, sent, err := c.up.stdio.roundTrip(ctx, m.Method, m.Params, &stdioClient{tenant: c.tenant, gone: c.gone}, sink)
	if err != nil {
		return nil, sent, groundhog.WrapError(groundhog.EUPSTREAM, "MCP server "+c.up.name+" gave no answer", err)
	}
	return storedOf(resp), true, nil
}

// storedOf is a process's response as the stage keeps it.
func storedOf(resp *jsonrpc.Response) *stored {
	if resp.Error == nil {
		return &stored{body: resp.Result}
	}
	var we *jsonrpc.Error
	if errors.As(resp.Error, &we) {
		return &stored{body: jsonOf(we), isError: true}
	}
	return &stored{body: jsonOf(map[string]any{"code": codeInternal, "message": resp.Error.Error()}), isError: true}
}

// stdioTools reads the tools' readOnlyHint from a stdio server.
func (s *stdioServer) stdioTools(ctx context.Context) (map[string]bool, error) {
	ro := map[string]bool{}
	var cursor string
	for range 100 {
		params := json.RawMessage("{}")
		if cursor != "" {
			params = jsonOf(map[string]string{"cursor": cursor})
		}
		resp, _, err := s.roundTrip(ctx, "tools/list", params, nil, nil)
		if err == nil && resp.Error != nil {
			err = resp.Error
		}
		if err != nil {
			return nil, err
		}
		var res sdk.ListToolsResult
		if err := json.Unmarshal(resp.Result, &res); err != nil {
			return nil, fmt.Errorf("reading tools/list: %w", err)
		}
		for _, t := range res.Tools {
			ro[t.Name] = t.Annotations != nil && t.Annotations.ReadOnlyHint
		}
		if cursor = res.NextCursor; cursor == "" {
			break
		}
	}
	return ro, nil
}

// newSessionID is a session id the gateway gives a client of a stdio
// server.
func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
