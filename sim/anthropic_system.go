package sim

import (
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// AnthropicSystemMessages are the Anthropic model families (name prefixes)
// that accept mid-conversation system messages — {"role": "system"}
// entries in messages — as Anthropic documents them: Claude Opus 4.8 and
// the models after it. Another claude-* model answers such a message with
// a 400; the sim's own models (and any other name) accept it. As with
// ModelCacheLimits, change it only before any Server runs.
var AnthropicSystemMessages = []string{
	"claude-opus-4-8", "claude-opus-5", "claude-sonnet-5-5", "claude-haiku-5-5",
	"claude-fable-5", "claude-mythos-5",
}

// systemMessagesAllowed reports whether model takes mid-conversation
// system messages.
func systemMessagesAllowed(model string) bool {
	if !strings.HasPrefix(model, "claude-") {
		return true
	}
	for _, p := range AnthropicSystemMessages {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// checkSystemMessages enforces where a mid-conversation system message may
// stand: never first, right after a user message (or another system
// message that does), and last or followed by an assistant message. It
// adds an instruction at its place in the conversation, so the prompt
// before it — tools, the top-level system, the earlier turns — is
// unchanged and stays cached, where editing the top-level system would
// change the start of the prompt.
func checkSystemMessages(model string, msgs []anthropicMessage) error {
	for i, m := range msgs {
		if m.Role != "system" {
			continue
		}
		switch {
		case !systemMessagesAllowed(model):
			return groundhog.Errorf(groundhog.EINVALID, "messages.%d.role: system messages in messages are not supported by %s; use the top-level system field", i, model)
		case i == 0:
			return groundhog.Errorf(groundhog.EINVALID, "messages.0.role: the first message cannot be a system message; use the top-level system field")
		case msgs[i-1].Role == "assistant":
			return groundhog.Errorf(groundhog.EINVALID, "messages.%d: a system message must follow a user message", i)
		case i+1 < len(msgs) && msgs[i+1].Role == "user":
			return groundhog.Errorf(groundhog.EINVALID, "messages.%d: a system message must be the last message or be followed by an assistant message", i)
		}
	}
	return nil
}
