package gateway

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// statusFor maps an error code to its HTTP status: wire.Status is the one
// mapping.
func statusFor(code string) int { return wire.Status(code) }

// codeMethod is the code of a wrong HTTP method.
const codeMethod = wire.CodeMethod

// writeError answers err as a JSON error in the provider's shape for shape
// (OpenAI's for every non-Anthropic route). Internal detail is logged, never
// sent.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, shape groundhog.Shape, err error) {
	code := groundhog.ErrorCode(err)
	status := statusFor(code)
	if status >= 500 {
		s.log.Warn("request failed", "path", r.URL.Path, "status", status, "err", err)
	}
	msg := groundhog.ErrorMessage(err) // never internal detail
	if shape == "" {
		shape = groundhog.ShapeChat
	}
	if isInvoke(r, shape) {
		shape = groundhog.ShapeConverse // Bedrock's exceptions, whatever the body's shape
	}
	body := wire.ErrorBody(shape, code, msg)
	h := w.Header()
	if shape == groundhog.ShapeConverse {
		h.Set(bedrock.ErrorTypeHeader, wire.ConverseErrorType(code))
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// logAttrs is a helper so handlers log with a consistent shape.
func logAttrs(c *call) []any {
	return []any{slog.String("tenant", c.tenant), slog.String("operation", c.op), slog.String("hash", c.fp.Hash)}
}
