package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/wire"
)

// OperationsPath is where the gateway mounts Handler.
const OperationsPath = "/groundhog/v1/operations"

// MaxBodyBytes bounds a request body of the tool operations API.
const MaxBodyBytes = 1 << 20

// MaxPreferWait caps the wait a client may ask for with "Prefer: wait=<s>".
const MaxPreferWait = 60 * time.Second

// codeMethod is the code of a wrong HTTP method (405).
const codeMethod = wire.CodeMethod

// statusFor maps an error code to its HTTP status: wire.Status is the one
// mapping.
func statusFor(code string) int { return wire.Status(code) }

// Handler serves the tool operations API: a generic begin → lease →
// complete/fail protocol over the same records as the gateway's
// Idempotency-Key, for agent tools whose side effects live outside the
// gateway (send an email, create a payment).
//
// auth maps a request to its tenant (the gateway's authenticate); its
// errors carry code EUNAUTHORIZED (401) or EUNAVAILABLE (503). It runs
// before anything else reads the request. Mount with
// mux.Handle(OperationsPath, h) and mux.Handle(OperationsPath+"/", h).
//
//	POST OperationsPath                {"key": k, "request_hash": "sha256:<64 hex>"} or {"key": k, "payload": <any JSON>}
//	  201 claimed   {"id","status":"running","fencing_token","lease_expires_at","attempts",…}
//	  200 finished  {"id","status":"completed"|"failed","result":<JSON>,…} + Idempotent-Replayed: true
//	  409 running   {"error":{…},"id","lease_expires_at"} + Retry-After; with "Prefer: wait=<s>"
//	                (at most MaxPreferWait) it waits first, then answers as above
//	  422 the key was used with another hash (nothing changed)
//	POST OperationsPath/{id}/renew     {"fencing_token": n}                          200 record with the new lease
//	POST OperationsPath/{id}/complete  {"fencing_token": n, "result": <JSON>}         200 record
//	POST OperationsPath/{id}/fail      {"fencing_token": n, "result": <JSON>, "retryable": bool}
//	                                   terminal (result required, replayed) or, with retryable, released to pending
//	GET  OperationsPath/{id}                                                       200 record
//
// A payload's request hash is "sha256:" + hex SHA-256 of its canonical JSON
// (fingerprint.Canonicalize), so a tool may equally send request_hash
// computed the same way. A result is stored as a Response with status 200
// and content type application/json; the record's status tells success
// from failure.
//
// A fenced write with a superseded token is 409 {"error":{"type":
// "stale_token"}} and changes nothing; an id unknown to the caller's
// tenant is 404. Every error is {"error":{"type","message"}}: 400 malformed
// JSON, not an object, a missing field, a wrong type, an unknown field, a
// bad key or hash; 401; 404; 405; 409; 413 body over MaxBodyBytes; 415 not
// application/json; 422; 503 store unavailable.
func (s *Service) Handler(auth func(*http.Request) (string, error)) http.Handler {
	return &handler{s: s, auth: auth}
}

type handler struct {
	s    *Service
	auth func(*http.Request) (string, error)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant, err := h.auth(r)
	if err != nil {
		if code := groundhog.ErrorCode(err); code != groundhog.EUNAUTHORIZED && code != groundhog.EUNAVAILABLE {
			err = groundhog.WrapError(groundhog.EUNAVAILABLE, "authentication unavailable", err)
		}
		h.writeError(w, r, err)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, OperationsPath)
	if !ok || (rest != "" && rest[0] != '/') {
		h.writeError(w, r, groundhog.Errorf(groundhog.ENOTFOUND, "unknown route %s", r.URL.Path))
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case rest == "" || rest == "/":
		if !allow(w, r, h, http.MethodPost) {
			return
		}
		h.begin(w, r, tenant)
	case len(parts) == 1:
		if !allow(w, r, h, http.MethodGet) {
			return
		}
		h.get(w, r, tenant, parts[0])
	case len(parts) == 2 && (parts[1] == "renew" || parts[1] == "complete" || parts[1] == "fail"):
		if !allow(w, r, h, http.MethodPost) {
			return
		}
		h.fenced(w, r, tenant, parts[0], parts[1])
	default:
		h.writeError(w, r, groundhog.Errorf(groundhog.ENOTFOUND, "unknown route %s", r.URL.Path))
	}
}

