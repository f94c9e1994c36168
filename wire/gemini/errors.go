package gemini

import (
	"encoding/json"
	"net/http"
)

// StatusName returns Google's canonical status name (google.rpc.Code) that
// an HTTP status is answered with: 400 INVALID_ARGUMENT, 401
// UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND, 409 ABORTED, 412
// and 422 FAILED_PRECONDITION, 429 RESOURCE_EXHAUSTED, 499 CANCELLED, 501
// UNIMPLEMENTED, 503 UNAVAILABLE, 504 DEADLINE_EXCEEDED; any other 4xx is
// INVALID_ARGUMENT and any other 5xx INTERNAL.
func StatusName(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusPreconditionFailed, http.StatusUnprocessableEntity, http.StatusPreconditionRequired:
		return "FAILED_PRECONDITION"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "INVALID_ARGUMENT"
}

// Error is the body of a Gemini API error, {"error": {...}}.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// ErrorBody is the JSON error body Google answers HTTP status status with:
// {"error":{"code":status,"message":message,"status":StatusName(status)}}.
func ErrorBody(status int, message string) []byte {
	b, _ := json.Marshal(struct {
		Error Error `json:"error"`
	}{Error{Code: status, Message: message, Status: StatusName(status)}})
	return b
}
