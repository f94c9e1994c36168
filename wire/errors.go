package wire

import (
	"net/http"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// ErrorType returns the provider's error "type" string for a groundhog
// error code on shape. The mapping, one place for both families:
//
//	code                                   OpenAI routes           Anthropic
//	invalid, media_type, mismatch,
//	  precondition, precondition_required,
//	  range                                invalid_request_error   invalid_request_error
//	unauthorized                           authentication_error    authentication_error
//	not_found                              not_found_error         not_found_error
//	too_large                              invalid_request_error   request_too_large
//	conflict, stale                        conflict_error          invalid_request_error
//	upstream, timeout, internal, other     server_error            api_error
//	unavailable                            server_error            overloaded_error
//
// Anthropic has no conflict type and documents 409 as invalid_request_error;
// OpenAI reports 413 as an invalid request. The HTTP status is chosen
// elsewhere (by the gateway, from the code), never from this string.
func ErrorType(shape groundhog.Shape, code string) string {
	anthropic := shape == groundhog.ShapeMessages
	switch code {
	case groundhog.EINVALID, groundhog.EMEDIATYPE, groundhog.EMISMATCH, groundhog.EPRECONDITION,
		groundhog.EPRECONDREQUIRED, groundhog.ERANGE, groundhog.ESLOWREQUEST:
		return "invalid_request_error"
	case groundhog.EUNAUTHORIZED:
		return "authentication_error"
	case groundhog.ENOTFOUND:
		return "not_found_error"
	case groundhog.ETOOLARGE:
		if anthropic {
			return "request_too_large"
		}
		return "invalid_request_error"
	case groundhog.ECONFLICT, groundhog.ESTALE:
		if anthropic {
			return "invalid_request_error"
		}
		return "conflict_error"
	case groundhog.EUNAVAILABLE:
		if anthropic {
			return "overloaded_error"
		}
		return "server_error"
	}
	if anthropic {
		return "api_error"
	}
	return "server_error"
}

// ErrorBody returns the JSON error body for shape carrying message.
// OpenAI routes get {"error":{"message":…,"type":…,"param":null,"code":…}}
// with code set to the groundhog code (machine-readable, e.g. "conflict");
// Anthropic gets {"type":"error","error":{"type":…,"message":…}}. The type
// comes from ErrorType.
//
// Converse (Bedrock) errors are {"message":…}; their type travels in the
// X-Amzn-Errortype header (ConverseErrorType).
func ErrorBody(shape groundhog.Shape, code, message string) []byte {
	if shape == groundhog.ShapeConverse {
		return bedrock.ErrorBody(message)
	}
	if shape == groundhog.ShapeGemini {
		// Google's shape: {"error":{"code":<HTTP status>,"message","status"}}.
		return gemini.ErrorBody(Status(code), message)
	}
	return errorBody(shape, code, message).bytes()
}

// ConverseErrorType is the Bedrock exception name (the X-Amzn-Errortype
// header) of a groundhog error code on the Converse shape.
func ConverseErrorType(code string) string { return bedrock.ErrorType(code, Status(code)) }

func errorBody(shape groundhog.Shape, code, message string) object {
	typ := jsonString(ErrorType(shape, code))
	if shape == groundhog.ShapeMessages {
		inner := object{{"type", typ}, {"message", jsonString(message)}}
		return object{{"type", jsonString("error")}, {"error", inner.raw()}}
	}
	inner := object{{"message", jsonString(message)}, {"type", typ}, {"param", rawNull}, {"code", jsonString(code)}}
	return object{{"error", inner.raw()}}
}

// ErrorEvent returns the in-stream error event to send when a stream breaks
// after the response headers went out:
//
//   - messages: event "error" with the Anthropic error body as data;
//   - chat: an unnamed event whose data is the OpenAI error body
//     {"error":{…}}, which openai-go reports as a stream error;
//   - responses: event "error" whose data is the Responses error event
//     ({"type":"error","code","message","param"}) that also carries the
//     OpenAI "error" member, so both clients that dispatch on "type" and
//     openai-go (which looks for a top-level "error") see a failure. It has
//     no sequence_number: the writer does not know the stream's count.
//
// Clients that do not understand the event still see the stream end without
// its terminal event, so no one mistakes it for a complete answer.
func ErrorEvent(shape groundhog.Shape, code, message string) groundhog.Event {
	switch shape {
	case groundhog.ShapeConverse:
		// An in-stream exception, as Bedrock sends one.
		return bedrock.ExceptionEvent(ConverseErrorType(code), message)
	case groundhog.ShapeMessages:
		return groundhog.Event{Name: "error", Data: ErrorBody(shape, code, message)}
	case groundhog.ShapeResponses:
		body := errorBody(shape, code, message)
		o := object{
			{"type", jsonString("error")},
			{"code", jsonString(code)},
			{"message", jsonString(message)},
			{"param", rawNull},
		}
		o = append(o, body...)
		return groundhog.Event{Name: "error", Data: o.bytes()}
	}
	return groundhog.Event{Data: ErrorBody(shape, code, message)}
}

// CodeMethod is the error code of a wrong HTTP method (405). It exists only
// at the HTTP layer, so it lives here rather than among the root codes.
const CodeMethod = "method_not_allowed"

// Status is the one mapping from a groundhog error code to the HTTP status
// of docs/reference/wire.md; every handler (gateway, tool operations API, report and
// dashboard) answers through it.
func Status(code string) int {
	switch code {
	case groundhog.EINVALID:
		return http.StatusBadRequest
	case groundhog.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case groundhog.ENOTFOUND:
		return http.StatusNotFound
	case CodeMethod:
		return http.StatusMethodNotAllowed
	case groundhog.ECONFLICT, groundhog.ESTALE:
		return http.StatusConflict
	case groundhog.EPRECONDITION:
		return http.StatusPreconditionFailed
	case groundhog.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case groundhog.EMEDIATYPE:
		return http.StatusUnsupportedMediaType
	case groundhog.EMISMATCH:
		return http.StatusUnprocessableEntity
	case groundhog.EUPSTREAM:
		return http.StatusBadGateway
	case groundhog.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case groundhog.ETIMEOUT:
		return http.StatusGatewayTimeout
	case groundhog.EPRECONDREQUIRED:
		return http.StatusPreconditionRequired
	case groundhog.ERANGE:
		return http.StatusRequestedRangeNotSatisfiable
	case groundhog.EQUOTA:
		return http.StatusInsufficientStorage
	case groundhog.ESLOWREQUEST:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}
