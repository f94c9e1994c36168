package gateway

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
)

// newPost is http.NewRequestWithContext(ctx, POST, rawURL, body) without
// parsing rawURL on every call: the upstream URL of a miss is one of a few
// strings (an upstream's base and a route), and url.Parse of it was ≈ 2 %
// of the gateway's CPU on a 1 KB miss (docs/design/0010-miss-path.md). The
// first call for a URL parses it as NewRequestWithContext does (the host's
// empty port removed); later calls build the request from "" (every body
// rule of NewRequestWithContext unchanged: ContentLength, GetBody, NoBody)
// and give it a copy of the parsed URL and its host. A URL that does not
// parse is never remembered: it takes NewRequestWithContext's own way, with
// its error. Pinned by TestNewPostMatchesNewRequest.
func newPost(ctx context.Context, rawURL string, body io.Reader) (*http.Request, error) {
	u := upURLs.get(rawURL)
	if u == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, body)
		if err == nil {
			upURLs.put(rawURL, req.URL)
		}
		return req, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", body)
	if err != nil {
		return nil, err
	}
	*req.URL = *u // a copy into the request's own URL (parsed from ""): a caller may change it
	req.Host = u.Host
	return req, nil
}

// maxUpURLs bounds the parsed URLs kept: the miss path's URLs are a few
// upstreams × a few routes; anything beyond is parsed per call as before.
const maxUpURLs = 64

// urlCache maps a URL string to its parsed form (as NewRequestWithContext
// leaves it): a copy-on-write map, read without a lock.
type urlCache struct {
	m  atomic.Pointer[map[string]*url.URL]
	mu sync.Mutex // writers
}

var upURLs urlCache

func (c *urlCache) get(raw string) *url.URL {
	if m := c.m.Load(); m != nil {
		return (*m)[raw]
	}
	return nil
}

// put remembers a copy of u (parsed from raw) while there is room.
func (c *urlCache) put(raw string, u *url.URL) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	var n int
	if old != nil {
		if _, ok := (*old)[raw]; ok {
			return
		}
		n = len(*old)
	}
	if n >= maxUpURLs {
		return
	}
	m := make(map[string]*url.URL, n+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	cp := *u
	m[raw] = &cp
	c.m.Store(&m)
}
