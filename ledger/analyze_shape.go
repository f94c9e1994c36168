package ledger

import (
	"errors"
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// DefaultOperation is the operation of a line that names none, as the
// gateway names a call that carries no Groundhog-Operation header and
// matches no rule.
const DefaultOperation = "default"

// Analyze's groupings of the report rows (AnalyzeOptions.GroupBy).
const (
	GroupByOperation = "operation"
	GroupByTenant    = "tenant"
)

// errFiltered marks a line left out by AnalyzeOptions.Tenant: not an
// error, not a call.
var errFiltered = errors.New("ledger: line filtered out")

// shapeNames lists the accepted shape names, for error messages.
const shapeNames = "chat, responses, embeddings, messages (or openai.chat, openai.chat.completions, openai.responses, openai.embeddings, anthropic.messages)"

// shapeAliases maps the names logs use for an API to its shape: groundhog's
// own, the provider-qualified "provider.api" form, and the SDK resource
// names ("chat.completions").
var shapeAliases = map[string]groundhog.Shape{
	"chat":                    groundhog.ShapeChat,
	"chat.completions":        groundhog.ShapeChat,
	"chat_completions":        groundhog.ShapeChat,
	"openai.chat":             groundhog.ShapeChat,
	"openai.chat.completions": groundhog.ShapeChat,
	"openai.chat_completions": groundhog.ShapeChat,
	"responses":               groundhog.ShapeResponses,
	"openai.responses":        groundhog.ShapeResponses,
	"embeddings":              groundhog.ShapeEmbeddings,
	"openai.embeddings":       groundhog.ShapeEmbeddings,
	"messages":                groundhog.ShapeMessages,
	"anthropic.messages":      groundhog.ShapeMessages,
	"converse":                groundhog.ShapeConverse,
	"bedrock.converse":        groundhog.ShapeConverse,
}

// ParseShape reads an API shape as a log line or the --shape flag names
// it: chat, responses, embeddings or messages; the provider-qualified
// aliases openai.chat (also openai.chat.completions, chat.completions),
// openai.responses, openai.embeddings and anthropic.messages; or a route
// path ending in /chat/completions, /responses, /embeddings or /messages
// ("/v1/messages", "https://api.openai.com/v1/responses?x=1"). Case and
// surrounding spaces are ignored. ok is false for anything else.
func ParseShape(s string) (sh groundhog.Shape, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if sh, ok := shapeAliases[s]; ok {
		return sh, true
	}
	if strings.Contains(s, "/") {
		return shapeForPath(s)
	}
	return "", false
}
