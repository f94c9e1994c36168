// Package evidence serves evidence blobs over HTTP (docs/agent-state.md, docs/reference/wire.md):
// content-addressed, deduplicated per tenant, streamed both ways, read
// whole, by line range or by byte range. The store is any
// groundhog.EvidenceStore.
package evidence

import (
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/internal/apierr"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/wire"
)

// Path is the collection endpoint; a blob is Path + "/" + ref.
const Path = "/groundhog/v1/evidence"

// DefaultMaxUploadBytes bounds one upload (a raw body, or one multipart
// request) when Limits.MaxUploadBytes is 0.
const DefaultMaxUploadBytes = 1 << 30

// Limits bound what a tenant may store.
type Limits struct {
	// QuotaBytes bounds the bytes one tenant stores in all; 0: no quota.
	// An upload of new bytes past it is 507.
	QuotaBytes int64
	// MaxUploadBytes bounds one request body; 0: DefaultMaxUploadBytes.
	// Past it: 413.
	MaxUploadBytes int64
}

// Handler serves the evidence endpoints of one store. Create it with New.
//
//	POST Path                  raw body, stored with its Content-Type (default application/octet-stream):
//	                           201 {"ref":"ev_<sha256 hex>","bytes":N,"lines":N,"content_type":"…"}, or 200 when
//	                           the tenant already had these bytes (stored once; content_type of the first upload)
//	POST Path                  multipart/form-data: every part is one blob, stored as it arrives;
//	                           201 (200 when all were duplicates) {"evidence":[{…,"name","filename","created"}…]}
//	GET  Path/{ref}            the bytes, 200; headers Content-Type, ETag "<ref>", Accept-Ranges: bytes,
//	                           Groundhog-Evidence-Lines, Groundhog-Evidence-Bytes
//	GET  Path/{ref}?lines=a-b  lines a..b (1-based, inclusive; b past the end is clamped, Groundhog-Lines
//	                           says which were sent); 416 JSON error when a is past the last line
//	GET  Path/{ref} + Range    one "bytes=" range (RFC 9110): 206 with Content-Range; 416 with
//	                           Content-Range "bytes */size" when unsatisfiable or malformed; several ranges
//	                           are ignored (200, the whole blob), as RFC 9110 allows
//	HEAD Path/{ref}            the GET headers, no body
//
// Another tenant's ref is 404 like an unknown one. Errors are JSON
// ({"error":{…}}): 400 malformed ref or lines, 401, 404, 405, 413, 416,
// 503, 507 quota. A multipart upload that fails on a later part keeps the
// parts stored before it (they are content-addressed: retrying stores
// nothing twice); its error names the part.
type Handler struct {
	store  groundhog.EvidenceStore
	limits Limits
	log    *slog.Logger
}

// New returns a Handler over store. log may be nil.
func New(store groundhog.EvidenceStore, limits Limits, log *slog.Logger) *Handler {
	if limits.MaxUploadBytes <= 0 {
		limits.MaxUploadBytes = DefaultMaxUploadBytes
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{store: store, limits: limits, log: log}
}

// Register mounts the endpoints on mux. auth maps a request to its tenant
// (errors EUNAUTHORIZED or EUNAVAILABLE); it runs before anything else.
func (h *Handler) Register(mux *http.ServeMux, auth func(*http.Request) (string, error)) {
	wrap := func(methods []string, fn func(w http.ResponseWriter, r *http.Request, tenant string)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, err := apierr.Auth(auth, r)
			if err != nil {
				h.fail(w, r, err)
				return
			}
			for _, m := range methods {
				if r.Method == m {
					fn(w, r, tenant)
					return
				}
			}
			w.Header().Set("Allow", strings.Join(methods, ", "))
			h.fail(w, r, groundhog.Errorf(wire.CodeMethod, "method %s not allowed on %s", r.Method, r.URL.Path))
		})
	}
	mux.Handle(Path, wrap([]string{http.MethodPost}, h.upload))
	mux.Handle(Path+"/{ref}", wrap([]string{http.MethodGet, http.MethodHead}, h.get))
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	apierr.Write(w, r, h.log, err, nil)
}

// item is one stored blob in an upload's answer.
type item struct {
	Ref         string `json:"ref"`
	Bytes       int64  `json:"bytes"`
	Lines       int64  `json:"lines"`
	ContentType string `json:"content_type"`
	Name        string `json:"name,omitempty"`
	Filename    string `json:"filename,omitempty"`
	Created     *bool  `json:"created,omitempty"`
}

