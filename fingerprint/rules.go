package fingerprint

import (
	"fmt"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// field is one entry of the include/exclude tables: a path into the request
// body and why it is on its list.
//
// Path syntax: dot-separated object keys from the top level; "[*]" after a
// key means "every element of the array under that key". An excluded path
// whose value has another type than the path expects (a string "system"
// instead of an array of blocks) simply does not match.
type field struct {
	Path string
	Why  string
}

// Shared OpenAI exclusions: fields that are transport, bookkeeping or
// per-call identity. None of them reaches the model.
var (
	exStream         = field{"stream", "transport only: a streamed and a non-streamed call produce the same answer, and a stored one can replay either way"}
	exStreamOptions  = field{"stream_options", "transport only: asks for usage chunks / obfuscation in the stream"}
	exUser           = field{"user", "end-user id for abuse monitoring; the model never sees it"}
	exSafetyID       = field{"safety_identifier", "end-user id for abuse monitoring (successor of user); the model never sees it"}
	exMetadata       = field{"metadata", "tags stored with the result at the provider; the model never sees them"}
	exStore          = field{"store", "whether the provider keeps the result; does not change it"}
	exPromptCacheKey = field{"prompt_cache_key", "routing hint for provider prompt caching: changes cost, not the answer"}
	exPromptCacheTTL = field{"prompt_cache_retention", "provider prompt-cache lifetime: changes cost, not the answer"}
	exRequestID      = field{"request_id", "per-call id some clients put in the body: unique per call, it would defeat every hit"}
	exIdempotencyKey = field{"idempotency_key", "per-operation id some clients put in the body; idempotency has its own record (Idempotency-Key header)"}
	exPromptCacheOpt = field{"prompt_cache_options", "provider prompt-cache mode and lifetime (implicit/explicit, ttl): changes cost, not the answer"}
)

// OpenAI explicit prompt-cache breakpoints: markers on content parts that
// tell the provider where to save a prefix. Like Anthropic's cache_control
// they change cost, never the answer, so injecting one (Groundhog-Prompt-
// Cache-Breakpoints: auto) keeps the request hash.
var (
	exChatBreakpoint    = field{"messages[*].content[*].prompt_cache_breakpoint", "explicit prompt-cache breakpoint on a chat content part"}
	exInputBreakpoint   = field{"input[*].content[*].prompt_cache_breakpoint", "explicit prompt-cache breakpoint on an input content part"}
	exToolOutBreakpoint = field{"input[*].output[*].prompt_cache_breakpoint", "explicit prompt-cache breakpoint inside a function_call_output list"}
)

// excluded lists, per shape, the fields removed before hashing. Everything
// else is included — also fields no one has heard of yet: a field we do not
// know might change the output, and missing a cache hit is cheap while
// serving an answer to a different question is not.
var excluded = map[groundhog.Shape][]field{
	groundhog.ShapeChat: {
		exStream, exStreamOptions, exUser, exSafetyID, exMetadata, exStore,
		exPromptCacheKey, exPromptCacheTTL, exRequestID, exIdempotencyKey,
		exPromptCacheOpt, exChatBreakpoint,
	},
	groundhog.ShapeResponses: {
		// previous_response_id, include, background and store are NOT here:
		// the first changes the input, the others the response body (store
		// decides whether the provider keeps the response under its id).
		exStream, exStreamOptions, exUser, exSafetyID, exMetadata,
		exPromptCacheKey, exPromptCacheTTL, exRequestID, exIdempotencyKey,
		exPromptCacheOpt, exInputBreakpoint, exToolOutBreakpoint,
	},
	groundhog.ShapeEmbeddings: {
		// Embeddings have no stream, store or metadata: a "stream" field here
		// is unknown and therefore included.
		exUser, exRequestID, exIdempotencyKey,
	},
	groundhog.ShapeMessages: {
		exStream,
		{"metadata", "metadata.user_id is for abuse monitoring; the model never sees it"},
		exRequestID, exIdempotencyKey,
		// Prompt-cache breakpoints: they tell the provider where to cache a
		// prefix (and for how long), which changes cost, never the answer.
		// The paths are exactly the places the Messages API accepts a
		// cache_control marker, so a tool input schema with a property
		// named "cache_control" keeps it.
		{"cache_control", "top-level automatic breakpoint (applies to the last cacheable block)"},
		{"system[*].cache_control", "breakpoint on a system text block"},
		{"tools[*].cache_control", "breakpoint on a tool definition"},
		{"messages[*].content[*].cache_control", "breakpoint on a content block (text, image, document, tool_use, tool_result, …)"},
		{"messages[*].content[*].content[*].cache_control", "breakpoint on a block nested in a tool_result or search_result"},
		{"messages[*].content[*].content[*].content[*].cache_control", "breakpoint on a text block of a search_result inside a tool_result"},
		{"messages[*].content[*].source.content[*].cache_control", "breakpoint on a block of a document whose source is content blocks"},
		{"messages[*].content[*].content[*].source.content[*].cache_control", "the same, for a document inside a tool_result"},
	},
	// Converse bodies reach the fingerprint as wire/bedrock.FingerprintBody
	// makes them: the path's model id as "model", the cachePoint blocks
	// (whole array elements, which this table cannot remove) already left
	// out.
	groundhog.ShapeConverse: {
		exRequestID, exIdempotencyKey,
		{"requestMetadata", "key-value pairs for filtering invocation logs; the model never sees them"},
	},
	// Gemini bodies reach the fingerprint as wire/gemini.FingerprintBody
	// makes them: the path's model as "model" (the stream mode is the
	// route's, never in the body).
	groundhog.ShapeGemini: {
		exRequestID, exIdempotencyKey,
		{"labels", "billing labels (Vertex AI); the model never sees them"},
	},
}

// included documents, per shape, the known fields that change the output
// and therefore stay in the hash. It is not a filter (anything not excluded
// is hashed); tests use it to prove each of these fields moves the hash.
var included = map[groundhog.Shape][]field{
	groundhog.ShapeChat: {
		{"model", "a different model answers differently"},
		{"messages", "the conversation: the input itself"},
		{"tools", "what the model may call (order kept: it is what the model reads)"},
		{"tool_choice", "whether and which tool must be called"},
		{"parallel_tool_calls", "whether several calls may come in one turn"},
		{"functions", "legacy tools"},
		{"function_call", "legacy tool_choice"},
		{"response_format", "JSON mode / JSON schema of the answer"},
		{"temperature", "sampling"},
		{"top_p", "sampling"},
		{"seed", "sampling"},
		{"frequency_penalty", "sampling"},
		{"presence_penalty", "sampling"},
		{"logit_bias", "sampling"},
		{"max_tokens", "where the answer is cut"},
		{"max_completion_tokens", "where the answer is cut"},
		{"stop", "where the answer is cut"},
		{"n", "how many choices come back"},
		{"logprobs", "adds log probabilities to the body"},
		{"top_logprobs", "adds log probabilities to the body"},
		{"reasoning_effort", "how much the model thinks"},
		{"verbosity", "how long the answer is"},
		{"modalities", "text and/or audio output"},
		{"audio", "voice and format of audio output"},
		{"prediction", "predicted output changes the returned tokens' accounting"},
		{"web_search_options", "search changes the answer"},
		{"service_tier", "kept on purpose: the tier is reported in the body and may route to another deployment"},
	},
	groundhog.ShapeResponses: {
		{"model", "a different model answers differently"},
		{"input", "the input itself"},
		{"instructions", "the system prompt"},
		{"previous_response_id", "the conversation the input continues: a different id is a different input"},
		{"conversation", "the conversation the input continues"},
		{"prompt", "a stored prompt template and its variables"},
		{"tools", "what the model may call (order kept)"},
		{"tool_choice", "whether and which tool must be called"},
		{"parallel_tool_calls", "whether several calls may come in one turn"},
		{"max_tool_calls", "limits built-in tool calls"},
		{"text", "output format / JSON schema and verbosity"},
		{"reasoning", "effort and summary settings"},
		{"temperature", "sampling"},
		{"top_p", "sampling"},
		{"top_logprobs", "adds log probabilities to the body"},
		{"max_output_tokens", "where the answer is cut"},
		{"truncation", "how an over-long input is cut"},
		{"include", "extra output items in the response body"},
		{"background", "kept on purpose: a background call answers with a queued response object, not the result"},
		{"store", "kept on purpose: a stored response's id can be continued (previous_response_id) and retrieved; a store:true caller must never get an id the provider did not store"},
		{"service_tier", "kept on purpose: the tier is reported in the body and may route to another deployment"},
	},
	groundhog.ShapeEmbeddings: {
		{"model", "a different model embeds differently"},
		{"input", "the input itself"},
		{"dimensions", "vector length"},
		{"encoding_format", "float array or base64 string in the body"},
	},
	groundhog.ShapeMessages: {
		{"model", "a different model answers differently"},
		{"messages", "the conversation: the input itself"},
		{"system", "the system prompt"},
		{"max_tokens", "where the answer is cut"},
		{"stop_sequences", "where the answer is cut"},
		{"temperature", "sampling"},
		{"top_p", "sampling"},
		{"top_k", "sampling"},
		{"tools", "what the model may call (order kept)"},
		{"tool_choice", "whether and which tool must be called"},
		{"thinking", "extended thinking settings"},
		{"output_config", "output format / effort"},
		{"container", "code-execution container state the tools see"},
		{"mcp_servers", "remote tools"},
		{"context_management", "which earlier content the model sees"},
		{"diagnostics", "adds cache-miss diagnostics to the body"},
		{"service_tier", "kept on purpose: the tier is reported in the body"},
	},
	groundhog.ShapeGemini: {
		{"model", "the path's model: a different model answers differently"},
		{"contents", "the conversation: the input itself"},
		{"systemInstruction", "the system prompt"},
		{"tools", "what the model may call (order kept)"},
		{"toolConfig", "whether and which function must be called"},
		{"generationConfig", "sampling, output length, stop sequences, response schema, thinking"},
		{"safetySettings", "which answers are blocked"},
		{"cachedContent", "an explicit cache's contents are part of the input (the tenant scopes the name)"},
	},
}

// node is one position of the exclusion trie: the value found at some path.
type node struct {
	drop   bool             // the member at this path is removed
	fields map[string]*node // rules for members, when the value is an object
	elem   *node            // rules for elements, when the value is an array
	names  []string         // the keys of fields, for child
	kids   []*node          // fields[names[i]] == kids[i]
}

// child returns the rules of the member key, nil if there are none. A
// linear scan: a node has at most a dozen rules, and comparing lengths
// first rejects almost every key without touching its bytes, which is
// cheaper than hashing the key for a map lookup on every member.
func (n *node) child(key []byte) *node {
	for i, name := range n.names {
		if len(name) == len(key) && name == string(key) {
			return n.kids[i]
		}
	}
	return nil
}

// roots holds the compiled exclusion trie of each shape.
var roots = func() map[groundhog.Shape]*node {
	m := make(map[groundhog.Shape]*node, len(excluded))
	for shape, fs := range excluded {
		root, err := compile(fs)
		if err != nil {
			panic(fmt.Sprintf("fingerprint: exclusions of %s: %v", shape, err))
		}
		m[shape] = root
	}
	return m
}()

// compile builds the trie of fs.
func compile(fs []field) (*node, error) {
	root := &node{}
	for _, f := range fs {
		cur := root
		for seg := range strings.SplitSeq(f.Path, ".") {
			name, stars := seg, 0
			for strings.HasSuffix(name, "[*]") {
				name, stars = strings.TrimSuffix(name, "[*]"), stars+1
			}
			if name == "" || strings.ContainsAny(name, "[]*") {
				return nil, fmt.Errorf("path %q: bad segment %q", f.Path, seg)
			}
			if cur.drop {
				return nil, fmt.Errorf("path %q: below an excluded path", f.Path)
			}
			if cur.fields == nil {
				cur.fields = map[string]*node{}
			}
			next := cur.fields[name]
			if next == nil {
				next = &node{}
				cur.fields[name] = next
				cur.names, cur.kids = append(cur.names, name), append(cur.kids, next)
			}
			cur = next
			for range stars {
				if cur.elem == nil {
					cur.elem = &node{}
				}
				cur = cur.elem
			}
		}
		if strings.HasSuffix(f.Path, "]") {
			return nil, fmt.Errorf("path %q: array elements cannot be excluded", f.Path)
		}
		if cur.fields != nil || cur.elem != nil || cur.drop {
			return nil, fmt.Errorf("path %q: excluded twice or above another rule", f.Path)
		}
		cur.drop = true
	}
	return root, nil
}
