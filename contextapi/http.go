// Package contextapi serves an agent session's context assembly and
// compaction over HTTP (docs/agent-state.md, docs/reference/wire.md):
//
//	POST /groundhog/v1/sessions/{id}/context   the next request body, its token counts and the compaction decision
//	POST /groundhog/v1/sessions/{id}/compact   compact the working state now (CAS on its version)
//
// Both are tenant-scoped by the caller's gateway key: another tenant's
// session is a 404, exactly like one that does not exist.
package contextapi

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
	"slices"
	"strconv"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/compaction"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/state"
	"github.com/groundhog-ai/groundhog/wire"
)

// Paths, as http.ServeMux patterns.
const (
	ContextPattern = "/groundhog/v1/sessions/{id}/context"
	CompactPattern = "/groundhog/v1/sessions/{id}/compact"
)

// Limits.
const (
	MaxBodyBytes   = 8 << 20   // a context or compact request body
	MaxInlineBytes = 256 << 10 // evidence_inline, all blobs together
)

// EvidenceReader reads stored evidence for evidence_inline;
// groundhog.EvidenceStore has it.
type EvidenceReader interface {
	compaction.EvidenceStat
	ReadEvidence(ctx context.Context, tenant, ref string, off, n int64) (io.ReadCloser, error)
}

// Options wires the handlers. States and Compactor are required; Evidence
// may be nil (then every ev_ ref reads "not stored" and evidence_inline is
// a 400).
type Options struct {
	States    groundhog.StateStore
	Evidence  EvidenceReader
	Compactor *compaction.Compactor
	Logger    *slog.Logger
}

// Mount registers both endpoints on mux. auth maps a request to its tenant
// (the gateway's authenticate; codes EUNAUTHORIZED or EUNAVAILABLE) and
// runs before anything reads the request.
//
// Errors are {"error":{"message","type","param","code"}} (the OpenAI shape,
// code = the groundhog code): 400 malformed JSON, a wrong type, an unknown
// field, a missing or invalid field (named in the message); 401; 404 no
// state for the session (or it is deleted), an evidence_inline ref not
// stored; 405 not POST; 412 If-Match is not the current version, or the
// state changed during the compaction (body adds "current_version"); 413
// a body over MaxBodyBytes or inline evidence over MaxInlineBytes; 415 not
// application/json; 422 a compaction proposal that drops, reorders or
// alters a constraint or the objective, or drops an evidence entry; 502 the
// summarizing call failed; 503 a store is unavailable. No error writes
// anything. A compact request may have no body at all (no Content-Type
// either): it stands for {}.
func Mount(mux *http.ServeMux, auth func(*http.Request) (string, error), o Options) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{o: o, auth: auth}
	mux.Handle(ContextPattern, h.wrap(false, h.context))
	mux.Handle(CompactPattern, h.wrap(true, h.compact))
}

type handler struct {
	o    Options
	auth func(*http.Request) (string, error)
}

// wrap authenticates, checks the method, the session id, the content type
// and the size, then decodes the body strictly into the handler's request.
// emptyOK lets a request without a body (and without a Content-Type) stand
// for "{}".
func (h *handler) wrap(emptyOK bool, serve func(w http.ResponseWriter, r *http.Request, tenant, session string, body []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, err := h.auth(r)
		if err != nil {
			if code := groundhog.ErrorCode(err); code != groundhog.EUNAUTHORIZED && code != groundhog.EUNAVAILABLE {
				err = groundhog.WrapError(groundhog.EUNAVAILABLE, "authentication unavailable", err)
			}
			h.writeError(w, r, err)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			h.writeError(w, r, groundhog.Errorf(wire.CodeMethod, "%s is not allowed here: use POST", r.Method))
			return
		}
		session := r.PathValue("id")
		if !state.ValidSession(session) {
			h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, "session id must be 1-128 characters of A-Z a-z 0-9 . _ : -"))
			return
		}
		if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" && emptyOK {
			serve(w, r, tenant, session, []byte("{}")) // POST …/compact with no body at all
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			h.writeError(w, r, groundhog.Errorf(groundhog.EMEDIATYPE, "Content-Type must be application/json"))
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				h.writeError(w, r, groundhog.Errorf(groundhog.ETOOLARGE, "request body over %d bytes", MaxBodyBytes))
				return
			}
			h.writeError(w, r, httpguard.BodyError(err))
			return
		}
		serve(w, r, tenant, session, body)
	})
}