func (h *Handler) upload(w http.ResponseWriter, r *http.Request, tenant string) {
	body := http.MaxBytesReader(w, r.Body, h.limits.MaxUploadBytes)
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "Content-Type %q is not a media type", ct))
		return
	}
	if mt != "multipart/form-data" {
		info, created, err := h.store.PutEvidence(r.Context(), tenant, mime.FormatMediaType(mt, params), body, h.limits.QuotaBytes)
		if err != nil {
			h.fail(w, r, h.uploadError(err, ""))
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
			w.Header().Set("Location", Path+"/"+info.Ref)
		}
		apierr.JSON(w, status, item{Ref: info.Ref, Bytes: info.Bytes, Lines: info.Lines, ContentType: info.ContentType})
		return
	}
	r.Body = body
	mr, err := r.MultipartReader()
	if err != nil {
		h.fail(w, r, groundhog.WrapError(groundhog.EINVALID, "malformed multipart body", err))
		return
	}
	var items []item
	anyCreated := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			if _, tooLarge := errors.AsType[*http.MaxBytesError](err); !tooLarge {
				if be := httpguard.BodyError(err); groundhog.ErrorCode(be) == groundhog.ESLOWREQUEST {
					err = be
				} else {
					err = groundhog.WrapError(groundhog.EINVALID, "malformed multipart body", err)
				}
			}
			h.fail(w, r, h.uploadError(err, "after part "+strconv.Itoa(len(items))))
			return
		}
		pct := part.Header.Get("Content-Type")
		if pct == "" {
			pct = "application/octet-stream"
		}
		pmt, pparams, err := mime.ParseMediaType(pct)
		if err != nil {
			h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "part %d: Content-Type %q is not a media type", len(items)+1, pct))
			return
		}
		info, created, err := h.store.PutEvidence(r.Context(), tenant, mime.FormatMediaType(pmt, pparams), part, h.limits.QuotaBytes)
		part.Close()
		if err != nil {
			h.fail(w, r, h.uploadError(err, "part "+strconv.Itoa(len(items)+1)))
			return
		}
		anyCreated = anyCreated || created
		items = append(items, item{Ref: info.Ref, Bytes: info.Bytes, Lines: info.Lines, ContentType: info.ContentType,
			Name: part.FormName(), Filename: part.FileName(), Created: &created})
	}
	if len(items) == 0 {
		h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "multipart body has no parts"))
		return
	}
	status := http.StatusOK
	if anyCreated {
		status = http.StatusCreated
	}
	apierr.JSON(w, status, struct {
		Evidence []item `json:"evidence"`
	}{items})
}

