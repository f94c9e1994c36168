package promptcache

import (
	"context"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/sim"
)

// groundhog's estimate of each Anthropic model's minimum cacheable prefix
// is the minimum the simulated provider enforces for it.
func TestMinTokensTableMatchesProvider(t *testing.T) {
	for prefix, want := range sim.AnthropicMinimums {
		model := prefix + "-20260101"
		if got := ModelRules(groundhog.ShapeMessages, model).MinTokens; got != want {
			t.Errorf("%s: groundhog's minimum %d, the provider's %d", model, got, want)
		}
	}
}

// prompt_cache.min_tokens overrides the table, the longest matching model
// prefix winning: a ~1,500-token system prompt is marked for a model whose
// minimum is 1,024 and left alone when the minimum is raised to 4,096.
func TestMinTokensOverride(t *testing.T) {
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":10,"system":"` + strings.Repeat("rule ", 1500) +
		`","messages":[{"role":"user","content":"first"},{"role":"assistant","content":"ok"},{"role":"user","content":"second"}]}`)
	for _, tc := range []struct {
		name      string
		overrides map[string]int
		marked    bool
	}{
		{"table", nil, true},
		{"raised", map[string]int{"claude-sonnet-4-5": 4096}, false},
		{"longest prefix wins", map[string]int{"claude-sonnet": 4096, "claude-sonnet-4-5": 1024}, true},
		{"other model", map[string]int{"claude-opus": 4096}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(Config{MinTokens: tc.overrides, Clock: newClock()})
			c, err := tr.Before(context.Background(), &Request{Tenant: "t", Operation: "o", Shape: groundhog.ShapeMessages, Body: body, Breakpoints: true})
			if err != nil {
				t.Fatal(err)
			}
			if marked := c.Injected > 0; marked != tc.marked {
				t.Errorf("injected %d breakpoints, want marked=%v", c.Injected, tc.marked)
			}
		})
	}
}
