// Package state serves an agent's durable working state over HTTP
// (docs/agent-state.md, docs/reference/wire.md): versioned, compare-and-swap updates with ETag /
// If-Match, JSON Merge Patch, every version readable, deletes as
// tombstones. The store is any groundhog.StateStore.
package state

import (
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/apierr"
	"github.com/groundhog-ai/groundhog/wire"
)

// Prefix is where the session endpoints live.
const Prefix = "/groundhog/v1/sessions/"

// DefaultMaxBytes is the default limit of one state's wire form.
const DefaultMaxBytes = 256 << 10

// AuthorHeader names who wrote a version (else the tenant is the author).
const AuthorHeader = "Groundhog-Author"

// Limits bound what a client may store.
type Limits struct {
	// MaxBytes bounds a state's wire form (and a PUT/PATCH body); 0 means
	// DefaultMaxBytes. Past it: 413.
	MaxBytes int64
}

// Handler serves the state endpoints of one store. Create it with New.
//
//	GET    /groundhog/v1/sessions/{id}/state               200 state + ETag "<version>"; 404 none or deleted;
//	                                                       304 with If-None-Match "<current version>"
//	PUT    /groundhog/v1/sessions/{id}/state               If-None-Match: * creates (201), If-Match "<v>" replaces (200);
//	                                                       body: the whole state, "constraints" required ([] for none)
//	PATCH  /groundhog/v1/sessions/{id}/state               JSON Merge Patch (RFC 7396), same preconditions;
//	                                                       a member absent from the patch is kept as it is
//	DELETE /groundhog/v1/sessions/{id}/state               If-Match "<v>": a tombstone version (204), versions kept
//	GET    /groundhog/v1/sessions/{id}/state/versions      200 {"versions":[{"version","created_at","author","deleted"}…],"next_before":n} newest first, ?limit= (100, ≤ 1000) &before=<version> pages
//	GET    /groundhog/v1/sessions/{id}/state/versions/{n}  200 that version's state + ETag; 404 unknown or a tombstone
//
// Preconditions: PUT, PATCH and DELETE need If-Match or If-None-Match: *
// (428 otherwise; both at once is 400). If-Match "<v>" (or * for "the live
// state, whatever its version") must name the newest version of a live
// state; If-None-Match: * succeeds only when the session has no live state
// (never written, or deleted). A failed precondition is 412 with
// "current_version" (0: no live state) and "deleted" in the body and the
// current ETag — also for a well-formed entity tag that names no version
// ("no-such-version", a weak tag); only a malformed If-Match is 400. Ids are 1–128 characters of [A-Za-z0-9._:-]; another
// tenant's session is 404. Errors are JSON ({"error":{…}}): 400 malformed,
// wrong type or unknown field (named), 401, 404, 405, 412, 413 over
// MaxBytes, 415 a body not JSON, 428, 503.
type Handler struct {
	store  groundhog.StateStore
	limits Limits
	log    *slog.Logger
	clock  groundhog.Clock
}

// New returns a Handler over store. log may be nil.
func New(store groundhog.StateStore, limits Limits, log *slog.Logger) *Handler {
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = DefaultMaxBytes
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{store: store, limits: limits, log: log, clock: groundhog.SystemClock{}}
}

// SetClock replaces the wall clock that stamps new versions (tests).
func (h *Handler) SetClock(c groundhog.Clock) { h.clock = c }

// Register mounts the endpoints on mux. auth maps a request to its tenant
// (errors EUNAUTHORIZED or EUNAVAILABLE); it runs before anything else.
func (h *Handler) Register(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
	wrap := func(fn func(w http.ResponseWriter, r *http.Request, tenant, session string)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, err := apierr.Auth(auth, r)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			session := r.PathValue("id")
			if !ValidSession(session) {
				h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "session id must be 1-128 characters of A-Z a-z 0-9 . _ : -"))
				return
			}
			fn(w, r, tenant, session)
		})
	}
	mux.Handle(Prefix+"{id}/state", wrap(h.serveState))
	mux.Handle(Prefix+"{id}/state/versions", wrap(func(w http.ResponseWriter, r *http.Request, tenant, session string) {
		if allow(w, r, h, http.MethodGet) {
			h.listVersions(w, r, tenant, session)
		}
	}))
	mux.Handle(Prefix+"{id}/state/versions/{n}", wrap(func(w http.ResponseWriter, r *http.Request, tenant, session string) {
		if allow(w, r, h, http.MethodGet) {
			h.getVersion(w, r, tenant, session)
		}
	}))
}