// allow answers 405 unless r uses method.
func allow(w http.ResponseWriter, r *http.Request, h *handler, method string) bool {
	if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", method)
	h.writeError(w, r, groundhog.Errorf(codeMethod, "method %s not allowed on %s; use %s", r.Method, r.URL.Path, method))
	return false
}

// beginRequest is the body of POST OperationsPath.
type beginRequest struct {
	Key         *string         `json:"key"`
	RequestHash *string         `json:"request_hash"`
	Payload     json.RawMessage `json:"payload"`
}

// fencedRequest is the body of renew, complete and fail.
type fencedRequest struct {
	FencingToken *int64          `json:"fencing_token"`
	Result       json.RawMessage `json:"result"`
	// Error is fail's alternative to Result: a JSON object describing the
	// failure, stored (and replayed) as the result {"error": <object>}.
	Error     json.RawMessage `json:"error"`
	Retryable *bool           `json:"retryable"`
}

func (h *handler) begin(w http.ResponseWriter, r *http.Request, tenant string) {
	var req beginRequest
	if err := decodeBody(w, r, &req); err != nil {
		h.writeError(w, r, err)
		return
	}
	if req.Key == nil {
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `missing field "key"`))
		return
	}
	if err := ValidateKey(*req.Key); err != nil {
		h.writeError(w, r, err)
		return
	}
	var hash string
	switch {
	case req.RequestHash != nil && req.Payload != nil:
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `give either "request_hash" or "payload", not both`))
		return
	case req.RequestHash != nil:
		if !validHash(*req.RequestHash) {
			h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `"request_hash" must be "sha256:" followed by 64 lowercase hex digits`))
			return
		}
		hash = *req.RequestHash
	case req.Payload != nil:
		var err error
		if hash, err = PayloadHash(req.Payload); err != nil {
			h.writeError(w, r, err)
			return
		}
	default:
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `missing field "request_hash" or "payload"`))
		return
	}

	ctx := r.Context()
	op, outcome, err := h.s.begin(ctx, tenant, *req.Key, hash)
	if err == nil && outcome == groundhog.BeginInProgress {
		if wait := PreferWait(r); wait > 0 {
			// Wait, then ask again: the record may be finished (replay),
			// released or abandoned (this request claims it) or still
			// running (409 after all).
			if _, err = h.s.Wait(ctx, tenant, *req.Key, wait); err == nil {
				op, outcome, err = h.s.begin(ctx, tenant, *req.Key, hash)
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return // the client is gone; nothing was claimed for it
		}
		h.writeError(w, r, err)
		return
	}
	switch outcome {
	case groundhog.BeginClaimed:
		w.Header().Set("Location", OperationsPath+"/"+op.ID)
		writeJSON(w, http.StatusCreated, recordOf(op))
	case groundhog.BeginDone:
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, recordOf(op))
	case groundhog.BeginInProgress:
		w.Header().Set("Retry-After", strconv.Itoa(h.s.RetryAfter(op)))
		body := errorBody(h.s.inProgress(op))
		body["id"] = op.ID
		body["lease_expires_at"] = op.LeaseExpiresAt.UTC().Format(time.RFC3339Nano)
		writeJSON(w, http.StatusConflict, body)
	default:
		h.writeError(w, r, mismatch())
	}
}

func (h *handler) get(w http.ResponseWriter, r *http.Request, tenant, id string) {
	op, err := h.s.Get(r.Context(), tenant, id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, recordOf(op))
}

