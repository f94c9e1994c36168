package groundhog

import (
	"errors"
	"fmt"
)

// Error codes. The HTTP layer maps each to one status in one place
// (gateway.statusFor); stores and stages only pick the code.
const (
	EINVALID      = "invalid"      // 400: malformed request
	EUNAUTHORIZED = "unauthorized" // 401: no or unknown gateway key
	ENOTFOUND     = "not_found"    // 404
	ECONFLICT     = "conflict"     // 409: operation in progress
	EPRECONDITION = "precondition" // 412: version mismatch (If-Match)
	ETOOLARGE     = "too_large"    // 413
	EMEDIATYPE    = "media_type"   // 415
	EMISMATCH     = "mismatch"     // 422: idempotency key reused with another payload
	ESTALE        = "stale"        // a fenced write lost: the caller's token is not current
	EUPSTREAM     = "upstream"     // 502: provider failed
	ETIMEOUT      = "timeout"      // 504: provider timed out
	EUNAVAILABLE  = "unavailable"  // 503: store unavailable
	EINTERNAL     = "internal"     // 500

	EPRECONDREQUIRED = "precondition_required" // 428: an update without If-Match
	ERANGE           = "range"                 // 416: range (bytes or lines) not satisfiable
	EQUOTA           = "quota"                 // 507: the tenant's storage quota is used up
	ESLOWREQUEST     = "request_timeout"       // 408: the request body arrived too slowly and was cut off
)

// Error is a groundhog error with a code. Message is safe to show to a
// client; Err carries internal detail for logs only.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message != "" {
		return e.Message + ": " + e.Err.Error()
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a client-safe formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with code and message that wraps err (kept
// out of client responses).
func WrapError(code, message string, err error) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err: the Message of its
// *Error, or a generic text for anything else.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return "internal error"
}

// IsNotFound reports whether err has code ENOTFOUND.
func IsNotFound(err error) bool { return ErrorCode(err) == ENOTFOUND }
