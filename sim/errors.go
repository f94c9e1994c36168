package sim

import (
	"errors"
	"net/http"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// family is a provider wire format: it decides the shape of error bodies.
type family int

const (
	familyOpenAI family = iota
	familyAnthropic
	familyBedrock
	familyGemini
)

func familyOf(shape groundhog.Shape) family {
	switch shape.Provider() {
	case "anthropic":
		return familyAnthropic
	case "bedrock":
		return familyBedrock
	case "gemini":
		return familyGemini
	}
	return familyOpenAI
}

// statusFor maps err's code to its HTTP status: wire.Status is the one
// mapping.
func statusFor(err error) int { return wire.Status(groundhog.ErrorCode(err)) }

// writeErr answers with err's client-safe message in fam's error shape.
func writeErr(w http.ResponseWriter, fam family, err error) {
	var pe *paramError
	if fam == familyOpenAI && errors.As(err, &pe) {
		pe.write(w)
		return
	}
	writeError(w, fam, statusFor(err), groundhog.ErrorMessage(err))
}

// writeError answers status with msg in the provider's error shape:
// OpenAI {"error":{"message","type","param","code"}}, Anthropic
// {"type":"error","error":{"type","message"}}. 429 carries Retry-After.
func writeError(w http.ResponseWriter, fam family, status int, msg string) {
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	if fam == familyGemini {
		// Google: {"error":{"code","message","status"}}.
		writeBody(w, status, gemini.ErrorBody(status, msg))
		return
	}
	if fam == familyBedrock {
		// Bedrock: the exception's name in X-Amzn-Errortype (where the AWS
		// SDK reads it), {"message": …} as the body.
		w.Header().Set(bedrock.ErrorTypeHeader, bedrock.ExceptionForStatus(status))
		writeBody(w, status, bedrock.ErrorBody(msg))
		return
	}
	if fam == familyAnthropic {
		writeJSON(w, status, anthropicError{Type: "error", Error: anthropicErrorBody{Type: anthropicErrorType(status), Message: msg}})
		return
	}
	typ, code := openAIErrorType(status)
	writeJSON(w, status, openAIError{Error: openAIErrorBody{Message: msg, Type: typ, Code: code}})
}

type openAIError struct {
	Error openAIErrorBody `json:"error"`
}

type openAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type anthropicError struct {
	Type  string             `json:"type"`
	Error anthropicErrorBody `json:"error"`
}

type anthropicErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// openAIErrorType returns the error type and code OpenAI uses for status.
func openAIErrorType(status int) (typ string, code *string) {
	str := func(s string) *string { return &s }
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", str("invalid_api_key")
	case status == http.StatusNotFound:
		return "invalid_request_error", str("unknown_url")
	case status == http.StatusTooManyRequests:
		return "requests", str("rate_limit_exceeded")
	case status >= 500:
		return "server_error", nil
	default:
		return "invalid_request_error", nil
	}
}

// anthropicErrorType returns the error type Anthropic uses for status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
