// Package client is a Go client of groundhog's agent APIs over HTTP: the
// working state (versioned, compare-and-swap), evidence (content-addressed
// blobs, whole or by range), context assembly and compaction, and the tool
// operations API (begin → complete/fail, so a retried tool call acts once).
//
// The request and answer types are the server's own (groundhog.WorkingState,
// contextapi.ContextRequest, …), so the same values work in process with
// the assemble and compaction packages.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Client talks to one groundhog gateway as one tenant. The zero value is not
// usable: create it with New. A Client is safe for concurrent use.
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client of the gateway at baseURL ("http://127.0.0.1:8080")
// that authenticates with the gateway key key ("" for a keyless local
// gateway). hc nil uses http.DefaultClient.
func New(baseURL, key string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), key: key, http: hc}
}

// Error is a non-2xx answer. Code is groundhog's machine-readable code
// ("precondition", "mismatch", "not_found", …) when the body carries one;
// CurrentVersion is set on a 412 from the state or compact endpoints.
type Error struct {
	Status         int
	Code           string
	Type           string
	Message        string
	CurrentVersion int64
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("groundhog: %d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("groundhog: %d: %s", e.Status, e.Message)
}

// StatusOf returns the HTTP status of err when it is (or wraps) an *Error,
// else 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// do sends one request and returns the response, which the caller closes,
// when its status is one of ok; any other status is read into an *Error.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, hdr http.Header, ok ...int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("groundhog: %s %s: %w", method, path, err)
	}
	for _, s := range ok {
		if res.StatusCode == s {
			return res, nil
		}
	}
	defer res.Body.Close()
	return nil, readError(res)
}

func readError(res *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	e := &Error{Status: res.StatusCode}
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
		CurrentVersion int64 `json:"current_version"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
		e.Message, e.Type, e.CurrentVersion = body.Error.Message, body.Error.Type, body.CurrentVersion
		if s, ok := body.Error.Code.(string); ok {
			e.Code = s
		}
	} else {
		e.Message = strings.TrimSpace(string(b))
		if e.Message == "" {
			e.Message = http.StatusText(res.StatusCode)
		}
	}
	return e
}

// doJSON sends in as JSON (nil: no body) and decodes the answer into out
// (nil: discarded), returning the response headers.
func (c *Client) doJSON(ctx context.Context, method, path string, in, out any, hdr http.Header, ok ...int) (http.Header, int, error) {
	var body io.Reader
	if hdr == nil {
		hdr = http.Header{}
	}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, 0, fmt.Errorf("groundhog: encode %s body: %w", path, err)
		}
		body = bytes.NewReader(b)
		if hdr.Get("Content-Type") == "" {
			hdr.Set("Content-Type", "application/json")
		}
	}
	res, err := c.do(ctx, method, path, body, hdr, ok...)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			return nil, 0, fmt.Errorf("groundhog: decode %s answer: %w", path, err)
		}
	}
	return res.Header, res.StatusCode, nil
}

// etagVersion reads a state ETag ("3").
func etagVersion(h http.Header) int64 {
	n, _ := strconv.ParseInt(strings.Trim(h.Get("ETag"), `"`), 10, 64)
	return n
}

func quote(v int64) string { return `"` + strconv.FormatInt(v, 10) + `"` }
