package bench

import (
	"fmt"
	"net/http"
)

// An API is the provider API a run's requests use: the route, the body the
// "small" and "large" specs generate (internal/benchbody) and the member
// that makes a miss's body new.
type API string

// The APIs a run can use.
const (
	APIChat     API = "chat"     // OpenAI chat completions: POST /v1/chat/completions
	APIMessages API = "messages" // Anthropic Messages: POST /v1/messages
)

// ParseAPI returns the API named s ("" is chat).
func ParseAPI(s string) (API, error) {
	switch API(s) {
	case "", APIChat:
		return APIChat, nil
	case APIMessages:
		return APIMessages, nil
	}
	return "", fmt.Errorf("unknown API %q: chat or messages", s)
}

func (a API) path() string {
	if a == APIMessages {
		return "/v1/messages"
	}
	return "/v1/chat/completions"
}

// uniqueMember is the top-level member a miss's body starts with, numbered
// so that no body is sent twice: an end-user id the model never sees
// (chat's "safety_identifier", Messages' "metadata.user_id"), so every
// body asks the same thing.
func (a API) uniqueMember() string {
	if a == APIMessages {
		return "metadata"
	}
	return "safety_identifier"
}

func (a API) appendUnique(b []byte, i int64) []byte {
	if a == APIMessages {
		return fmt.Appendf(b, `{"metadata":{"user_id":"bench-%d"}`, i)
	}
	return fmt.Appendf(b, `{"safety_identifier":"bench-%d"`, i)
}

// setHeaders sets the headers every request of the API carries.
func (a API) setHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	if a == APIMessages {
		h.Set("anthropic-version", "2023-06-01") // as the Anthropic SDKs send it
	}
}

// label is the API's name in the report's title.
func (a API) label() string {
	if a == APIMessages {
		return "Anthropic Messages"
	}
	return "chat completions"
}
