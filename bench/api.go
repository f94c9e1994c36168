package bench

import (
	"fmt"
	"net/http"

	"github.com/groundhog-ai/groundhog/internal/benchbody"
)

// An API is the provider API a run's requests use: the route, the body the
// "small" and "large" specs generate (internal/benchbody) and the member
// that makes a miss's body new.
type API string

// The APIs a run can use.
const (
	APIChat      API = "chat"      // OpenAI chat completions: POST /v1/chat/completions
	APIMessages  API = "messages"  // Anthropic Messages: POST /v1/messages
	APIResponses API = "responses" // OpenAI Responses: POST /v1/responses
)

// ParseAPI returns the API named s ("" is chat).
func ParseAPI(s string) (API, error) {
	switch API(s) {
	case "", APIChat:
		return APIChat, nil
	case APIMessages, APIResponses:
		return API(s), nil
	}
	return "", fmt.Errorf("unknown API %q: chat, messages or responses", s)
}

func (a API) path() string {
	switch a {
	case APIMessages:
		return "/v1/messages"
	case APIResponses:
		return "/v1/responses"
	}
	return "/v1/chat/completions"
}

// generate is the API's body generator.
func (a API) generate(size int, o benchbody.Options) []byte {
	switch a {
	case APIMessages:
		return benchbody.Anthropic(size, o)
	case APIResponses:
		return benchbody.Responses(size, o)
	}
	return benchbody.Chat(size, o)
}

// uniqueMember is the top-level member a miss's body starts with, numbered
// so that no body is sent twice: an end-user id the model never sees
// (chat's and Responses' "safety_identifier", Messages'
// "metadata.user_id"), so every body asks the same thing.
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

// keyedMember is the top-level member a cached miss's body adds, numbered,
// to change its cache key: chat's seed, Messages' top_k, and for Responses
// (which has neither) max_output_tokens set far above any simulated
// answer's length. Each changes what the model is asked, so the
// fingerprint keeps it in the key.
func (a API) keyedMember() string {
	switch a {
	case APIMessages:
		return "top_k"
	case APIResponses:
		return "max_output_tokens"
	}
	return "seed"
}

func (a API) appendKeyed(b []byte, i int64) []byte {
	if a == APIResponses {
		i += 1 << 20
	}
	return fmt.Appendf(b, `"%s":%d`, a.keyedMember(), i)
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
	switch a {
	case APIMessages:
		return "Anthropic Messages"
	case APIResponses:
		return "OpenAI Responses"
	}
	return "chat completions"
}
