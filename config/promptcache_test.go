package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPromptCacheConfig(t *testing.T) {
	load := func(yaml string) (Config, error) {
		file := filepath.Join(t.TempDir(), "g.yaml")
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		c := Default()
		if err := c.LoadFile(file); err != nil {
			return c, err
		}
		return c, c.Finish()
	}
	c, err := load(`
operations:
  support:
    prompt_cache: {breakpoints: auto, app: acme-support, prompt_version: v3}
prompt_cache:
  max_chains: 500
  min_tokens: {claude-sonnet-4-6: 4096}
`)
	if err != nil {
		t.Fatal(err)
	}
	if pc := c.Operations["support"].PromptCache; pc != (OperationPromptCache{Breakpoints: "auto", App: "acme-support", PromptVersion: "v3"}) {
		t.Errorf("operation prompt_cache %+v", pc)
	}
	if c.PromptCache.MaxChains != 500 || c.PromptCache.FanOutMaxHold != 10*time.Second {
		t.Errorf("prompt_cache %+v: want max_chains 500 and the default 10s hold", c.PromptCache)
	}
	if n := c.PromptCache.MinTokens["claude-sonnet-4-6"]; n != 4096 {
		t.Errorf("prompt_cache.min_tokens[claude-sonnet-4-6] = %d, want 4096", n)
	}
	for yaml, want := range map[string]string{
		"operations: {a: {prompt_cache: {breakpoints: always}}}": "breakpoints",
		"operations: {a: {prompt_cache: {app: \"a b\"}}}":        "app and prompt_version",
		"prompt_cache: {max_chains: -1}":                         "must not be negative",
		"prompt_cache: {fan_out: 3}":                             "fan_out",
		"prompt_cache: {min_tokens: {claude: 0}}":                "min_tokens",
		"prompt_cache: {min_tokens: {\"\": 1024}}":               "min_tokens",
	} {
		if _, err := load(yaml); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", yaml, err, want)
		}
	}
}

func TestExplicitCacheConfig(t *testing.T) {
	load := func(yaml string) (Config, error) {
		file := filepath.Join(t.TempDir(), "g.yaml")
		if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		c := Default()
		if err := c.LoadFile(file); err != nil {
			return c, err
		}
		return c, c.Finish()
	}
	c, err := load("operations: {docs: {}, chat: {prompt_cache: {explicit: auto}}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.ExplicitCache("docs") || c.ExplicitCache("default") || !c.ExplicitCache("chat") {
		t.Errorf("off by default, auto for chat: docs %v default %v chat %v", c.ExplicitCache("docs"), c.ExplicitCache("default"), c.ExplicitCache("chat"))
	}
	if pc := c.PromptCache; pc.ExplicitTTL != 10*time.Minute || pc.ExplicitWindow != 10*time.Minute || pc.ExplicitMinUses != 3 {
		t.Errorf("explicit defaults %+v", pc)
	}
	c, err = load("prompt_cache: {explicit: auto, explicit_ttl: 30m}\noperations: {batch: {prompt_cache: {explicit: \"off\"}}}\n")
	if err != nil {
		t.Fatal(err)
	}
	if !c.ExplicitCache("default") || c.ExplicitCache("batch") || c.PromptCache.ExplicitTTL != 30*time.Minute {
		t.Errorf("global auto, batch off: default %v batch %v ttl %v", c.ExplicitCache("default"), c.ExplicitCache("batch"), c.PromptCache.ExplicitTTL)
	}
	for yaml, want := range map[string]string{
		"prompt_cache: {explicit: on}":                        "prompt_cache.explicit",
		"operations: {a: {prompt_cache: {explicit: always}}}": "operations.a.prompt_cache.explicit",
		"prompt_cache: {explicit_ttl: 10s}":                   "explicit_ttl",
		"prompt_cache: {explicit_min_uses: 1}":                "explicit_min_uses",
		"prompt_cache: {explicit_window: -1m}":                "explicit_window",
	} {
		if _, err := load(yaml); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", yaml, err, want)
		}
	}
}
