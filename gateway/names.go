package gateway

import (
	"bytes"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// mayHoldName reports whether body may spell a member name holding one of
// parts: it holds one, or an escaped letter or underscore (\u0040–\u007f), with
// which a member name can spell it without those bytes. Escapes of other
// characters (Go's encoder writes < > & as \u003c, \u003e, \u0026) do not
// count, so most bodies are not read twice.
//
// fingerprint.Result.LetterEscapes is the same test of the escapes, made
// on the fingerprint's pass.
func mayHoldName(body []byte, parts ...string) bool {
	for _, part := range parts {
		if containsUnderscored(body, part) { // bytes.Contains, faster for "file_id"
			return true
		}
	}
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`\u00`))
		if j < 0 {
			return false
		}
		i += j + 4
		if i < len(body) && body[i] >= '4' && body[i] <= '7' {
			return true
		}
	}
}

// watchedNames are the member names the fingerprint looks out for on its
// pass (admit sets them in every call's fingerprint.Params): those besides
// file_id that name a resource in a body (wire.BodyRefs; refBits), and a
// chat stream's include_usage and stream_options (provider.go, upstream.go).
var watchedNames = fingerprint.NewNames("container", "vector_store_ids", "conversation", "previous_response_id", "training_file", "validation_file",
	"include_usage", "stream_options")

var (
	refBits = watchedNames.Bit("container") | watchedNames.Bit("vector_store_ids") | watchedNames.Bit("conversation") |
		watchedNames.Bit("previous_response_id") | watchedNames.Bit("training_file") | watchedNames.Bit("validation_file")
	includeUsageBit  = watchedNames.Bit("include_usage")
	streamOptionsBit = watchedNames.Bit("stream_options")
)

// mayNameResource reports whether a body of shape may name a resource
// (wire.BodyRefs), so that it must be parsed to find out: it holds
// file_id (a member, a file_ids list, or an eval's {"type": "file_id"}),
// or a member named after a resource, or an escaped letter (a name or a
// "file_id" value spelled without its bytes).
//
// With fp, the fingerprint of these exact bytes computed with watchedNames,
// the members and escapes are what its pass saw, every refBits member of
// every shape counts (knowing costs nothing more), and only file_id is
// searched for in the bytes: at 200 KB, each name searched for costs
// ≈ 30–60 µs (a quote starts most of them, and JSON is full of quotes),
// the escapes ≈ 80 (transcripts and code hold a backslash every few
// dozen bytes). Without fp, the bytes are searched for the names a body of
// shape is read for (mayHoldName): files in every shape, a code
// interpreter's container in chat and Responses, the rest in a Responses
// call or a create on an OpenAI resource route.
func mayNameResource(shape groundhog.Shape, body []byte, fp *fingerprint.Result) bool {
	if fp != nil {
		return fp.Names&refBits != 0 || fp.LetterEscapes || containsUnderscored(body, "file_id")
	}
	names := []string{"file_id"}
	switch shape {
	case groundhog.ShapeChat:
		names = append(names, `"container"`)
	case groundhog.ShapeResponses:
		// training_file and validation_file end in _file".
		names = append(names, `"container"`, `"vector_store_ids"`, `"conversation"`, `_file"`, `"previous_response_id"`)
	}
	return mayHoldName(body, names...)
}
