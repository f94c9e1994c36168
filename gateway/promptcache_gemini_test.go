package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/groundhog-ai/groundhog/ledger"
)

// geminiTurn is one request of a Gemini agent loop, as the genai SDK sends
// it: tools (one function declaration per name, unless none), toolConfig
// mode (unless ""), the system instruction and n user turns with the
// model's answers between them (edit, when set, replaces the text of user
// turn 2).
type geminiTurn struct {
	model  string
	tools  []string
	mode   string
	system string
	n      int
	edit   string
}

func (g geminiTurn) request(op string) ([]*genai.Content, *genai.GenerateContentConfig) {
	cfg := &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText(g.system, genai.RoleUser),
		HTTPOptions: &genai.HTTPOptions{Headers: http.Header{
			"Groundhog-Operation": {op},
			// Gemini has no cache markers: asking for them changes nothing.
			"Groundhog-Prompt-Cache-Breakpoints": {"auto"},
		}},
	}
	if len(g.tools) > 0 {
		var decls []*genai.FunctionDeclaration
		for _, name := range g.tools {
			decls = append(decls, &genai.FunctionDeclaration{Name: name, Description: "Use " + name + ".",
				Parameters: &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"id": {Type: genai.TypeString}}}})
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	if g.mode != "" {
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigMode(g.mode)}}
	}
	var contents []*genai.Content
	for k := 1; k <= g.n; k++ {
		text := fmt.Sprintf("Step %d: check shipment %d. ", k, k) + words(150, "step")
		if k == 2 && g.edit != "" {
			text = g.edit
		}
		contents = append(contents, genai.NewContentFromText(text, genai.RoleUser))
		if k < g.n {
			contents = append(contents, genai.NewContentFromText(fmt.Sprintf("Shipment %d is on its way. ", k)+words(100, "answer"), genai.RoleModel))
		}
	}
	return contents, cfg
}

