// Package wire holds groundhog's knowledge of the providers' wire formats —
// server-sent events, the OpenAI chat/responses/embeddings and Anthropic
// messages bodies and streams, usage accounting and error shapes — so that
// the gateway, the cache and coalescing can treat every response uniformly.
//
// Its central job is conversion: a stored stream must be able to answer a
// non-stream request and a stored body a stream request (docs/cache-and-coalescing.md). BodyFromEvents and EventsFromBody do that, and the
// streams EventsFromBody synthesizes are accepted by the official OpenAI and
// Anthropic Go SDKs' decoders and accumulators.
//
// Conversions run only on cross-mode cache hits, so they favour correctness
// and fidelity (unknown fields survive where the target form has a place for
// them, key order is kept) over speed. The SSE reader and writer are on the
// hot path of every streamed call and avoid needless allocation.
package wire

import (
	"errors"
	"strings"

	groundhog "github.com/groundhog-ai/groundhog"
)

// Sentinel errors. Callers test them with errors.Is; the functions of this
// package wrap them with detail.
var (
	// ErrUnknownShape reports a shape that is not one of groundhog's four.
	ErrUnknownShape = errors.New("wire: unknown shape")
	// ErrNotStreamable reports a shape with no streaming form (embeddings).
	ErrNotStreamable = errors.New("wire: shape cannot stream")
	// ErrIncompleteStream reports a stream that lacks its terminal event
	// (chat: a finish_reason for every choice; responses: a terminal
	// response event; messages: message_start and message_stop).
	ErrIncompleteStream = errors.New("wire: incomplete stream")
	// ErrStreamFailed reports a stream that carries an error event.
	ErrStreamFailed = errors.New("wire: stream carries an error")
	// ErrMalformed reports a body or event payload that is not the JSON the
	// shape prescribes.
	ErrMalformed = errors.New("wire: malformed payload")
)

// ShapeForPath returns the shape of a provider route: "/v1/chat/completions"
// is chat, "/v1/responses" responses, "/v1/embeddings" embeddings and
// "/v1/messages" messages. A single trailing slash is tolerated; any other
// path (including sub-resources such as "/v1/responses/{id}") returns false.
func ShapeForPath(path string) (groundhog.Shape, bool) {
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	switch path {
	case "/v1/chat/completions":
		return groundhog.ShapeChat, true
	case "/v1/responses":
		return groundhog.ShapeResponses, true
	case "/v1/embeddings":
		return groundhog.ShapeEmbeddings, true
	case "/v1/messages":
		return groundhog.ShapeMessages, true
	}
	return "", false
}