// ValidSession reports whether id is a valid session id
// (groundhog.ValidSessionID: the same ids name agent runs in the ledger).
func ValidSession(id string) bool { return groundhog.ValidSessionID(id) }

func allow(w http.ResponseWriter, r *http.Request, h *Handler, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m || (m == http.MethodGet && r.Method == http.MethodHead) {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	h.fail(w, r, groundhog.Errorf(wire.CodeMethod, "method %s not allowed on %s", r.Method, r.URL.Path))
	return false
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	apierr.Write(w, r, h.log, err, nil)
}

func (h *Handler) serveState(w http.ResponseWriter, r *http.Request, tenant, session string) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.get(w, r, tenant, session)
	case http.MethodPut, http.MethodPatch, http.MethodDelete:
		h.write(w, r, tenant, session)
	default:
		allow(w, r, h, http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete)
	}
}

func etag(v int64) string { return `"` + strconv.FormatInt(v, 10) + `"` }

func (h *Handler) get(w http.ResponseWriter, r *http.Request, tenant, session string) {
	v, err := h.store.GetState(r.Context(), tenant, session)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if v.Deleted {
		h.fail(w, r, groundhog.Errorf(groundhog.ENOTFOUND, "state of session %q was deleted (version %d)", session, v.Version))
		return
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && (inm == "*" || inm == etag(v.Version)) {
		w.Header().Set("ETag", etag(v.Version))
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.writeState(w, r, http.StatusOK, v)
}

func (h *Handler) writeState(w http.ResponseWriter, r *http.Request, status int, v *groundhog.StateVersion) {
	body := append(Render(v.State), '\n')
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	hd.Set("ETag", etag(v.Version))
	hd.Set("Last-Modified", v.CreatedAt.UTC().Format(http.TimeFormat))
	hd.Set(AuthorHeader, v.Author)
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// precondition is what a write's headers ask for.
type precondition struct {
	create   bool    // If-None-Match: *
	any      bool    // If-Match: *
	versions []int64 // the versions named by If-Match's entity tags
}

// matches reports whether If-Match names version v. A well-formed entity tag
// that is no version of ours (or a weak one: If-Match compares strongly)
// matches nothing, so its write is a 412, not a 400 (RFC 9110 §13.1.1).
func (p precondition) matches(v int64) bool {
	return p.any || slices.Contains(p.versions, v)
}

func parsePrecondition(r *http.Request) (precondition, error) {
	im, inm := strings.TrimSpace(r.Header.Get("If-Match")), strings.TrimSpace(r.Header.Get("If-None-Match"))
	switch {
	case im != "" && inm != "":
		return precondition{}, groundhog.Errorf(groundhog.EINVALID, "send If-Match or If-None-Match, not both")
	case inm == "*":
		return precondition{create: true}, nil
	case inm != "":
		return precondition{}, groundhog.Errorf(groundhog.EINVALID, `If-None-Match on a write must be "*" (create only)`)
	case im != "":
		anyTag, versions, err := ParseIfMatch(im)
		if err != nil {
			return precondition{}, err
		}
		return precondition{any: anyTag, versions: versions}, nil
	}
	return precondition{}, groundhog.Errorf(groundhog.EPRECONDREQUIRED,
		`a write needs a precondition: If-Match: "<version>" to update, If-None-Match: * to create`)
}

// ParseIfMatch reads an If-Match value: "*" (any is true), or a
// comma-separated list of entity tags, of which the strong ones whose
// opaque part is a state version ("3") give versions. A well-formed tag
// that is not a version is no error: it matches no version. Only a
// malformed value is an EINVALID error.
func ParseIfMatch(v string) (anyTag bool, versions []int64, err error) {
	v = strings.TrimSpace(v)
	if v == "*" {
		return true, nil, nil
	}
	bad := groundhog.Errorf(groundhog.EINVALID, `If-Match must be "*" or entity tags as sent in ETag, e.g. "3"`)
	for _, part := range strings.Split(v, ",") {
		tag := strings.TrimSpace(part)
		weak := strings.HasPrefix(tag, "W/")
		tag = strings.TrimPrefix(tag, "W/")
		if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' {
			return false, nil, bad
		}
		opaque := tag[1 : len(tag)-1]
		for i := 0; i < len(opaque); i++ {
			// etagc = %x21 / %x23-7E / obs-text
			if c := opaque[i]; c < 0x21 || c == '"' || c == 0x7f {
				return false, nil, bad
			}
		}
		if n, err := strconv.ParseInt(opaque, 10, 64); err == nil && n >= 1 && !weak && strconv.FormatInt(n, 10) == opaque {
			versions = append(versions, n)
		}
	}
	return false, versions, nil
}

func validAuthor(a string) bool {
	if len(a) < 1 || len(a) > 128 {
		return false
	}
	for i := 0; i < len(a); i++ {
		if a[i] < 0x21 || a[i] > 0x7e {
			return false
		}
	}
	return true
}

// write serves PUT, PATCH and DELETE: check the request, resolve the
// precondition against the newest version, then one PutState with that
// version as expect, so a concurrent writer makes it fail (412) instead of
// being overwritten.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, tenant, session string) {
	pre, err := parsePrecondition(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	author := tenant
	if a, ok := r.Header[http.CanonicalHeaderKey(AuthorHeader)]; ok {
		if len(a) != 1 || !validAuthor(a[0]) {
			h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "%s must be 1-128 visible ASCII characters", AuthorHeader))
			return
		}
		author = a[0]
	}
	var body []byte
	if r.Method != http.MethodDelete {
		if err := checkMediaType(r); err != nil {
			h.fail(w, r, err)
			return
		}
		if body, err = readBody(r.Body, h.limits.MaxBytes); err != nil {
			h.fail(w, r, err)
			return
		}
		if err := checkJSON(body); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	cur, err := h.store.GetState(r.Context(), tenant, session)
	if err != nil && !groundhog.IsNotFound(err) {
		h.fail(w, r, err)
		return
	}
	live := cur != nil && !cur.Deleted
	var expect int64
	switch {
	case pre.create && !live:
		if cur != nil {
			expect = cur.Version // re-create after a delete
		}
	case !pre.create && live && pre.matches(cur.Version):
		expect = cur.Version
	default:
		h.preconditionFailed(w, r, session, cur)
		return
	}
	next := groundhog.StateVersion{Tenant: tenant, Session: session, Author: author, CreatedAt: h.clock.Now()}
	switch r.Method {
	case http.MethodDelete:
		next.Deleted = true
	case http.MethodPut:
		if next.State, err = Parse(body, true); err != nil {
			h.fail(w, r, err)
			return
		}
	case http.MethodPatch:
		if err := checkPatch(body); err != nil {
			h.fail(w, r, err)
			return
		}
		base := Render(groundhog.WorkingState{})
		if live {
			base = Render(cur.State)
		}
		merged, err := MergePatch(base, body)
		if err != nil {
			h.fail(w, r, groundhog.WrapError(groundhog.EINVALID, "request body is not valid JSON", err))
			return
		}
		if next.State, err = Parse(merged, false); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if err := Validate(next.State, h.limits.MaxBytes); err != nil {
		h.fail(w, r, err)
		return
	}
	stored, err := h.store.PutState(r.Context(), next, expect)
	if groundhog.ErrorCode(err) == groundhog.EPRECONDITION {
		now, gerr := h.store.GetState(r.Context(), tenant, session)
		if gerr != nil && !groundhog.IsNotFound(gerr) {
			h.fail(w, r, gerr)
			return
		}
		h.preconditionFailed(w, r, session, now)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	switch {
	case stored.Deleted:
		w.Header().Set("ETag", etag(stored.Version))
		w.WriteHeader(http.StatusNoContent)
	case live:
		h.writeState(w, r, http.StatusOK, stored)
	default:
		w.Header().Set("Location", Prefix+session+"/state")
		h.writeState(w, r, http.StatusCreated, stored)
	}
}

// preconditionFailed answers 412 with the current version (0 when the
// session has no live state).
func (h *Handler) preconditionFailed(w http.ResponseWriter, r *http.Request, session string, cur *groundhog.StateVersion) {
	var version int64
	deleted := false
	msg := "session " + strconv.Quote(session) + " has no state"
	if cur != nil {
		version, deleted = cur.Version, cur.Deleted
		w.Header().Set("ETag", etag(cur.Version))
		msg = "state of session " + strconv.Quote(session) + " is at version " + strconv.FormatInt(cur.Version, 10)
		if deleted {
			msg += " (deleted)"
		}
	}
	current := version
	if deleted {
		current = 0
	}
	apierr.Write(w, r, h.log, groundhog.Errorf(groundhog.EPRECONDITION, "precondition failed: %s", msg),
		map[string]any{"current_version": current, "newest_version": version, "deleted": deleted})
}

// checkMediaType accepts application/json and the merge-patch type (any
// +json), or no Content-Type at all.
func checkMediaType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))) {
		return nil
	}
	return groundhog.Errorf(groundhog.EMEDIATYPE, "Content-Type must be application/json or application/merge-patch+json")
}

