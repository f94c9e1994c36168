package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// prefixDiffRun runs `groundhog prefix-diff` on two bodies and returns its
// stdout, stderr and exit status.
func prefixDiffRun(t *testing.T, a, b string, flags ...string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(pa, []byte(a), 0o644)
	os.WriteFile(pb, []byte(b), 0o644)
	cmd := exec.Command(binary, append(append([]string{"prefix-diff"}, flags...), pa, pb)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func anthropicBody(system string, turns ...string) string {
	var msgs []map[string]any
	for i, u := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": u}}})
	}
	b, _ := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 256,
		"tools":    []any{map[string]any{"name": "search", "description": "Search the docs.", "input_schema": map[string]any{"type": "object"}}},
		"system":   []any{map[string]any{"type": "text", "text": system, "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": msgs,
	})
	return string(b)
}

func TestPrefixDiffCLI(t *testing.T) {
	sys := "You are a support agent for Acme. " + strings.Repeat("Be precise and kind. ", 300)
	a := anthropicBody("Today is 2026-12-01T09:00:00Z. "+sys, "Where is my order?")
	b := anthropicBody("Today is 2026-12-01T09:05:00Z. "+sys, "Where is my order?", "Checking.", "Thanks")

	// Divergence, JSON: exactly the contract's keys, the cause and the path.
	out, stderr, code := prefixDiffRun(t, a, b, "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d (stderr %q), want 1", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %q", out)
	}
	for _, k := range []string{"cause", "reusable_tokens", "path", "a", "b", "advice"} {
		if _, ok := got[k]; !ok {
			t.Fatalf("key %q missing in %s", k, out)
		}
	}
	if got["cause"] != "volatile_in_prefix" || got["path"] != "system[0].text" ||
		!strings.Contains(got["a"].(string), "09:00:00Z") || !strings.Contains(got["b"].(string), "09:05:00Z") ||
		!strings.Contains(got["advice"].(string), "iso_timestamp") {
		t.Fatalf("diff: %s", out)
	}
	if n := got["reusable_tokens"].(float64); n <= 0 || n > 100 {
		t.Fatalf("reusable_tokens %v: only the tool precedes the timestamp", n)
	}

	// Text: the same facts; not a terminal, so no escape codes.
	out, _, code = prefixDiffRun(t, a, b)
	if code != 1 || !strings.Contains(out, "volatile_in_prefix (iso_timestamp)") || !strings.Contains(out, "system[0].text") ||
		!strings.Contains(out, "fix:") || strings.Contains(out, "\x1b[") {
		t.Fatalf("text output (exit %d):\n%s", code, out)
	}

	// B continues A: the prefixes match.
	c := anthropicBody("Today is 2026-12-01T09:00:00Z. "+sys, "Where is my order?", "Checking.", "Thanks")
	out, _, code = prefixDiffRun(t, a, c, "--format", "json")
	if code != 0 || !strings.Contains(out, `"cause":""`) {
		t.Fatalf("matching prefixes: exit %d %s", code, out)
	}

	// Tools reordered, chat shape.
	tools := func(names ...string) string {
		var ts []string
		for _, n := range names {
			ts = append(ts, `{"type":"function","function":{"name":"`+n+`","parameters":{"type":"object"}}}`)
		}
		return `{"model":"gpt-5","tools":[` + strings.Join(ts, ",") + `],"messages":[{"role":"user","content":"hi"}]}`
	}
	out, _, code = prefixDiffRun(t, tools("a", "b"), tools("b", "a"), "--format", "json")
	if code != 1 || !strings.Contains(out, `"cause":"tools_reordered"`) || !strings.Contains(out, `"path":"tools[0].function.name"`) {
		t.Fatalf("tools reordered: exit %d %s", code, out)
	}

	// Bad input: exit 2 with a message.
	for _, bad := range [][2]string{{"{", a}, {a, "[1]"}, {`{"foo":1}`, a}} {
		_, stderr, code = prefixDiffRun(t, bad[0], bad[1])
		if code != 2 || !strings.Contains(stderr, "prefix-diff") {
			t.Fatalf("bad input %q: exit %d, stderr %q", bad[0], code, stderr)
		}
	}
	if _, _, code = prefixDiffRun(t, a, b, "--format", "yaml"); code != 2 {
		t.Fatalf("bad --format: exit %d", code)
	}
}
