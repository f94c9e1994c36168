package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// State is one version of a session's working state as the gateway
// answers it.
type State struct {
	Version int64
	State   groundhog.WorkingState
	Author  string
}

// VersionInfo is one entry of the version list, newest first.
type VersionInfo struct {
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	Author    string    `json:"author"`
	Deleted   bool      `json:"deleted"`
}

func statePath(session string) string {
	return "/groundhog/v1/sessions/" + url.PathEscape(session) + "/state"
}

// GetState returns the newest live state of session; a 404 *Error when it
// has none (or it is deleted).
func (c *Client) GetState(ctx context.Context, session string) (*State, error) {
	return c.readState(ctx, statePath(session))
}

// StateVersion returns version n of session's state.
func (c *Client) StateVersion(ctx context.Context, session string, n int64) (*State, error) {
	return c.readState(ctx, statePath(session)+"/versions/"+strconv.FormatInt(n, 10))
}

func (c *Client) readState(ctx context.Context, path string) (*State, error) {
	var s State
	h, _, err := c.doJSON(ctx, http.MethodGet, path, nil, &s.State, nil, http.StatusOK)
	if err != nil {
		return nil, err
	}
	s.Version, s.Author = etagVersion(h), h.Get("Groundhog-Author")
	return &s, nil
}

// StateVersions lists every version of session's state, newest first,
// following the listing's pages (1,000 versions a request).
func (c *Client) StateVersions(ctx context.Context, session string) ([]VersionInfo, error) {
	var all []VersionInfo
	path := statePath(session) + "/versions?limit=1000"
	for {
		var out struct {
			Versions   []VersionInfo `json:"versions"`
			NextBefore int64         `json:"next_before"`
		}
		if _, _, err := c.doJSON(ctx, http.MethodGet, path, nil, &out, nil, http.StatusOK); err != nil {
			return nil, err
		}
		all = append(all, out.Versions...)
		if out.NextBefore == 0 || len(out.Versions) == 0 {
			return all, nil
		}
		path = statePath(session) + "/versions?limit=1000&before=" + strconv.FormatInt(out.NextBefore, 10)
	}
}

// CreateState writes session's first state (If-None-Match: *): a 412
// *Error when it already has a live one.
func (c *Client) CreateState(ctx context.Context, session string, s groundhog.WorkingState) (*State, error) {
	return c.writeState(ctx, http.MethodPut, session, s, http.Header{"If-None-Match": {"*"}}, http.StatusCreated)
}

// PutState replaces session's state if its current version is version
// (If-Match); otherwise a 412 *Error whose CurrentVersion is the one to
// retry from, and nothing is written.
func (c *Client) PutState(ctx context.Context, session string, s groundhog.WorkingState, version int64) (*State, error) {
	return c.writeState(ctx, http.MethodPut, session, s, http.Header{"If-Match": {quote(version)}}, http.StatusOK)
}

// PatchState applies a JSON Merge Patch (RFC 7396; arrays replaced whole)
// to version of session's state.
func (c *Client) PatchState(ctx context.Context, session string, patch map[string]any, version int64) (*State, error) {
	return c.writeState(ctx, http.MethodPatch, session, patch,
		http.Header{"If-Match": {quote(version)}, "Content-Type": {"application/merge-patch+json"}}, http.StatusOK)
}

// DeleteState writes a tombstone over version (the versions stay).
func (c *Client) DeleteState(ctx context.Context, session string, version int64) error {
	_, _, err := c.doJSON(ctx, http.MethodDelete, statePath(session), nil, nil, http.Header{"If-Match": {quote(version)}}, http.StatusNoContent)
	return err
}

func (c *Client) writeState(ctx context.Context, method, session string, body any, hdr http.Header, ok int) (*State, error) {
	var s State
	h, _, err := c.doJSON(ctx, method, statePath(session), body, &s.State, hdr, ok)
	if err != nil {
		return nil, err
	}
	s.Version, s.Author = etagVersion(h), h.Get("Groundhog-Author")
	return &s, nil
}