// A multi-turn Gemini agent loop through the gateway against the simulated
// provider, one operation per kind of change: each is warmed up for three
// turns, then its fourth turn changes one thing. groundhog names the cause
// in Groundhog-Prompt-Cache-Break and in the ledger, the provider's
// cachedContentTokenCount drops exactly where groundhog says a break
// happened (and nowhere else), the report's breaks by cause hold the same
// calls and lost tokens, and Groundhog-Prompt-Cache-Breakpoints: auto
// sends every body upstream as the client wrote it.
func TestGeminiPromptCacheBreakAgreement(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	h := newHarness(t, func(s *setup) {
		s.tap = func(path string, body []byte) {
			if strings.Contains(path, ":generateContent") {
				mu.Lock()
				sent = append(sent, string(body))
				mu.Unlock()
			}
		}
	})
	cl := geminiClient(t, h, "k", nil)
	system := "You are the logistics agent. " + words(1500, "rule")
	base := geminiTurn{model: geminiModel, tools: []string{"lookup", "refund"}, mode: "AUTO", system: system}
	cases := []struct {
		op    string
		edit  func(g geminiTurn) geminiTurn
		cause string
	}{
		{"stable", func(g geminiTurn) geminiTurn { return g }, ""},
		{"tools", func(g geminiTurn) geminiTurn { g.tools = []string{"lookup", "refund_v2"}; return g }, "tools_changed"},
		{"tools-order", func(g geminiTurn) geminiTurn { g.tools = []string{"refund", "lookup"}; return g }, "tools_reordered"},
		{"instructions", func(g geminiTurn) geminiTurn { g.system = "You are the friendly logistics agent. " + system; return g }, "instructions_changed"},
		{"volatile", func(g geminiTurn) geminiTurn { g.system = "Now: 2026-12-05T09:00:30Z. " + system; return g }, "volatile_in_prefix"},
		{"model", func(g geminiTurn) geminiTurn { g.model = "gemini-2.5-flash-lite"; return g }, "model_changed"},
		{"history", func(g geminiTurn) geminiTurn {
			g.edit = "Step 2, edited: check shipment 22. " + words(150, "step")
			return g
		}, "history_edited"},
		// The simulator does not key its implicit cache on toolConfig: the
		// prefix the provider keeps is read in full, and groundhog, which
		// reports a break only when the provider read less, names none.
		{"tool-config", func(g geminiTurn) geminiTurn { g.mode = "ANY"; return g }, ""},
	}
	type row struct {
		op, cause      string
		before, after  int32
		lost           int64
		dropped, agree bool
	}
	var rows []row
	lostByCause := map[string]int64{}
	callsByCause := map[string]int64{}
	ctx := context.Background()
	for _, c := range cases {
		warm := base
		if c.op == "volatile" {
			warm.system = "Now: 2026-12-05T09:00:00Z. " + system
		}
		var before, prompt int32
		for n := 1; n <= 3; n++ {
			w := warm
			w.n = n
			contents, cfg := w.request(c.op)
			res, err := cl.Models.GenerateContent(ctx, w.model, contents, cfg)
			if err != nil {
				t.Fatalf("%s turn %d: %v", c.op, n, err)
			}
			if b := geminiHeader(res, "Groundhog-Prompt-Cache-Break"); b != "" {
				t.Fatalf("%s warm-up turn %d: break %q", c.op, n, b)
			}
			if got, want := geminiHeader(res, "Groundhog-Prompt-Cache"), fmt.Sprintf("read=%d write=0", res.UsageMetadata.CachedContentTokenCount); got != want {
				t.Fatalf("%s turn %d: Groundhog-Prompt-Cache %q, want %q", c.op, n, got, want)
			}
			before, prompt = res.UsageMetadata.CachedContentTokenCount, res.UsageMetadata.PromptTokenCount
		}
		if before == 0 {
			t.Fatalf("%s: the provider read nothing on the third turn", c.op)
		}
		turn := c.edit(warm)
		turn.n = 4
		contents, cfg := turn.request(c.op)
		res, err := cl.Models.GenerateContent(ctx, turn.model, contents, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		after := res.UsageMetadata.CachedContentTokenCount
		cause := geminiHeader(res, "Groundhog-Prompt-Cache-Break")
		var lost int64
		for _, r := range h.ledgerRows() {
			if r.RequestHash == geminiHeader(res, "Groundhog-Request-Hash") {
				if r.PromptCacheBreak != cause {
					t.Errorf("%s: ledger cause %q, header %q", c.op, r.PromptCacheBreak, cause)
				}
				lost = r.PromptCacheLostTokens
			}
		}
		// A break means the provider read less than the turn before; no
		// break, that it read at least as much.
		dropped := after < before
		r := row{op: c.op, cause: cause, before: before, after: after, lost: lost, dropped: dropped, agree: dropped == (cause != "")}
		rows = append(rows, r)
		if cause != c.cause {
			t.Errorf("%s: groundhog names %q, want %q (read %d, then %d)", c.op, cause, c.cause, before, after)
		}
		if !r.agree {
			t.Errorf("%s: groundhog says break %q, the provider's read went %d → %d", c.op, cause, before, after)
		}
		if cause != "" {
			// At most the whole earlier prompt can be lost.
			if lost <= 0 || lost > int64(prompt) {
				t.Errorf("%s: %d tokens lost, the turn before was %d tokens", c.op, lost, prompt)
			}
			lostByCause[cause] += lost
			callsByCause[cause]++
		}
	}
	mu.Lock()
	for i, b := range sent {
		if strings.Contains(b, "cache_control") || strings.Contains(b, "cachePoint") || strings.Contains(b, "prompt_cache") {
			t.Errorf("upstream body %d carries a cache marker: %.200s", i, b)
		}
	}
	if len(sent) != 4*len(cases) {
		t.Errorf("%d bodies sent upstream, want %d", len(sent), 4*len(cases))
	}
	mu.Unlock()

	if err := h.Ledger.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := ledger.BuildReport(ctx, h.DB, ledger.ReportParams{Day: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, b := range rep.Total.PromptCache.Breaks {
		got[b.Cause] = true
		if b.Calls != callsByCause[b.Cause] || b.UncachedTokens != lostByCause[b.Cause] {
			t.Errorf("report break %s: %d calls, %d tokens; the calls say %d, %d", b.Cause, b.Calls, b.UncachedTokens, callsByCause[b.Cause], lostByCause[b.Cause])
		}
	}
	for cause := range callsByCause {
		if !got[cause] {
			t.Errorf("report has no %s break", cause)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].op < rows[j].op })
	var b strings.Builder
	fmt.Fprintf(&b, "agreement with the simulated provider's cachedContentTokenCount (Gemini)\n%-13s %-22s %8s %8s %8s %7s\n", "change", "groundhog cause", "read", "then", "lost", "agrees")
	for _, r := range rows {
		cause := r.cause
		if cause == "" {
			cause = "(no break)"
		}
		fmt.Fprintf(&b, "%-13s %-22s %8d %8d %8d %7v\n", r.op, cause, r.before, r.after, r.lost, r.agree)
	}
	t.Log(b.String())
}
