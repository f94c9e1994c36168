// Package sim is the simulated model provider: an http.Handler that speaks
// the OpenAI and Anthropic wire formats offline, answers deterministically,
// counts tokens, caches prompt prefixes, models latency, injects faults and
// keeps its own bill, so every saving groundhog reports can be checked
// against what the provider charged.
//
// # Routes
//
//	POST /v1/chat/completions      OpenAI chat (stream: chat.completion.chunk events, then data: [DONE])
//	POST /v1/responses             OpenAI Responses (stream: response.* events with sequence_number)
//	GET|DELETE /v1/responses/{id}  a stored response; GET …/{id}/input_items lists its input items
//	POST /v1/responses/compact     OpenAI compaction of a Responses conversation
//	POST /v1/embeddings            OpenAI embeddings (string, strings, tokens or token arrays; float or base64)
//	GET  /v1/models[/{id}]         model list (sim-small, sim-large, sim-embed); Anthropic's shape when
//	                               the request has an anthropic-version header
//	POST /v1/messages              Anthropic Messages (max_tokens required, as in the real API)
//	POST /v1/messages/count_tokens Anthropic token count (not billed, no faults)
//	GET  /sim/v1/bill              the bill: {"calls":N,"input_tokens":N,"cached_input_tokens":N,
//	                               "cache_write_tokens":N,"cache_write_1h_tokens":N,"output_tokens":N,
//	                               "usd":"0.000000","input_usd":"0.000000","output_usd":"0.000000"}
//	POST /sim/v1/bill/reset        zero the bill; answers with the bill as it was just before
//
// Errors use each provider's error shape ({"error":{"message","type","param",
// "code"}} for OpenAI, {"type":"error","error":{"type","message"}} for
// Anthropic): 400 for malformed JSON, a missing model or another invalid
// field, 404 for an unknown route, 405 for a wrong method, 413 above 32 MiB.
// Any model name is accepted; one the price table does not know is billed
// as sim-small. Any API key (or none) is accepted: the key only scopes the
// prefix cache and the stored responses.
//
// # Outputs
//
// The answer is derived from SHA-256 of the route and the request body as
// canonical JSON (sorted keys, normalized numbers), without the fields that
// do not change content (stream, stream_options, user, metadata, store,
// prompt_cache_key, prompt_cache_retention, prompt_cache_options,
// safety_identifier, service_tier, n, the max-token limits) and without
// cache_control and prompt_cache_breakpoint markers. Identical
// inputs give identical text, streamed or not; changing temperature, seed,
// the messages or the model changes it. The natural length is 16–64 tokens;
// a max-token limit (max_completion_tokens or max_tokens, max_output_tokens,
// max_tokens) below it truncates that same text and reports finish_reason
// "length" / status "incomplete" / stop_reason "max_tokens". Choice i of n
// has its own text; choice 0 is the single-choice text. Stop sequences are
// not applied.
//
// Ids are derived from the request and a per-server call number, so they
// differ on every call (a replay by groundhog shows the original id);
// "created" comes from Config.Clock.
//
// Tool calls: when a request offers function tools and its last message is
// the user's (not a tool result) — or when tool_choice requires a call
// ("required", Anthropic "any", or a named tool) — and tool_choice does not
// forbid it ("none"), the answer is one call of the first tool (or the
// named one) whose arguments are a JSON object generated from the tool's
// parameter schema (const, enum, type, properties, items, minItems,
// minimum, anyOf/oneOf). An agent loop therefore alternates as with a real
// model: the user's question gets a tool call, the tool result gets text.
// A tool call is never truncated by the limit.
//
// Embeddings are unit vectors (8 dimensions unless "dimensions" says
// otherwise) that depend only on model, input and dimensions, so a text
// embeds the same alone or in any batch.
//
// # Stored responses and compaction
//
// A Responses answer is stored unless the request says "store": false, as
// the API does, in memory and per API key (the newest 4,096 in all).
// GET /v1/responses/{id} returns it as it was answered; DELETE answers
// {"id","object":"response","deleted":true}; GET …/{id}/input_items pages
// the request's input items (order desc by default, limit 1–100, after),
// each message with a "msg_" id. An unknown, deleted or other key's id is a
// 404 "Response with id '…' not found.".
//
// previous_response_id continues a stored response: the prompt is the
// tools and instructions of this request, then the previous response's
// context (its own previous context, its input items, its output items),
// then this request's input; instructions are not carried over. The tokens
// and the prefix cache follow that prompt, so a continuation re-reads the
// previous prompt from the prefix cache when it was cached. An unknown,
// deleted or store:false id is OpenAI's 400 (param previous_response_id,
// code previous_response_not_found).
//
// POST /v1/responses/compact ({"model","input","previous_response_id",
// "instructions"}) reads the whole context (instructions, the previous
// context, the input) and answers {"id","object":"response.compaction",
// "created_at","output","usage"}: the context's user messages, then one
// {"type":"compaction","id":"cmp_…","encrypted_content"} item. It is
// billed as a call of the request's model: input the whole context (read
// from the prefix cache as any prompt), output the summary, 64 + input/4
// tokens. It is not stored. Sent back as an input item, the sim's compaction
// item counts as its summary's tokens plus a message's MessageOverhead; a
// compaction item the sim did not write counts as the tokens of its JSON.
//
// # Tokens
//
// CountTokens counts text: each whitespace-separated word costs one token
// per started 4 bytes of UTF-8, so at least one; whitespace is free. A
// prompt costs MessageOverhead (4) tokens per message, per tool definition
// and for the system prompt or instructions, plus its content: text parts
// count their text, tool calls their name and arguments, any other part
// (image, file…) and tool definitions count their JSON text. Prompt tokens
// are ordered tools, system, messages. Embedding inputs cost their text's
// tokens (or the length of a token array), with no overhead. Outputs are
// made of words of at most 4 bytes, so output tokens = CountTokens(text)
// exactly; a tool call costs CountTokens(name) + CountTokens(arguments).
// Streams send one output token per text delta.
//
// # Prompt caching
//
// The PrefixCache holds prompt prefixes per (scope, model); the scope is a
// digest of the API key and, on OpenAI routes, the prompt_cache_key, so
// different keys never share an entry and one key shares across sessions.
// Every limit below comes from the model table (ModelCacheLimits; a model
// missing from it has sim-small's). A prefix becomes readable only once the
// request that writes it has passed its time to first token, so requests
// that arrive together all miss. Every read refreshes the entry's lifetime.
//
// OpenAI model families (OpenAIModels, by name prefix) follow the API's
// two generations of prompt caching. Before gpt-5.6, prompt_cache_retention
// sets the lifetime of automatic caching: "in_memory" (the default, "24h"
// for gpt-5.4 and gpt-5.5) or "24h"; gpt-5.5 accepts "24h" only
// ("in_memory" is a 400: "This model is compatible only with 24h extended
// prompt caching"); prompt_cache_options or a prompt_cache_breakpoint is a
// 400 (they are supported for gpt-5.6 and later). From gpt-5.6 on (gpt-5.6,
// gpt-6), every request is in prompt_cache_options mode, implicit unless it
// says explicit: the cache is matched and written at breakpoints only,
// writes live 30 minutes and are reported and billed at the cache-write
// price; prompt_cache_retention "24h" is accepted and echoed (a Responses
// answer echoes "24h" when the request sets none) but changes nothing,
// "in_memory" is a 400, and prompt_cache_options.ttl beside a
// prompt_cache_retention is a 400. The sim's own models accept every
// field of both generations. The chat usage of a model that does not
// report writes has no cache_write_tokens field, as the API's.
//
// OpenAI automatic caching (models before gpt-5.6 and the sim's, with no
// prompt_cache_options and no breakpoint):
// the longest cached prefix is read in whole blocks of 128 tokens from 1,024
// on, and written the same way, for free (cache_write_tokens 0). Entries
// live 5 minutes (Config.PrefixCacheTTL), 24 hours with
// prompt_cache_retention "24h".
//
// OpenAI prompt_cache_options mode — a request with prompt_cache_options
// {"mode": "implicit"|"explicit", "ttl": "30m"} or with any
// "prompt_cache_breakpoint": {"mode": "explicit"} (implicit mode then): on
// /v1/responses a breakpoint may sit on an input_text, input_image or
// input_file part of a message or of a function_call_output output list; on
// chat on a text part (the sim's extension of the same markers). It marks
// the exact end of that part, not rounded to a block. Reads are matched
// exactly at one of the latest 80 breakpoints of the request (explicit ones
// and, in implicit mode, each message end), never at a shorter unmarked
// prefix. Explicit mode writes the latest 4 explicit breakpoints; implicit
// mode writes the end of the newest message (the implicit breakpoint) and
// the latest 3 explicit ones. Breakpoints under 1,024 tokens write nothing.
// Writes live 30 minutes and are billed at the cache-write price, reported
// as prompt_tokens_details.cache_write_tokens / input_tokens_details.
// cache_write_tokens (the API sends no per-TTL breakdown of them: strict
// clients reject any other usage field).
// additional_tools input items add callable tools where they stand (after
// the cached prefix; a breakpoint inside one is a 400); tool_choice
// {"type": "allowed_tools"} restricts the callable tools without changing
// the prompt. A 400 for: both prompt_cache_options.ttl and
// prompt_cache_retention, a ttl other than "30m" (the sim does not offer
// "12h"), an unknown mode, a breakpoint on another part type.
//
// Anthropic (/v1/messages): only the prompt up to a cache_control
// breakpoint (on a tool, system block or content block, never an empty text
// block; or a top-level cache_control, meaning the last block) is cacheable,
// in the order tools, system, messages. A read is looked for at each
// breakpoint and at the 20 block boundaries before it; every breakpoint of
// at least the model's minimum (sim-small 1,024, sim-large 2,048 tokens) is
// written: the tokens from the read (or the start) to the last written
// breakpoint are reported as cache_creation_input_tokens, split by TTL into
// cache_creation.ephemeral_5m_input_tokens and ephemeral_1h_input_tokens;
// the read is cache_read_input_tokens and input_tokens is the rest. A
// cache_control's ttl is "5m" (default) or "1h", and a 1h breakpoint after a
// 5m one is a 400, as are more than 4 breakpoints. tool_choice, the thinking
// settings and the presence of images key the messages level: changing one
// of them misses every breakpoint in the messages while breakpoints on
// tools and system still read.
//
// What keeps the Anthropic prefix, as Anthropic documents it: a tool with
// defer_loading is not in the prompt (tool search loads it into the
// conversation), so adding or removing a deferred tool changes nothing
// cached; any other tool change, or an edit of the top-level system,
// changes the prompt from that point on. A mid-conversation system message
// ({"role": "system"} in messages) adds an instruction where it stands, so
// everything before it stays cached. It is accepted on the models of
// AnthropicSystemMessages (Claude Opus 4.8 and later; the sim's own models
// too) and must follow a user message and be last or followed by an
// assistant message: first, after an assistant message, before a user
// message, or on another claude-* model, it is a 400.
//
// # Latency
//
// Time to first token is Config.FirstToken + Config.PerPromptToken ×
// uncached prompt tokens (cache writes are uncached: they are computed);
// then Config.PerOutputToken passes between streamed output chunks, or, for
// a non-streamed answer, PerOutputToken × output tokens before it is sent.
// All three are zero by default.
//
// # Faults
//
// The Sim-Fault request header (or Config.Fault for every model call without
// the header; "none" in the header disables Config.Fault) injects one fault
// into a model call:
//
//	status=<400-599>     answer that status with a provider-shaped error (429 adds Retry-After: 1); not billed
//	timeout              accept and never answer, parked on the request context at no CPU cost, until the
//	                     client goes away (or Listen's shutdown drops the connection); not billed
//	reset-mid-stream     stream: send half the output chunks, then break the connection with no terminal
//	                     event ([DONE], response.completed, message_stop); non-stream: half the body, then
//	                     break; billed in full
//	drop-after-success   compute and bill the full answer, then break the connection before sending any
//	                     of it: the provider charged, the client saw nothing; billed in full
//
// Any other spec is a 400. Breaking the connection panics with
// http.ErrAbortHandler, which net/http turns into a closed connection.
// Clients that retry (the official SDKs do by default) pay for each attempt.
//
// # Billing
//
// A model call is billed once its first token is due (after the time to
// first token): in full, even if the client leaves before the end. Prices
// come from Config.Prices: uncached prompt tokens at the input price, reads
// at the cached price, 5-minute and 30-minute writes at the write price,
// 1-hour writes at the 1-hour rate (2× input until the price table has its
// own), output at the output price. The bill keeps input_usd (all prompt
// tokens: uncached, reads and writes) and output_usd beside the total usd.
// A call whose client leaves before the first token is not billed.
package sim
