package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/groundhog-ai/groundhog"
)

// post sends body to base+path with headers and returns status, headers and body.
func post(t *testing.T, base, path, body string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

// errorShape returns the provider family the error body is shaped for and
// its error type, or fails.
func errorShape(t *testing.T, body []byte) (fam, typ, msg string) {
	t.Helper()
	var v struct {
		Type  *string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Error == nil || v.Error.Message == "" || v.Error.Type == "" {
		t.Fatalf("not a provider error body: %s", body)
	}
	if v.Type != nil && *v.Type == "error" {
		return "anthropic", v.Error.Type, v.Error.Message
	}
	return "openai", v.Error.Type, v.Error.Message
}

const (
	chatBody      = `{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`
	messagesBody  = `{"model":"sim-small","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	responsesBody = `{"model":"sim-small","input":"hi"}`
	embedBody     = `{"model":"sim-embed","input":"hi"}`
)

func TestErrors(t *testing.T) {
	s, base := startSim(t, Config{})
	for _, c := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		fam, typ, msgHas         string
	}{
		{"chat malformed", "POST", "/v1/chat/completions", `{"model":`, nil, 400, "openai", "invalid_request_error", "JSON"},
		{"chat not an object", "POST", "/v1/chat/completions", `[1]`, nil, 400, "openai", "invalid_request_error", "JSON"},
		{"chat missing model", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "openai", "invalid_request_error", "model"},
		{"chat missing messages", "POST", "/v1/chat/completions", `{"model":"m"}`, nil, 400, "openai", "invalid_request_error", "messages"},
		{"chat wrong type", "POST", "/v1/chat/completions", `{"model":"m","messages":"hi"}`, nil, 400, "openai", "invalid_request_error", "messages"},
		{"chat bad max_tokens", "POST", "/v1/chat/completions", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "openai", "invalid_request_error", "max_tokens"},
		{"chat unknown forced tool", "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"b"}}}`, nil, 400, "openai", "invalid_request_error", `"b"`},
		{"responses missing model", "POST", "/v1/responses", `{"input":"hi"}`, nil, 400, "openai", "invalid_request_error", "model"},
		{"responses missing input", "POST", "/v1/responses", `{"model":"m"}`, nil, 400, "openai", "invalid_request_error", "input"},
		{"responses previous id", "POST", "/v1/responses", `{"model":"m","input":"x","previous_response_id":"resp_1"}`, nil, 400, "openai", "invalid_request_error", "Previous response with id 'resp_1' not found."},
		{"embeddings empty input", "POST", "/v1/embeddings", `{"model":"m","input":""}`, nil, 400, "openai", "invalid_request_error", "input"},
		{"embeddings bad dims", "POST", "/v1/embeddings", `{"model":"m","input":"x","dimensions":0}`, nil, 400, "openai", "invalid_request_error", "dimensions"},
		{"embeddings bad format", "POST", "/v1/embeddings", `{"model":"m","input":"x","encoding_format":"hex"}`, nil, 400, "openai", "invalid_request_error", "encoding_format"},
		{"messages malformed", "POST", "/v1/messages", `{`, nil, 400, "anthropic", "invalid_request_error", "JSON"},
		{"messages missing model", "POST", "/v1/messages", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, nil, 400, "anthropic", "invalid_request_error", "model"},
		{"messages missing max_tokens", "POST", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, nil, 400, "anthropic", "invalid_request_error", "max_tokens"},
		{"messages bad role", "POST", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`, nil, 400, "anthropic", "invalid_request_error", "role"},
		{"messages too many breakpoints", "POST", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[` +
			strings.Repeat(`{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},`, 4) + `{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}]}]}`, nil, 400, "anthropic", "invalid_request_error", "maximum of 4"},
		{"unknown route", "POST", "/v1/completions", `{}`, nil, 404, "openai", "invalid_request_error", "/v1/completions"},
		{"unknown anthropic route", "GET", "/v1/files", ``, []string{"anthropic-version", "2023-06-01"}, 404, "anthropic", "not_found_error", "/v1/files"},
		{"wrong method", "GET", "/v1/chat/completions", ``, nil, 405, "openai", "invalid_request_error", "GET"},
		{"bad fault", "POST", "/v1/chat/completions", chatBody, []string{FaultHeader, "explode"}, 400, "openai", "invalid_request_error", "explode"},
		{"bad fault status", "POST", "/v1/messages", messagesBody, []string{FaultHeader, "status=200"}, 400, "anthropic", "invalid_request_error", "status=200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := s.Bill()
			req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
			for i := 0; i+1 < len(c.headers); i += 2 {
				req.Header.Set(c.headers[i], c.headers[i+1])
			}
			status, _, body := do(t, req)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			fam, typ, msg := errorShape(t, body)
			if fam != c.fam || typ != c.typ || !strings.Contains(msg, c.msgHas) {
				t.Fatalf("error %s/%s %q, want %s/%s containing %q", fam, typ, msg, c.fam, c.typ, c.msgHas)
			}
			checkNotBilled(t, s, before)
		})
	}
}

