package mcp

import (
	"context"
	"net/http"

	"github.com/groundhog-ai/groundhog"
)

// Sessions. A client's Mcp-Session-Id belongs to the tenant that opened
// it: another tenant's request naming it is answered as if the session did
// not exist. The binding lives in Options.Resources (kind
// groundhog.ResourceKindMCPSession), which replicas share, so a client
// behind a load balancer may send any request of its session to any
// replica; each replica keeps the bindings it has seen in memory in front
// of the store.

// sessionName is the resource name of server's session sid.
func sessionName(server, sid string) string { return server + "/" + sid }

// ownsSession reports whether tenant opened session sid of server: from
// memory, else from the shared store. A store that fails is an error
// (EUNAVAILABLE), never a yes.
func (g *Gateway) ownsSession(ctx context.Context, tenant, server, sid string) (bool, error) {
	g.mu.Lock()
	owner, known := g.sessions[sid]
	g.mu.Unlock()
	if known || g.o.Resources == nil {
		return known && owner == tenant, nil
	}
	owned, err := g.o.Resources.OwnedResources(ctx, tenant, groundhog.ResourceKindMCPSession, []string{sessionName(server, sid)})
	if err != nil {
		return false, groundhog.WrapError(groundhog.EUNAVAILABLE, "reading the MCP session's owner", err)
	}
	if len(owned) == 0 {
		return false, nil
	}
	g.rememberSession(sid, tenant)
	return true, nil
}

// rememberSession keeps the binding of sid to tenant in memory.
func (g *Gateway) rememberSession(sid, tenant string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.sessions) > 100_000 {
		clear(g.sessions)
	}
	g.sessions[sid] = tenant
}

// openSession binds server's new session sid to tenant, in memory and in
// the shared store, before the client learns the id: a client that takes
// it to another replica finds it there.
func (g *Gateway) openSession(ctx context.Context, tenant, server, sid string) error {
	g.rememberSession(sid, tenant)
	if g.o.Resources == nil {
		return nil
	}
	err := g.o.Resources.PutResource(context.WithoutCancel(ctx), groundhog.Resource{Tenant: tenant, Kind: groundhog.ResourceKindMCPSession,
		Name: sessionName(server, sid), CreatedAt: g.clock.Now().UTC()})
	if err != nil {
		return groundhog.WrapError(groundhog.EUNAVAILABLE, "recording the MCP session", err)
	}
	return nil
}

// closeSession forgets tenant's session sid of server.
func (g *Gateway) closeSession(ctx context.Context, tenant, server, sid string) {
	g.mu.Lock()
	delete(g.sessions, sid)
	g.mu.Unlock()
	if g.o.Resources == nil {
		return
	}
	if err := g.o.Resources.DeleteResource(context.WithoutCancel(ctx), tenant, groundhog.ResourceKindMCPSession, sessionName(server, sid)); err != nil {
		g.log.Warn("mcp: forgetting a session failed", "server", server, "err", err)
	}
}

// bindSession records the session an upstream answer opened (and forgets
// the one a client deleted).
func (g *Gateway) bindSession(ctx context.Context, tenant, server string, r *http.Request, res *http.Response) error {
	if r.Method == http.MethodDelete && res.StatusCode < 300 {
		g.closeSession(ctx, tenant, server, r.Header.Get("Mcp-Session-Id"))
	}
	if sid := res.Header.Get("Mcp-Session-Id"); sid != "" && res.StatusCode < 300 && sid != r.Header.Get("Mcp-Session-Id") {
		return g.openSession(ctx, tenant, server, sid)
	}
	return nil
}