// uploadError names what went wrong reading an upload: too large (413),
// a malformed body (400), or the store's own error.
func (h *Handler) uploadError(err error, where string) error {
	prefix := ""
	if where != "" {
		prefix = where + ": "
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return groundhog.Errorf(groundhog.ETOOLARGE, "%supload is larger than %d bytes", prefix, h.limits.MaxUploadBytes)
	}
	if prefix != "" {
		return groundhog.WrapError(groundhog.ErrorCode(err), prefix+groundhog.ErrorMessage(err), err)
	}
	return err
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, tenant string) {
	ref := r.PathValue("ref")
	if !groundhog.ValidEvidenceRef(ref) {
		h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "malformed evidence ref: want ev_ and 64 lowercase hex digits"))
		return
	}
	info, err := h.store.StatEvidence(r.Context(), tenant, ref)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	hd := w.Header()
	hd.Set("ETag", `"`+ref+`"`)
	hd.Set("Accept-Ranges", "bytes")
	hd.Set("Last-Modified", info.CreatedAt.UTC().Format(http.TimeFormat))
	hd.Set("Groundhog-Evidence-Bytes", strconv.FormatInt(info.Bytes, 10))
	hd.Set("Groundhog-Evidence-Lines", strconv.FormatInt(info.Lines, 10))

	off, n, status := int64(0), info.Bytes, http.StatusOK
	q := r.URL.Query()
	_, hasLines := q["lines"]
	rng := r.Header.Get("Range")
	switch {
	case hasLines && rng != "":
		h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "send ?lines= or Range, not both"))
		return
	case hasLines:
		first, last, ok := parseLines(q.Get("lines"))
		if !ok || len(q["lines"]) != 1 {
			h.fail(w, r, groundhog.Errorf(groundhog.EINVALID, "lines must be a-b with 1 <= a <= b, e.g. lines=10-20"))
			return
		}
		if off, n, err = h.store.EvidenceLines(r.Context(), tenant, ref, first, last); err != nil {
			if groundhog.ErrorCode(err) == groundhog.ERANGE {
				apierr.Write(w, r, h.log, err, map[string]any{"lines": info.Lines})
				return
			}
			h.fail(w, r, err)
			return
		}
		hd.Set("Groundhog-Lines", strconv.FormatInt(first, 10)+"-"+strconv.FormatInt(min(last, info.Lines), 10))
	case rng != "":
		var ok, ignore bool
		off, n, ok, ignore = parseRange(rng, info.Bytes)
		switch {
		case ignore:
			off, n = 0, info.Bytes
		case !ok:
			hd.Set("Content-Range", "bytes */"+strconv.FormatInt(info.Bytes, 10))
			err := groundhog.Errorf(groundhog.ERANGE, "range %q not satisfiable: the evidence has %d bytes", rng, info.Bytes)
			apierr.Write(w, r, h.log, err, map[string]any{"bytes": info.Bytes})
			return
		default:
			status = http.StatusPartialContent
			hd.Set("Content-Range", "bytes "+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(off+n-1, 10)+"/"+strconv.FormatInt(info.Bytes, 10))
		}
	}
	hd.Set("Content-Type", info.ContentType)
	hd.Set("Content-Length", strconv.FormatInt(n, 10))
	if r.Method == http.MethodHead {
		hd.Set("Cache-Control", "private, max-age=31536000, immutable")
		w.WriteHeader(status)
		return
	}
	rc, err := h.store.ReadEvidence(r.Context(), tenant, ref, off, n)
	if err != nil {
		hd.Del("Content-Length")
		h.fail(w, r, err)
		return
	}
	defer rc.Close()
	// Content is addressed by its hash: it never changes. Set only on
	// success, so no error answer is ever cacheable.
	hd.Set("Cache-Control", "private, max-age=31536000, immutable")
	w.WriteHeader(status)
	if _, err := io.Copy(w, rc); err != nil {
		// The status is out: all that is left is to cut the response short,
		// which the client sees as fewer bytes than Content-Length.
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "evidence: read failed mid-response",
			slog.String("ref", ref), slog.Any("err", err))
	}
}

// parseLines parses "a-b" (1 <= a <= b) or "a" (just line a).
func parseLines(s string) (first, last int64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		b = a
	}
	first, err1 := strconv.ParseInt(a, 10, 64)
	last, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || first < 1 || last < first || strings.HasPrefix(b, "+") || strings.HasPrefix(a, "+") {
		return 0, 0, false
	}
	return first, last, true
}

// parseRange parses a Range header against a blob of size bytes (RFC 9110
// §14.1.2): "bytes=first-last", "bytes=first-" or "bytes=-suffix". ignore is
// set for a header the server may ignore (another unit, several ranges);
// ok false means unsatisfiable or malformed (416).
func parseRange(h string, size int64) (off, n int64, ok, ignore bool) {
	unit, spec, found := strings.Cut(h, "=")
	if !found {
		return 0, 0, false, false
	}
	if strings.TrimSpace(strings.ToLower(unit)) != "bytes" {
		return 0, 0, false, true
	}
	if strings.Contains(spec, ",") {
		return 0, 0, false, true
	}
	spec = strings.TrimSpace(spec)
	a, b, found := strings.Cut(spec, "-")
	if !found || strings.ContainsAny(spec, "+ ") {
		return 0, 0, false, false
	}
	if a == "" { // suffix: the last b bytes
		suffix, err := strconv.ParseInt(b, 10, 64)
		if err != nil || suffix <= 0 || size == 0 {
			return 0, 0, false, false
		}
		suffix = min(suffix, size)
		return size - suffix, suffix, true, false
	}
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil || first < 0 || first >= size {
		return 0, 0, false, false
	}
	last := size - 1
	if b != "" {
		l, err := strconv.ParseInt(b, 10, 64)
		if err != nil || l < first {
			return 0, 0, false, false
		}
		last = min(l, size-1)
	}
	return first, last - first + 1, true, false
}