func TestBillEndpoints(t *testing.T) {
	s, base := startSim(t, Config{})
	if status, _, body := post(t, base, "/v1/chat/completions", chatBody); status != 200 {
		t.Fatalf("chat: %d %s", status, body)
	}
	want := s.Bill()
	if want.Calls != 1 || want.USD <= 0 {
		t.Fatalf("bill after one call = %+v", want)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/sim/v1/bill", nil)
	status, _, body := do(t, req)
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); status != 200 || err != nil {
		t.Fatalf("GET bill: %d %s", status, body)
	}
	if usd, ok := raw["usd"].(string); !ok || usd != want.USD.String() || raw["calls"] != 1.0 {
		t.Fatalf("bill JSON %s, want usd %q", body, want.USD.String())
	}
	var got Bill
	if err := json.Unmarshal(body, &got); err != nil || got.Calls != want.Calls || got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens {
		t.Fatalf("decoded bill %+v (%v), want %+v", got, err, want)
	}
	// Reset returns the old bill and zeroes it.
	status, _, body = post(t, base, "/sim/v1/bill/reset", "")
	if err := json.Unmarshal(body, &got); status != 200 || err != nil || got.Calls != 1 {
		t.Fatalf("reset: %d %s", status, body)
	}
	if b := s.Bill(); b != (Bill{}) {
		t.Fatalf("bill after reset = %+v", b)
	}
}

