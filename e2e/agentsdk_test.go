package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// agentsSDKDir prepares the pinned OpenAI Agents SDK (JS) of
// testdata/agents-sdk.
func agentsSDKDir(t *testing.T) string {
	return npmDir(t, "agents-sdk", "the OpenAI Agents SDK", "agent.mjs", filepath.Join("@openai", "agents"))
}

// npmDir prepares the pinned Node project of testdata/NAME (its
// package.json, package-lock.json and script) in a cache directory the test
// owns, installing it with `npm ci` when the lock file changed or pkg (a
// package under node_modules) is not installed yet. Without node or npm,
// or when npm cannot install, the test is skipped — a failure under
// GROUNDHOG_TEST_REQUIRE_SERVICES=1. what names the project in messages.
func npmDir(t *testing.T, name, what, script, pkg string) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("GROUNDHOG_TEST_REQUIRE_SERVICES") == "1" {
				t.Fatalf("%s is required for the test of %s (GROUNDHOG_TEST_REQUIRE_SERVICES=1)", tool, what)
			}
			t.Skipf("%s not on PATH: skipping the test of %s", tool, what)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "groundhog-test", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("testdata", name)
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	installed, _ := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	_, statErr := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json"))
	for _, f := range []string{"package.json", "package-lock.json", script} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if statErr == nil && bytes.Equal(installed, lock) {
		return dir
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--silent")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("GROUNDHOG_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
		t.Skipf("npm ci could not install %s (registry unreachable?): %v\n%s", what, err, out)
	}
	return dir
}

// TestOpenAIAgentsSDKStreamsThroughGroundhog drives the Node OpenAI Agents
// SDK (pinned in testdata/agents-sdk) in streaming mode through a started
// gateway, on the Responses API: the agent calls its tool, gets the tool's
// output, and ends with a text answer; the SDK validates every streamed
// event and usage object strictly, so a field of the wrong shape fails the
// run. The report then counts the agent's two model calls.
func TestOpenAIAgentsSDKStreamsThroughGroundhog(t *testing.T) {
	dir := agentsSDKDir(t)
	gw := start(t, nil, "serve", "--db", filepath.Join(t.TempDir(), "g.db"))
	cmd := exec.Command("node", "agent.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GROUNDHOG_URL="+gw.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the agent run failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		Events int      `json:"events"`
		Items  []string `json:"items"`
		Final  string   `json:"final"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
		t.Fatalf("agent output %q: %v", out, err)
	}
	items := strings.Join(got.Items, ",")
	if got.Events == 0 || !strings.Contains(items, "tool_call_item") ||
		!strings.Contains(items, "tool_call_output_item") || got.Final == "" {
		t.Fatalf("want streamed events, a tool call, its output and a final answer; got %+v", got)
	}

	res, err := http.Get(gw.URL + "/groundhog/v1/report?day=today")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var rep struct {
		Operations []struct {
			Operation string `json:"operation"`
			Calls     int    `json:"calls"`
		} `json:"operations"`
	}
	if err := json.NewDecoder(res.Body).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	calls := -1
	for _, o := range rep.Operations {
		if o.Operation == "agents-sdk" {
			calls = o.Calls
		}
	}
	if calls != 2 {
		t.Fatalf("report: %d calls for operation agents-sdk, want 2 (the tool call turn and the answer)", calls)
	}
}
