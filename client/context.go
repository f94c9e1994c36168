package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/groundhog-ai/groundhog/contextapi"
)

// Context asks for session's next request body: the stable prefix, the
// rendered working state and the last step, with token counts and the
// compaction decision.
func (c *Client) Context(ctx context.Context, session string, req contextapi.ContextRequest) (*contextapi.ContextResponse, error) {
	var out contextapi.ContextResponse
	if _, _, err := c.doJSON(ctx, http.MethodPost, "/groundhog/v1/sessions/"+url.PathEscape(session)+"/context", req, &out, nil, http.StatusOK); err != nil {
		return nil, err
	}
	return &out, nil
}

// Compact compacts session's state now. ifMatch > 0 pins the version it
// must start from (a 412 *Error otherwise). A proposal that breaks a
// verbatim field is a 422 *Error and nothing is written.
func (c *Client) Compact(ctx context.Context, session string, req contextapi.CompactRequest, ifMatch int64) (*contextapi.CompactResponse, error) {
	hdr := http.Header{}
	if ifMatch > 0 {
		hdr.Set("If-Match", quote(ifMatch))
	}
	var out contextapi.CompactResponse
	if _, _, err := c.doJSON(ctx, http.MethodPost, "/groundhog/v1/sessions/"+url.PathEscape(session)+"/compact", req, &out, hdr, http.StatusOK); err != nil {
		return nil, err
	}
	return &out, nil
}

func decode(r io.Reader, v any) error {
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return fmt.Errorf("groundhog: decode answer: %w", err)
	}
	return nil
}

// Report returns the duplicate-work report of day ("YYYY-MM-DD", "today",
// "" = today in UTC) for the client's tenant, as the gateway's JSON.
func (c *Client) Report(ctx context.Context, day string) (json.RawMessage, error) {
	path := "/groundhog/v1/report"
	if day != "" {
		path += "?day=" + url.QueryEscape(day)
	}
	var out json.RawMessage
	if _, _, err := c.doJSON(ctx, http.MethodGet, path, nil, &out, nil, http.StatusOK); err != nil {
		return nil, err
	}
	return out, nil
}
