package bedrock

import (
	"encoding/json"
	"net/http"
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
)

// ErrorTypeHeader is the response header that names a Bedrock exception;
// the AWS SDK reads the error's code from it.
const ErrorTypeHeader = "X-Amzn-Errortype"

// ExceptionForStatus returns the exception Bedrock answers an HTTP status
// with: 400 ValidationException, 403 AccessDeniedException, 404
// ResourceNotFoundException, 408 ModelTimeoutException, 424
// ModelErrorException, 429 ThrottlingException, 503
// ServiceUnavailableException; any other 4xx is a ValidationException and
// any other 5xx an InternalServerException.
func ExceptionForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "ValidationException"
	case http.StatusUnauthorized:
		return "UnrecognizedClientException"
	case http.StatusForbidden:
		return "AccessDeniedException"
	case http.StatusNotFound:
		return "ResourceNotFoundException"
	case http.StatusRequestTimeout:
		return "ModelTimeoutException"
	case http.StatusConflict:
		return "ConflictException"
	case http.StatusFailedDependency:
		return "ModelErrorException"
	case http.StatusTooManyRequests:
		return "ThrottlingException"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	}
	if status >= 500 {
		return "InternalServerException"
	}
	return "ValidationException"
}

// ErrorType returns the exception name of a groundhog error code whose
// HTTP status is status (the gateway maps codes to statuses in one place).
func ErrorType(code string, status int) string {
	switch code {
	case groundhog.EUNAUTHORIZED:
		return "UnrecognizedClientException"
	case groundhog.EUNAVAILABLE:
		return "ServiceUnavailableException"
	case groundhog.ECONFLICT, groundhog.ESTALE:
		return "ConflictException"
	}
	return ExceptionForStatus(status)
}

// ErrorBody is the JSON body of a Bedrock error: {"message": message}.
func ErrorBody(message string) []byte { return messageBody(message) }

func messageBody(message string) []byte {
	b, _ := json.Marshal(struct {
		Message string `json:"message"`
	}{message})
	return b
}

// ExceptionEvent is the in-stream exception of type exception (an
// exception name such as ThrottlingException; in the stream its member
// name, throttlingException, is sent) carrying message.
func ExceptionEvent(exception, message string) groundhog.Event {
	name := exception
	if name != "" {
		name = strings.ToLower(name[:1]) + name[1:]
	}
	return groundhog.Event{Name: ExceptionPrefix + name, Data: messageBody(message)}
}