func (h *handler) fenced(w http.ResponseWriter, r *http.Request, tenant, id, action string) {
	var req fencedRequest
	if err := decodeBody(w, r, &req); err != nil {
		h.writeError(w, r, err)
		return
	}
	if req.FencingToken == nil {
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `missing field "fencing_token"`))
		return
	}
	token := *req.FencingToken
	if token < 1 {
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `"fencing_token" must be a positive integer`))
		return
	}
	retryable := req.Retryable != nil && *req.Retryable
	if req.Error != nil {
		switch {
		case action != "fail":
			h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `"error" is only for fail`))
			return
		case req.Result != nil:
			h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `give either "result" or "error", not both`))
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(req.Error, &obj); err != nil || obj == nil {
			h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `"error" must be a JSON object`))
			return
		}
		req.Result = append(append([]byte(`{"error":`), req.Error...), '}')
	}
	var result *groundhog.Response
	switch {
	case action == "renew" || (action == "fail" && retryable):
		if req.Result != nil && action == "renew" {
			h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `renew takes no "result"`))
			return
		}
	case req.Result == nil:
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `missing field "result"`))
		return
	default:
		var body bytes.Buffer
		if err := json.Compact(&body, req.Result); err != nil {
			h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `"result" is not valid JSON`))
			return
		}
		result = &groundhog.Response{Status: http.StatusOK, ContentType: "application/json", Body: body.Bytes()}
	}
	if req.Retryable != nil && action != "fail" {
		h.writeError(w, r, groundhog.Errorf(groundhog.EINVALID, `"retryable" is only for fail`))
		return
	}

	// The write must happen even if the client hangs up now.
	ctx, cancel := writeCtx(r.Context())
	defer cancel()
	now := h.s.clock.Now()
	st := h.s.store
	// Read the record first: its key wakes this process's waiters after
	// the write, and the answer can be built from it if the re-read after
	// the write fails (the write is committed: it must not be answered as
	// a failure).
	before, err := h.s.Get(ctx, tenant, id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	switch {
	case action == "renew":
		err = st.Renew(ctx, tenant, id, token, now.Add(h.s.lease))
	case action == "complete":
		err = st.Complete(ctx, tenant, id, token, result, now)
	case retryable:
		err = st.Release(ctx, tenant, id, token, now)
	default:
		err = st.Fail(ctx, tenant, id, token, result, now)
	}
	if err != nil {
		switch groundhog.ErrorCode(err) {
		case groundhog.ENOTFOUND, groundhog.ESTALE:
		default:
			err = unavailable(action, err)
		}
		h.writeError(w, r, err)
		return
	}
	if action != "renew" {
		h.s.notify(tenant, before.Key)
	}
	op, err := h.s.Get(ctx, tenant, id)
	if err != nil {
		// Committed, but unreadable just now: answer from what was written.
		op = before
		op.UpdatedAt = now
		switch {
		case action == "renew":
			op.LeaseExpiresAt = now.Add(h.s.lease)
		case action == "complete":
			op.Status, op.Result = groundhog.StatusCompleted, result
		case retryable:
			op.Status, op.LeaseOwner = groundhog.StatusPending, ""
		default:
			op.Status, op.Result = groundhog.StatusFailed, result
		}
	}
	writeJSON(w, http.StatusOK, recordOf(op))
}