// versionInfo is one entry of GET …/state/versions.
type versionInfo struct {
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	Author    string    `json:"author"`
	Deleted   bool      `json:"deleted"`
}

// Version listing pages: limit defaults to defaultVersionPage and may be
// raised to maxVersionPage; next_before, when there are older versions, is
// the before= of the next page.
const (
	defaultVersionPage = 100
	maxVersionPage     = 1000
)

func (h *Handler) listVersions(w http.ResponseWriter, r *http.Request, tenant, session string) {
	before, limit, err := versionPage(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	vs, err := h.store.StateVersionInfos(r.Context(), tenant, session, before, limit+1)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(vs) == 0 {
		// A page past the oldest version of a session is empty; a session
		// with no version at all is unknown.
		if before != 0 {
			vs, err = h.store.StateVersionInfos(r.Context(), tenant, session, 0, 1)
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if len(vs) == 0 {
			h.fail(w, r, groundhog.Errorf(groundhog.ENOTFOUND, "session %q has no state", session))
			return
		}
		vs = vs[:0]
	}
	out := struct {
		Versions   []versionInfo `json:"versions"`
		NextBefore int64         `json:"next_before,omitempty"`
	}{Versions: make([]versionInfo, 0, min(len(vs), limit))}
	for i, v := range vs {
		if i == limit {
			out.NextBefore = vs[i-1].Version
			break
		}
		out.Versions = append(out.Versions, versionInfo{v.Version, v.CreatedAt.UTC(), v.Author, v.Deleted})
	}
	apierr.JSON(w, http.StatusOK, out)
}

// versionPage reads ?before=<version>&limit=<n> of a version listing.
func versionPage(r *http.Request) (before int64, limit int, err error) {
	q := r.URL.Query()
	for k := range q {
		if k != "before" && k != "limit" {
			return 0, 0, groundhog.Errorf(groundhog.EINVALID, "unknown query parameter %q (before, limit)", k)
		}
	}
	limit = defaultVersionPage
	if s, ok := q["limit"]; ok {
		n, perr := strconv.Atoi(s[0])
		if perr != nil || n < 1 || n > maxVersionPage || len(s) > 1 {
			return 0, 0, groundhog.Errorf(groundhog.EINVALID, "limit must be one integer from 1 to %d", maxVersionPage)
		}
		limit = n
	}
	if s, ok := q["before"]; ok {
		n, perr := strconv.ParseInt(s[0], 10, 64)
		if perr != nil || n < 1 || len(s) > 1 {
			return 0, 0, groundhog.Errorf(groundhog.EINVALID, "before must be one positive version number")
		}
		before = n
	}
	return before, limit, nil
}

func (h *Handler) getVersion(w http.ResponseWriter, r *http.Request, tenant, session string) {
	n, err := strconv.ParseInt(r.PathValue("n"), 10, 64)
	if err != nil || n < 1 {
		h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "version must be a positive integer"))
		return
	}
	v, err := h.store.GetStateVersion(r.Context(), tenant, session, n)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if v.Deleted {
		h.fail(w, r, groundhog.Errorf(groundhog.ENOTFOUND, "version %d of session %q is a deletion", n, session))
		return
	}
	h.writeState(w, r, http.StatusOK, v)
}
