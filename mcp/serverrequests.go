package mcp

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A stdio server's own requests. The process has one client, the gateway,
// and a message on stdio names no client request it relates to, so the
// gateway attributes each request of the process to the client request
// that caused it:
//
//   - the one whose progress token (rewritten to the gateway's, see
//     withProgressToken) the request carries in _meta.progressToken;
//   - else the only client request in flight on the process;
//   - else none: the gateway answers the process with an error (a ping
//     with an empty result: it is the gateway the process pings).
//
// An attributed request reaches the client on the SSE stream of the
// client's request, under an id of the gateway's (unguessable, so another
// client cannot answer it) and with the client's progress token; the
// client's response, a POST of its own, goes back to the process under the
// process's id. Only the tenant of the client request can answer it. When
// the client request ends, or its client goes away, before the client
// answered, the gateway answers the process with an error, so the process
// never waits forever.

// relayedCapabilities are the client capabilities the gateway declares to
// a stdio server: those whose requests it relays.
var relayedCapabilities = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}, "roots": map[string]any{}}

// stdioClient is the client a request was forwarded for.
type stdioClient struct {
	tenant string
	gone   <-chan struct{} // closed when the client's HTTP request ends
}

// serverRequest is a request of the process forwarded to a client.
type serverRequest struct {
	proc   *stdioProc
	id     jsonrpc.ID // the process's id
	tenant string     // who may answer it
}

// serverRequestIDs numbers the forwarded requests; a random prefix makes
// the ids unguessable.
var serverRequestIDs atomic.Int64

// serverRequest routes a request of the process (from the read loop).
func (p *stdioProc) serverRequest(m *jsonrpc.Request) {
	if m.Method != "ping" {
		if c := p.attribute(m); c != nil && len(c.events) < stdioEvents {
			c.events <- stdioEvent{req: m}
			return
		}
	}
	resp := &jsonrpc.Response{ID: m.ID}
	if m.Method == "ping" {
		resp.Result = json.RawMessage("{}")
	} else {
		resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "groundhog relays a stdio server's " + m.Method +
			" to the client whose request caused it, and no client request in flight explains this one: put the progress token of the request being served in _meta.progressToken"}
	}
	p.write(resp)
}

// write sends msg to the process, not from the read loop: a process that
// does not read its stdin while its stdout is full would block both.
func (p *stdioProc) write(msg jsonrpc.Message) {
	go func() { _ = p.conn.Write(context.Background(), msg) }()
}

// attribute returns the client request m belongs to, nil when none.
func (p *stdioProc) attribute(m *jsonrpc.Request) *stdioCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ps struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	var token string
	if json.Unmarshal(m.Params, &ps) == nil && json.Unmarshal(ps.Meta.Token, &token) == nil {
		if c := p.tokens[token]; c != nil && c.owner != nil {
			return c
		}
	}
	var only *stdioCall
	for _, c := range p.pending {
		if c.owner == nil {
			continue
		}
		if only != nil {
			return nil // several: which one is unknown
		}
		only = c
	}
	return only
}

// forward sends the process's request m to c's client (from c's
// goroutine, which owns sink).
func (p *stdioProc) forward(c *stdioCall, m *jsonrpc.Request, sink func([]byte)) {
	id := "groundhog-" + newSessionID()[:16] + "-" + jsonOfInt(serverRequestIDs.Add(1))
	s := p.s
	s.mu.Lock()
	if s.asked == nil {
		s.asked = map[string]*serverRequest{}
	}
	s.asked[id] = &serverRequest{proc: p, id: m.ID, tenant: c.owner.tenant}
	s.mu.Unlock()
	c.asked = append(c.asked, id)
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": m.Method}
	if len(m.Params) > 0 {
		msg["params"] = withClientToken(m.Params, c)
	}
	sink(jsonOf(msg))
}

// withClientToken puts c's client's progress token in place of the
// gateway's in params._meta.progressToken.
func withClientToken(params json.RawMessage, c *stdioCall) json.RawMessage {
	if c.token == nil {
		return params
	}
	var ps map[string]json.RawMessage
	var meta map[string]json.RawMessage
	if json.Unmarshal(params, &ps) != nil || json.Unmarshal(ps["_meta"], &meta) != nil {
		return params
	}
	var token string
	if json.Unmarshal(meta["progressToken"], &token) != nil || token != c.upToken {
		return params
	}
	meta["progressToken"] = c.token
	ps["_meta"] = jsonOf(meta)
	return jsonOf(ps)
}

// answered relays a client's response to a forwarded request of the
// process, under the process's id. A response naming no such request, or
// sent by another tenant, is dropped.
func (s *stdioServer) answered(ctx context.Context, tenant string, msg *message) {
	var id string
	if json.Unmarshal(msg.ID, &id) != nil {
		return
	}
	s.mu.Lock()
	r := s.asked[id]
	if r != nil && r.tenant == tenant {
		delete(s.asked, id)
	} else {
		r = nil
	}
	s.mu.Unlock()
	if r == nil {
		return
	}
	resp := &jsonrpc.Response{ID: r.id}
	switch {
	case len(msg.Error) > 0:
		var e jsonrpc.Error
		if json.Unmarshal(msg.Error, &e) != nil {
			e = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client answered with a malformed error"}
		}
		resp.Error = &e
	default:
		resp.Result = msg.Result
	}
	_ = r.proc.conn.Write(context.WithoutCancel(ctx), resp)
}

// unanswered answers the process's requests forwarded for c that its
// client has not answered with an error saying why.
func (s *stdioServer) unanswered(c *stdioCall, why string) {
	if len(c.asked) == 0 {
		return
	}
	s.mu.Lock()
	var left []*serverRequest
	for _, id := range c.asked {
		if r := s.asked[id]; r != nil {
			left = append(left, r)
			delete(s.asked, id)
		}
	}
	s.mu.Unlock()
	c.asked = nil
	for _, r := range left {
		r.proc.write(&jsonrpc.Response{ID: r.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: why}})
	}
}

func jsonOfInt(n int64) string { return string(jsonOf(n)) }
