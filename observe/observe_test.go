package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/groundhog-ai/groundhog/cache"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/ledger"
	"github.com/groundhog-ai/groundhog/metrics"
	"github.com/groundhog-ai/groundhog/observe"
	"github.com/groundhog-ai/groundhog/sim"
	"github.com/groundhog-ai/groundhog/sqlite"
)

const (
	secretPrompt = "the launch code is PROMPT-SECRET-7731"
	providerKey  = "sk-PROVIDER-SECRET-0042"
)

// A real gateway in front of the sim (behind a proxy that checks for the
// provider key), observed by a Recorder with a JSON logger and an
// in-memory span exporter; the official SDK makes a miss and a hit.
func TestOneLineAndOneSpanPerCallNoSecrets(t *testing.T) {
	ctx := context.Background()
	s := sim.New(sim.Config{})
	simURL, stop, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop(ctx)
	keyed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+providerKey {
			http.Error(w, "no provider key", 401)
			return
		}
		r.Header.Del("Authorization")
		res, err := http.DefaultTransport.RoundTrip(rewrite(r, simURL))
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
	}))
	defer keyed.Close()

	cfg := config.Default()
	cfg.DB = filepath.Join(t.TempDir(), "g.db")
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, cfg.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, _ := cache.New(cache.Options{Store: db, MaxBytes: 1 << 20})
	lw, err := ledger.OpenWriter(ctx, db, ledger.WriterOptions{JournalDir: cfg.DB + ".journal"})
	if err != nil {
		t.Fatal(err)
	}
	defer lw.Close(ctx)
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	exp := tracetest.NewInMemoryExporter()
	tp := observe.NewProvider(sdktrace.WithSyncer(exp), "test")
	rec := &observe.Recorder{Next: lw, Metrics: metrics.New(nil), Log: log, Tracer: tp.Tracer("test")}
	up := gateway.Upstream{BaseURL: keyed.URL + "/v1", APIKey: providerKey, Provider: "openai"}
	gw := gateway.New(gateway.Options{Config: &cfg, Keys: db, Cache: c, Ledger: rec, OpenAI: up, Anthropic: up, Logger: log, Keyless: true})
	srv := httptest.NewServer(gw)
	defer srv.Close()

	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("gh-client-key"), option.WithHeader("Groundhog-Cache", "use"),
		option.WithHeader("Groundhog-Operation", "triage"))
	params := openai.ChatCompletionNewParams{Model: "sim-small", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(secretPrompt)}}
	for i := 0; i < 2; i++ {
		if _, err := client.Chat.Completions.New(ctx, params); err != nil {
			t.Fatal(err)
		}
	}

	all := exp.GetSpans()
	var spans tracetest.SpanStubs
	children := map[string][]string{} // parent span id → child names
	for _, sp := range all {
		if sp.Parent.IsValid() {
			children[sp.Parent.SpanID().String()] = append(children[sp.Parent.SpanID().String()], sp.Name)
			continue
		}
		spans = append(spans, sp)
	}
	if len(spans) != 2 {
		t.Fatalf("%d call spans, want one per call (2)", len(spans))
	}
	// The miss went admit → cache → upstream; the hit admit → cache.
	wantStages := [][]string{{"groundhog.admit", "groundhog.cache", "groundhog.upstream"}, {"groundhog.admit", "groundhog.cache"}}
	for i, sp := range spans {
		got := strings.Join(children[sp.SpanContext.SpanID().String()], ",")
		if want := strings.Join(wantStages[i], ","); got != want {
			t.Errorf("call %d stage spans %q, want %q", i, got, want)
		}
	}
	wantOutcome := []string{"upstream", "cache_hit"}
	for i, sp := range spans {
		if sp.Name != "chat sim-small" {
			t.Errorf("span name %q, want \"chat sim-small\"", sp.Name)
		}
		a := attrs(sp.Attributes)
		if a["gen_ai.system"] != "openai" || a["gen_ai.request.model"] != "sim-small" || a["gen_ai.operation.name"] != "chat" ||
			a["groundhog.outcome"] != wantOutcome[i] || a["groundhog.operation"] != "triage" || !strings.HasPrefix(a["groundhog.request_hash"], "sha256:") {
			t.Errorf("span %d attributes %v", i, a)
		}
		if i == 0 && (a["gen_ai.usage.input_tokens"] == "0" || a["gen_ai.usage.output_tokens"] == "0") {
			t.Errorf("the upstream span has no usage: %v", a)
		}
		if !sp.EndTime.After(sp.StartTime) {
			t.Errorf("span %d does not cover the call: %v → %v", i, sp.StartTime, sp.EndTime)
		}
		for _, kv := range sp.Attributes {
			v := kv.Value.Emit()
			if strings.Contains(v, "PROMPT-SECRET") || strings.Contains(v, "SECRET-0042") || strings.Contains(v, "gh-client-key") {
				t.Errorf("span attribute %s leaks a secret: %q", kv.Key, v)
			}
		}
	}

	var calls int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "PROMPT-SECRET") || strings.Contains(line, "SECRET-0042") || strings.Contains(line, "gh-client-key") {
			t.Errorf("log line leaks a secret: %s", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if m["msg"] == "call" {
			calls++
			for _, k := range []string{"tenant", "operation", "hash", "outcome", "status", "input_tokens", "output_tokens", "cost_usd", "latency_ms", "attempt"} {
				if _, ok := m[k]; !ok {
					t.Errorf("access line lacks %q: %s", k, line)
				}
			}
		}
	}
	if calls != 2 {
		t.Fatalf("%d access lines, want 2:\n%s", calls, logs.String())
	}
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func rewrite(r *http.Request, base string) *http.Request {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	u := *r.URL
	b, _ := http.NewRequest(r.Method, base, nil)
	u.Scheme, u.Host = b.URL.Scheme, b.URL.Host
	out.URL = &u
	out.Host = b.URL.Host
	return out
}

// A refused OTLP endpoint is named without the password it may carry.
func TestOTLPEndpointErrorHidesPassword(t *testing.T) {
	for in, want := range map[string]string{
		"ftp://otel:OTLPPW@collector:4318": `otlp endpoint "ftp://otel:xxxxx@collector:4318"`,
		"http://otel:OTLPPW@:bad":          `otlp endpoint "http://otel:xxxxx@:bad"`, // does not parse
	} {
		_, _, err := observe.OTLP(context.Background(), in, "test")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "OTLPPW") {
			t.Errorf("OTLP(%q) = %v, want %s and no password", in, err, want)
		}
	}
}