func TestUnknownModelPricedAsSimSmall(t *testing.T) {
	s, base := startSim(t, Config{})
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"price me"}]}`
	}
	post(t, base, "/v1/chat/completions", body("sim-small"))
	small := s.ResetBill()
	post(t, base, "/v1/chat/completions", body("no-such-model"))
	unknown := s.ResetBill()
	// Different model, different text, so compare the price per token.
	p, _ := s.prices.Lookup("sim-small")
	for _, b := range []Bill{small, unknown} {
		if b.USD != groundhog.Money(b.InputTokens*p.Input+b.OutputTokens*p.Output) {
			t.Fatalf("bill %+v not priced as sim-small", b)
		}
	}
}

// calls is one model call per API, for the fault tests.
var faultCalls = []struct {
	name, path, body string
	fam              string
}{
	{"chat", "/v1/chat/completions", chatBody, "openai"},
	{"responses", "/v1/responses", responsesBody, "openai"},
	{"embeddings", "/v1/embeddings", embedBody, "openai"},
	{"messages", "/v1/messages", messagesBody, "anthropic"},
}

func TestFaultStatus(t *testing.T) {
	s, base := startSim(t, Config{})
	for _, status := range []int{400, 429, 500, 503, 529} {
		for _, c := range faultCalls {
			t.Run(c.name+"/"+http.StatusText(status), func(t *testing.T) {
				before := s.Bill()
				got, h, body := post(t, base, c.path, c.body, FaultHeader, "status="+itoa(status))
				if got != status {
					t.Fatalf("status %d, want %d", got, status)
				}
				if fam, _, _ := errorShape(t, body); fam != c.fam {
					t.Fatalf("%s-shaped error for %s: %s", fam, c.fam, body)
				}
				if (h.Get("Retry-After") != "") != (status == 429) {
					t.Fatalf("Retry-After %q with status %d", h.Get("Retry-After"), status)
				}
				checkNotBilled(t, s, before)
			})
		}
	}
	// The SDKs see the status as an API error.
	_, err := openaiClient(base, option.WithHeader(FaultHeader, "status=503")).Chat.Completions.New(context.Background(),
		openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != 503 || oerr.Type != "server_error" {
		t.Fatalf("openai SDK error = %v", err)
	}
	_, err = anthropicClient(base, aoption.WithHeader(FaultHeader, "status=529")).Messages.New(context.Background(),
		anthropic.MessageNewParams{Model: "m", MaxTokens: 5, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}})
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 529 || !strings.Contains(aerr.RawJSON(), "overloaded_error") {
		t.Fatalf("anthropic SDK error = %v", err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestConfigFault(t *testing.T) {
	s, base := startSim(t, Config{Fault: "status=503"})
	if status, _, _ := post(t, base, "/v1/chat/completions", chatBody); status != 503 {
		t.Fatalf("Config.Fault: status %d, want 503", status)
	}
	if status, _, body := post(t, base, "/v1/chat/completions", chatBody, FaultHeader, "none"); status != 200 {
		t.Fatalf("Sim-Fault: none must override Config.Fault: %d %s", status, body)
	}
	// Faults apply to model calls only.
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/models", nil)
	if status, _, _ := do(t, req); status != 200 {
		t.Fatalf("models with Config.Fault: %d", status)
	}
	if s.Bill().Calls != 1 {
		t.Fatalf("bill = %+v, want the one un-faulted call", s.Bill())
	}
	for spec, ok := range map[string]bool{"": true, "none": true, "timeout": true, "status=429": true,
		"reset-mid-stream": true, "drop-after-success": true, "status=600": false, "status=": false, "slow": false} {
		if err := CheckFault(spec); (err == nil) != ok {
			t.Errorf("CheckFault(%q) = %v", spec, err)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("New accepted an invalid Config.Fault")
			}
		}()
		New(Config{Fault: "sometimes"})
	}()
}

func TestFaultTimeout(t *testing.T) {
	s := New(Config{})
	hung := make(chan struct{}, 1)
	s.onHang = func() { hung <- struct{}{} }
	base := serve(t, s)
	client := openaiClient(base, option.WithHeader(FaultHeader, "timeout"))
	for _, stream := range []bool{false, true} {
		before := s.Bill()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}}
		var err error
		if stream {
			st := client.Chat.Completions.NewStreaming(ctx, params)
			for st.Next() {
			}
			err = st.Err()
		} else {
			_, err = client.Chat.Completions.New(ctx, params)
		}
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stream=%v: err = %v, want the client's deadline", stream, err)
		}
		<-hung // the request did reach the sim and hung there
		// The hung handler notices the client is gone and returns.
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := s.WaitIdle(wctx); err != nil {
			t.Fatalf("stream=%v: a handler still runs after the client left (%d in flight)", stream, s.InFlight())
		}
		wcancel()
		checkNotBilled(t, s, before)
	}

	// Shutdown releases a request hung with no client deadline.
	s2 := New(Config{Fault: "timeout"})
	s2.onHang = func() { hung <- struct{}{} }
	base2, shutdown, err := s2.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		res, err := http.Post(base2+"/v1/chat/completions", "application/json", strings.NewReader(chatBody))
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	<-hung
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a hung request: %v", err)
	}
	if err := <-errc; err == nil {
		t.Fatal("released hung request got a response, want a dropped connection")
	}
}

func TestFaultResetMidStream(t *testing.T) {
	s, base := startSim(t, Config{})
	ctx := context.Background()
	const model = "sim-small"

	t.Run("chat stream", func(t *testing.T) {
		before := s.Bill()
		st := openaiClient(base, option.WithHeader(FaultHeader, "reset-mid-stream")).Chat.Completions.NewStreaming(ctx,
			openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		chunks, finished := 0, false
		for st.Next() {
			chunks++
			if c := st.Current(); len(c.Choices) > 0 && c.Choices[0].FinishReason != "" {
				finished = true
			}
		}
		if st.Err() == nil || chunks < 2 || finished {
			t.Fatalf("err %v after %d chunks (finished %v): want an error after some content, before the end", st.Err(), chunks, finished)
		}
		if b := s.Bill(); b.Calls != before.Calls+1 || b.OutputTokens <= before.OutputTokens {
			t.Fatalf("reset stream not billed: %+v -> %+v", before, b)
		}
	})

	t.Run("chat stream raw", func(t *testing.T) {
		// On the wire: some data events, no [DONE], a broken chunked body.
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
		req.Header.Set(FaultHeader, "reset-mid-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err == nil || !strings.Contains(string(body), "data: {") || strings.Contains(string(body), "[DONE]") {
			t.Fatalf("read err %v, body %q", err, body)
		}
	})

	t.Run("responses stream", func(t *testing.T) {
		st := openaiClient(base, option.WithHeader(FaultHeader, "reset-mid-stream")).Responses.NewStreaming(ctx,
			responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("x")}})
		n, completed := 0, false
		for st.Next() {
			n++
			completed = completed || st.Current().Type == "response.completed"
		}
		if st.Err() == nil || n == 0 || completed {
			t.Fatalf("err %v after %d events (completed %v)", st.Err(), n, completed)
		}
	})

	t.Run("messages stream", func(t *testing.T) {
		before := s.Bill()
		st := anthropicClient(base, aoption.WithHeader(FaultHeader, "reset-mid-stream")).Messages.NewStreaming(ctx,
			anthropic.MessageNewParams{Model: model, MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}})
		var types []string
		for st.Next() {
			types = append(types, st.Current().Type)
		}
		joined := strings.Join(types, ",")
		if st.Err() == nil || !strings.Contains(joined, "content_block_delta") || strings.Contains(joined, "message_stop") {
			t.Fatalf("err %v after events %v", st.Err(), types)
		}
		if b := s.Bill(); b.Calls != before.Calls+1 {
			t.Fatalf("reset stream not billed")
		}
	})

	t.Run("non-stream", func(t *testing.T) {
		before := s.Bill()
		_, err := openaiClient(base, option.WithHeader(FaultHeader, "reset-mid-stream")).Chat.Completions.New(ctx,
			openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
		if err == nil {
			t.Fatal("half a body parsed as a completion")
		}
		if b := s.Bill(); b.Calls != before.Calls+1 {
			t.Fatalf("reset call not billed")
		}
	})
}

func TestFaultDropAfterSuccess(t *testing.T) {
	s, base := startSim(t, Config{})
	ctx := context.Background()
	// The call the provider charges for: the same request without the fault.
	params := openai.ChatCompletionNewParams{Model: "sim-large", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("expensive")}}
	ok, err := openaiClient(base).Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	u := groundhog.Usage{InputTokens: ok.Usage.PromptTokens, OutputTokens: ok.Usage.CompletionTokens}
	for _, stream := range []bool{false, true} {
		before := s.Bill()
		client := openaiClient(base, option.WithHeader(FaultHeader, "drop-after-success"))
		if stream {
			st := client.Chat.Completions.NewStreaming(ctx, params)
			n := 0
			for st.Next() {
				n++
			}
			err = st.Err()
			if n != 0 {
				t.Fatalf("stream delivered %d chunks", n)
			}
		} else {
			_, err = client.Chat.Completions.New(ctx, params)
		}
		var apiErr *openai.Error
		if err == nil || errors.As(err, &apiErr) {
			t.Fatalf("stream=%v: err = %v, want a transport error", stream, err)
		}
		checkBilled(t, s, before, "sim-large", u)
	}
	// Anthropic too.
	before := s.Bill()
	_, err = anthropicClient(base, aoption.WithHeader(FaultHeader, "drop-after-success")).Messages.New(ctx,
		anthropic.MessageNewParams{Model: "sim-small", MaxTokens: 100, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))}})
	if err == nil {
		t.Fatal("anthropic: dropped response parsed")
	}
	if b := s.Bill(); b.Calls != before.Calls+1 {
		t.Fatal("anthropic drop-after-success not billed")
	}
}

// TestDropAfterSuccessTransportRetry pins a hazard for whoever proxies to a
// provider with net/http: a POST carrying an Idempotency-Key header is
// "replayable", so when a reused connection breaks before any response byte
// the Transport silently sends it again. The provider bills both attempts.
func TestDropAfterSuccessTransportRetry(t *testing.T) {
	s, base := startSim(t, Config{})
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	send := func(headers ...string) error {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(chatBody))
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		return err
	}
	for _, c := range []struct {
		name    string
		headers []string
		billed  int64
	}{
		{"plain POST", []string{FaultHeader, "drop-after-success"}, 1},
		{"with Idempotency-Key", []string{FaultHeader, "drop-after-success", "Idempotency-Key", "k1"}, 2},
	} {
		if err := send(); err != nil { // leaves a reused, idle connection
			t.Fatal(err)
		}
		before := s.Bill()
		if err := send(c.headers...); err == nil {
			t.Fatalf("%s: dropped call succeeded", c.name)
		}
		if got := s.Bill().Calls - before.Calls; got != c.billed {
			t.Fatalf("%s: billed %d calls, want %d", c.name, got, c.billed)
		}
	}
}