// decodeStrict decodes one JSON object into v: unknown fields, wrong types
// and trailing data are EINVALID errors naming the problem.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr):
			return groundhog.WrapError(groundhog.EINVALID, fmt.Sprintf("%s: expected %s, got %s", typeErr.Field, typeErr.Type, typeErr.Value), err)
		case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return groundhog.WrapError(groundhog.EINVALID, "the body is not valid JSON", err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return groundhog.WrapError(groundhog.EINVALID, "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field "), err)
		}
		return groundhog.WrapError(groundhog.EINVALID, "the body is not a JSON object of the expected fields", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return groundhog.Errorf(groundhog.EINVALID, "trailing data after the JSON object")
	}
	return nil
}

// currentState returns the session's newest live state, ENOTFOUND when
// there is none or it is deleted.
func (h *handler) currentState(ctx context.Context, tenant, session string) (*groundhog.StateVersion, error) {
	v, err := h.o.States.GetState(ctx, tenant, session)
	if err != nil {
		return nil, err
	}
	if v.Deleted {
		return nil, groundhog.Errorf(groundhog.ENOTFOUND, "session %q has no working state (deleted)", session)
	}
	return v, nil
}

func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := groundhog.ErrorCode(err)
	status := wire.Status(code)
	if status >= 500 {
		h.o.Logger.LogAttrs(r.Context(), slog.LevelWarn, "contextapi: request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status), slog.Any("err", err))
	}
	body := wire.ErrorBody(groundhog.ShapeChat, code, groundhog.ErrorMessage(err))
	if code == groundhog.EPRECONDITION {
		// A compare-and-swap loser learns the version to retry from.
		if v, gerr := h.currentVersion(r); gerr == nil {
			body = append(bytes.TrimSuffix(body, []byte("}")), []byte(`,"current_version":`+strconv.FormatInt(v, 10)+`}`)...)
		}
	}
	writeRaw(w, status, body)
}

// currentVersion reads the session's current version for a 412 body.
func (h *handler) currentVersion(r *http.Request) (int64, error) {
	tenant, err := h.auth(r)
	if err != nil {
		return 0, err
	}
	v, err := h.o.States.GetState(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		return 0, err
	}
	return v.Version, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the state's bytes, as stored
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("contextapi: marshal response: %v", err)) // only our own types
	}
	writeRaw(w, status, b.Bytes())
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	if len(body) == 0 || body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// etag is the ETag of a state version, as the state endpoints send it.
func etag(v int64) string { return `"` + strconv.FormatInt(v, 10) + `"` }

// parseIfMatch reads an optional If-Match: one version ("3", or 3), "*"
// (0: any version), or entity tags. A well-formed tag that names no version
// of the session gives -1, which matches none (a 412, RFC 9110 §13.1.1);
// a list naming the current version gives it. Only a malformed value is
// EINVALID.
func (h *handler) parseIfMatch(r *http.Request) (int64, error) {
	s := strings.TrimSpace(r.Header.Get("If-Match"))
	if s == "" {
		return 0, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 1 {
		return n, nil
	}
	anyTag, versions, err := state.ParseIfMatch(s)
	switch {
	case err != nil:
		return 0, err
	case anyTag:
		return 0, nil
	case len(versions) == 1:
		return versions[0], nil
	case len(versions) > 1:
		if cur, err := h.currentVersion(r); err == nil && slices.Contains(versions, cur) {
			return cur, nil
		}
	}
	return -1, nil
}