// PayloadHash returns the request hash of a tool payload: "sha256:" + hex
// SHA-256 of its canonical JSON (fingerprint.Canonicalize: sorted keys,
// normalized numbers, no whitespace), so two serializations of one payload
// get one hash. Invalid JSON is EINVALID.
func PayloadHash(payload []byte) (string, error) {
	canon, err := fingerprint.Canonicalize(payload)
	if err != nil {
		return "", groundhog.WrapError(groundhog.EINVALID, `"payload": `+groundhog.ErrorMessage(err), err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// validHash reports whether h is "sha256:" + 64 lowercase hex digits.
func validHash(h string) bool {
	hx, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hx) != 64 {
		return false
	}
	for i := 0; i < len(hx); i++ {
		if c := hx[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// PreferWait returns the wait the request asks for with "Prefer: wait=<s>"
// (RFC 7240), capped at MaxPreferWait; 0 when there is none or it is not a
// non-negative integer (an unusable preference is ignored, as RFC 7240
// says).
func PreferWait(r *http.Request) time.Duration {
	for _, line := range r.Header.Values("Prefer") {
		for pref := range strings.SplitSeq(line, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(pref), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			val, _, _ = strings.Cut(val, ";")
			n, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(val), `"`), 10, 32)
			if err != nil {
				return 0
			}
			return min(time.Duration(n)*time.Second, MaxPreferWait)
		}
	}
	return 0
}

// decodeBody reads a JSON object of at most MaxBodyBytes into dst,
// strictly: application/json only, no unknown fields, no trailing data.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return groundhog.Errorf(groundhog.EMEDIATYPE, "Content-Type must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return groundhog.Errorf(groundhog.ETOOLARGE, "request body is larger than %d bytes", MaxBodyBytes)
		}
		return httpguard.BodyError(err)
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return groundhog.Errorf(groundhog.EINVALID, "request body is empty")
	}
	if !json.Valid(body) {
		return groundhog.Errorf(groundhog.EINVALID, "request body is not valid JSON")
	}
	if trimmed[0] != '{' {
		return groundhog.Errorf(groundhog.EINVALID, "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return groundhog.Errorf(groundhog.EINVALID, "field %q must be %s, not %s", te.Field, jsonKind(te.Type.String()), te.Value)
		}
		// The body is valid JSON, so what is left is an unknown field.
		return groundhog.Errorf(groundhog.EINVALID, "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// jsonKind names a Go field type as the JSON type a client must send.
func jsonKind(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "string":
		return "a string"
	case "int64":
		return "an integer"
	case "bool":
		return "a boolean"
	}
	return goType
}

// record is the JSON form of an operation record.
type record struct {
	ID                string          `json:"id"`
	Key               string          `json:"key"`
	Status            string          `json:"status"`
	FencingToken      int64           `json:"fencing_token"`
	LeaseExpiresAt    *time.Time      `json:"lease_expires_at,omitempty"`
	Attempts          int             `json:"attempts"`
	CreatedAt         time.Time       `json:"created_at"`
	ExpiresAt         *time.Time      `json:"expires_at,omitempty"`
	Result            json.RawMessage `json:"result,omitempty"`
	ResultStatus      int             `json:"result_status,omitempty"`
	ResultContentType string          `json:"result_content_type,omitempty"`
}

// recordOf renders op. A result that is a JSON body (every tool result,
// and non-streamed provider responses) is inlined as "result"; any result
// also shows its HTTP status and content type.
func recordOf(op *groundhog.Operation) record {
	rec := record{
		ID:           op.ID,
		Key:          op.Key,
		Status:       string(op.Status),
		FencingToken: op.FencingToken,
		Attempts:     op.Attempts,
		CreatedAt:    op.CreatedAt.UTC(),
	}
	if !op.LeaseExpiresAt.IsZero() && op.Status == groundhog.StatusRunning {
		t := op.LeaseExpiresAt.UTC()
		rec.LeaseExpiresAt = &t
	}
	if !op.ExpiresAt.IsZero() {
		t := op.ExpiresAt.UTC()
		rec.ExpiresAt = &t
	}
	if res := op.Result; res != nil {
		rec.ResultStatus = res.Status
		rec.ResultContentType = res.ContentType
		if mt, _, _ := mime.ParseMediaType(res.ContentType); mt == "application/json" && !res.Streamed && json.Valid(res.Body) {
			rec.Result = res.Body
		}
	}
	return rec
}

// errorType is the "type" of an error body for a code. The codes are the
// groundhog ones, with two names clearer to a tool author.
func errorType(code string) string {
	switch code {
	case groundhog.ESTALE:
		return "stale_token"
	case groundhog.ECONFLICT:
		return "operation_in_progress"
	}
	return code
}

func errorBody(err error) map[string]any {
	return map[string]any{"error": map[string]string{
		"type":    errorType(groundhog.ErrorCode(err)),
		"message": groundhog.ErrorMessage(err),
	}}
}

func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusFor(groundhog.ErrorCode(err))
	if status >= 500 {
		h.s.log.LogAttrs(r.Context(), slog.LevelWarn, "idempotency: operations API request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status), slog.Any("err", err))
	}
	writeJSON(w, status, errorBody(err))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Only our own types are marshalled; this cannot happen.
		panic(fmt.Sprintf("idempotency: marshal response: %v", err))
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
