package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/groundhog-ai/groundhog"
)

// Evidence is a stored blob's description. Created is false when the
// tenant already held these bytes (the same ref, stored once).
type Evidence struct {
	Ref         string `json:"ref"`
	Bytes       int64  `json:"bytes"`
	Lines       int64  `json:"lines"`
	ContentType string `json:"content_type"`
	Created     bool   `json:"-"`
}

const evidencePath = "/groundhog/v1/evidence"

// PutEvidence uploads r (streamed, never read whole) with contentType and
// returns its ref.
func (c *Client) PutEvidence(ctx context.Context, contentType string, r io.Reader) (*Evidence, error) {
	res, err := c.do(ctx, http.MethodPost, evidencePath, r, http.Header{"Content-Type": {contentType}}, http.StatusCreated, http.StatusOK)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var e Evidence
	if err := decode(res.Body, &e); err != nil {
		return nil, err
	}
	e.Created = res.StatusCode == http.StatusCreated
	return &e, nil
}

// StatEvidence describes ref (HEAD); a 404 *Error when the tenant holds no
// such blob.
func (c *Client) StatEvidence(ctx context.Context, ref string) (*groundhog.EvidenceInfo, error) {
	res, err := c.do(ctx, http.MethodHead, evidencePath+"/"+url.PathEscape(ref), nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	res.Body.Close()
	info := &groundhog.EvidenceInfo{Ref: ref, ContentType: res.Header.Get("Content-Type")}
	info.Bytes, _ = strconv.ParseInt(res.Header.Get("Groundhog-Evidence-Bytes"), 10, 64)
	info.Lines, _ = strconv.ParseInt(res.Header.Get("Groundhog-Evidence-Lines"), 10, 64)
	return info, nil
}

// OpenEvidence streams the whole blob; the caller closes it.
func (c *Client) OpenEvidence(ctx context.Context, ref string) (io.ReadCloser, error) {
	res, err := c.do(ctx, http.MethodGet, evidencePath+"/"+url.PathEscape(ref), nil, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	return res.Body, nil
}

// EvidenceLines returns lines first..last (1-based, inclusive; last past
// the end is clamped); a 416 *Error when first is past the last line.
func (c *Client) EvidenceLines(ctx context.Context, ref string, first, last int64) ([]byte, error) {
	return c.readAll(ctx, evidencePath+"/"+url.PathEscape(ref)+"?lines="+strconv.FormatInt(first, 10)+"-"+strconv.FormatInt(last, 10), nil, http.StatusOK)
}

// EvidenceRange returns n bytes from off (a Range request; 206); a 416
// *Error when off is past the end.
func (c *Client) EvidenceRange(ctx context.Context, ref string, off, n int64) ([]byte, error) {
	if off < 0 || n < 1 {
		return nil, fmt.Errorf("groundhog: evidence range needs off ≥ 0 and n ≥ 1")
	}
	hdr := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}
	return c.readAll(ctx, evidencePath+"/"+url.PathEscape(ref), hdr, http.StatusPartialContent)
}

func (c *Client) readAll(ctx context.Context, path string, hdr http.Header, ok int) ([]byte, error) {
	res, err := c.do(ctx, http.MethodGet, path, nil, hdr, ok)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}
