package wire

import (
	"fmt"

	groundhog "github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
	"github.com/groundhog-ai/groundhog/wire/gemini"
)

// BodyFromEvents assembles the non-stream JSON body equivalent to a complete
// stream of shape:
//
//   - chat: a "chat.completion" object — id, object, created, model,
//     choices[] (index, message {role, content, refusal, tool_calls with
//     their arguments concatenated, function_call, annotations}, logprobs,
//     finish_reason), usage when the stream had a usage chunk, service_tier
//     and system_fingerprint when present. Streamed reasoning text of
//     OpenAI-compatible providers (reasoning_content, reasoning)
//     concatenates like content; other unknown fields of chunks, choices and
//     deltas are kept (last non-null value wins).
//   - responses: the response object of the terminal event
//     (response.completed or response.incomplete; a response whose status
//     is "failed" is a failed stream), unchanged but compacted;
//     when it has no output, the output is rebuilt from the
//     response.output_item.done events.
//   - messages: the Anthropic message: message_start's message with content
//     rebuilt from the content blocks (text_delta, input_json_delta parsed
//     as the tool input, thinking_delta, signature_delta, citations_delta),
//     then message_delta's stop_reason, stop_sequence, other non-null fields
//     and usage merged in.
//
// The body is compact JSON and keeps the key order of the stream's objects,
// so converting a body to events and back yields the same bytes.
//
// The error wraps ErrStreamFailed when the stream carries an error event,
// ErrIncompleteStream when it lacks its terminal event (see the sentinel),
// ErrMalformed when an event is not the expected JSON, ErrNotStreamable for
// embeddings and ErrUnknownShape for an unknown shape. It never panics,
// whatever the events hold.
func BodyFromEvents(shape groundhog.Shape, events []groundhog.Event) ([]byte, error) {
	switch shape {
	case groundhog.ShapeChat:
		return chatBodyFromEvents(events)
	case groundhog.ShapeResponses:
		return responsesBodyFromEvents(events)
	case groundhog.ShapeMessages:
		return messagesBodyFromEvents(events)
	case groundhog.ShapeConverse:
		return bedrock.BodyFromEvents(events)
	case groundhog.ShapeGemini:
		return gemini.BodyFromEvents(events)
	case groundhog.ShapeEmbeddings:
		return nil, fmt.Errorf("wire: %s: %w", shape, ErrNotStreamable)
	}
	return nil, fmt.Errorf("wire: %q: %w", shape, ErrUnknownShape)
}

// EventsFromBody synthesizes the stream a provider would have sent for the
// non-stream body of shape. Text is cut into deltas of a few words on rune
// boundaries.
//
//   - chat: unnamed "chat.completion.chunk" events. Per choice, a first
//     chunk with the role, content "" (or null when the message's content
//     is null), refusal, logprobs and the fields that do not stream
//     (annotations, audio, extensions); content, refusal and reasoning text
//     deltas; per tool call a chunk with id, type, name and empty arguments,
//     then argument deltas; a final chunk with an empty delta and the
//     finish_reason. When includeUsage is true (and the body has a usage)
//     every chunk has "usage": null and a last chunk with empty choices
//     carries the body's usage, as with stream_options.include_usage. Then a
//     "[DONE]" event. Unknown top-level fields ride on the first chunk.
//   - responses: events named by their type, each with type and a
//     sequence_number from 0: response.created and response.in_progress
//     (status in_progress, no output, usage null); per output item
//     output_item.added, then for messages content_part.added,
//     output_text.delta… (or refusal.delta…), output_text.annotation.added,
//     output_text.done, content_part.done; for function calls
//     function_call_arguments.delta… and .done; for reasoning the summary
//     part and text events; then output_item.done with the full item; and
//     the terminal event with the body as its response: response.incomplete
//     or response.failed when the body's status says so, response.completed
//     otherwise. includeUsage is ignored: the terminal response carries
//     usage.
//   - messages: message_start (content empty, stop fields null, usage with
//     output_tokens 1, or 0 for an empty answer), ping, per content block
//     content_block_start / content_block_delta… / content_block_stop
//     (text_delta and citations_delta; input_json_delta for tool_use,
//     server_tool_use and mcp_tool_use inputs; thinking_delta and
//     signature_delta; other blocks whole in their start event),
//     message_delta (stop_reason, stop_sequence, cumulative usage) and
//     message_stop. includeUsage is ignored.
//
// The streams are accepted by the official openai-go and anthropic-sdk-go
// streaming decoders and accumulators. Embeddings have no stream: the error
// wraps ErrNotStreamable. A body that is not the shape's JSON yields an
// error wrapping ErrMalformed.
func EventsFromBody(shape groundhog.Shape, body []byte, includeUsage bool) ([]groundhog.Event, error) {
	switch shape {
	case groundhog.ShapeChat:
		return chatEventsFromBody(body, includeUsage)
	case groundhog.ShapeResponses:
		return responsesEventsFromBody(body)
	case groundhog.ShapeMessages:
		return messagesEventsFromBody(body)
	case groundhog.ShapeConverse:
		return bedrock.EventsFromBody(body)
	case groundhog.ShapeGemini:
		return gemini.EventsFromBody(body)
	case groundhog.ShapeEmbeddings:
		return nil, fmt.Errorf("wire: %s: %w", shape, ErrNotStreamable)
	}
	return nil, fmt.Errorf("wire: %q: %w", shape, ErrUnknownShape)
}
