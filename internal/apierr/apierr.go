// Package apierr answers errors of groundhog's own JSON endpoints (state,
// evidence) in the OpenAI error shape the other management endpoints use,
// with the status from wire.Status, the one code-to-status map.
package apierr

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
)

// body is {"error":{"message","type","param":null,"code"}} plus the
// endpoint's extra top-level members.
type body struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// Write answers err: status wire.Status(code), the client-safe message, and
// extra (may be nil) merged at the top level, e.g. "current_version" of a
// 412. Errors with a 5xx status are logged with their internal detail.
func Write(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error, extra map[string]any) {
	code := groundhog.ErrorCode(err)
	status := wire.Status(code)
	if status >= 500 && log != nil {
		log.LogAttrs(r.Context(), slog.LevelWarn, "request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status), slog.Any("err", err))
	}
	var b body
	b.Error.Message = groundhog.ErrorMessage(err)
	b.Error.Type = wire.ErrorType(groundhog.ShapeChat, code)
	b.Error.Code = code
	var out any = b
	if len(extra) > 0 {
		m := map[string]any{"error": b.Error}
		for k, v := range extra {
			m[k] = v
		}
		out = m
	}
	JSON(w, status, out)
}

// JSON writes v as a JSON response with status.
func JSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // messages quote client input: keep <, >, & readable
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		data = []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":"internal"}}`)
		status = http.StatusInternalServerError
	}
	data = append(data, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// Auth runs auth on r and returns the tenant. An error that is neither
// EUNAUTHORIZED nor EUNAVAILABLE becomes EUNAVAILABLE (the key store
// failed), as in the other management endpoints.
func Auth(auth func(*http.Request) (string, error), r *http.Request) (string, error) {
	tenant, err := auth(r)
	if err != nil {
		if code := groundhog.ErrorCode(err); code != groundhog.EUNAUTHORIZED && code != groundhog.EUNAVAILABLE {
			err = groundhog.WrapError(groundhog.EUNAVAILABLE, "authentication unavailable", err)
		}
		return "", err
	}
	return tenant, nil
}
