package gateway_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/internal/httpguard"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

// Attacks from outside on the Bedrock surface: Converse, ConverseStream,
// InvokeModel, InvokeModelWithResponseStream and the OpenAI-compatible
// endpoint, over loopback HTTP against a real gateway and store.

// bedrockClientKey is bedrockClient with key as the bearer token.
func bedrockClientKey(t *testing.T, h *harness, key string, headers map[string]string) *bedrockruntime.Client {
	t.Helper()
	cl := bedrockClient(t, h, headers)
	t.Setenv("AWS_BEARER_TOKEN_BEDROCK", key) // read by bedrockruntime.New
	srv := httptest.NewTLSServer(h.GW)
	t.Cleanup(srv.Close)
	return bedrockruntime.New(cl.Options(), func(o *bedrockruntime.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.HTTPClient = srv.Client()
	})
}

// rawPost sends body to path with headers and never follows a redirect.
func rawPost(t *testing.T, h *harness, method, path string, body io.Reader, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, h.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	cl := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// withUpstreamCount counts every request the gateway sends upstream,
// answered or refused by the provider (the bill counts only billed calls).
func withUpstreamCount(n *atomic.Int64) harnessOpt {
	return func(s *setup) { s.tap = func(string, []byte) { n.Add(1) } }
}

// awsError checks that an answer is an AWS exception as the SDK reads it:
// the X-Amzn-ErrorType header and a JSON body with a message.
func awsError(t *testing.T, res *http.Response, body []byte) string {
	t.Helper()
	typ := res.Header.Get(bedrock.ErrorTypeHeader)
	var e struct {
		Message string `json:"message"`
	}
	if typ == "" || json.Unmarshal(body, &e) != nil || e.Message == "" {
		t.Fatalf("status %d: not an AWS exception (X-Amzn-ErrorType %q): %s", res.StatusCode, typ, body)
	}
	return typ
}

const (
	converseBody = `{"messages":[{"role":"user","content":[{"text":"attack"}]}]}`
	invokeBodyOK = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":50,"messages":[{"role":"user","content":"attack"}]}`
)

// TestBedrockAttackAuth: no key, a made-up key and a revoked key are each
// a 401 AWS exception on every Bedrock route — before the body is read,
// before anything reaches the provider, with no ledger row; the SDK sees
// the exception. The OpenAI-compatible endpoint answers in OpenAI's shape.
func TestBedrockAttackAuth(t *testing.T) {
	var sent atomic.Int64
	h := newHarness(t, withBedrockPrices(), withOpenAIOnBedrock(), withUpstreamCount(&sent))
	good := createGatewayKey(t, h, "alpha")
	revoked, k := groundhog.NewAPIKey("gamma", time.Now())
	if err := h.DB.CreateKey(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if _, err := h.DB.DeleteKey(context.Background(), k.ID); err != nil {
		t.Fatal(err)
	}
	routes := []struct{ method, path, body string }{
		{"POST", bedrock.Path(bedrockModel, false), converseBody},
		{"POST", bedrock.Path(bedrockModel, true), converseBody},
		{"POST", bedrock.InvokePath(bedrockModel, false), invokeBodyOK},
		{"POST", bedrock.InvokePath(bedrockModel, true), invokeBodyOK},
		{"POST", bedrock.InvokePath(bedrockModel, false), `{"inputText":"other provider"}`},
		{"GET", bedrock.InvokePath(bedrockModel, false), ""},
		{"POST", "/model/" + bedrockModel + "/count-tokens", `{"input":{}}`},
		{"POST", "/async-invoke", `{}`},
		{"GET", "/async-invoke", ""},
		{"POST", "/guardrail/g1/version/1/apply", `{}`},
		{"POST", "/model/a%00b/converse", converseBody},
		{"POST", "/model/" + strings.Repeat("m", 3000) + "/converse", converseBody},
	}
	creds := map[string]map[string]string{
		"no key":      nil,
		"made-up key": {"Authorization": "Bearer gh_made_up_key"},
		"revoked key": {"Authorization": "Bearer " + revoked},
		"x-api-key":   {"X-Api-Key": "gh_made_up_key"},
		"empty":       {"Authorization": "Bearer "},
	}
	n := 0
	for name, hdr := range creds {
		for _, rt := range routes {
			n++
			res, body := rawPost(t, h, rt.method, rt.path, strings.NewReader(rt.body), hdr)
			if res.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s %s: status %d, want 401: %s", name, rt.method, rt.path, res.StatusCode, body)
				continue
			}
			awsError(t, res, body)
		}
		n++
		res, body := rawPost(t, h, "POST", "/v1/chat/completions", strings.NewReader(`{"model":"sim-small","messages":[{"role":"user","content":"hi"}]}`), hdr)
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s on the OpenAI-compatible endpoint: %d %s", name, res.StatusCode, body)
		} else {
			errorType(t, body)
		}
	}
	// The SDK itself: a wrong key surfaces an API error with status 401.
	for _, key := range []string{"gh_made_up_key", revoked} {
		n += 2
		cl := bedrockClientKey(t, h, key, nil)
		_, err := cl.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: userMessage("attack")})
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() == "" || !strings.Contains(err.Error(), "401") {
			t.Errorf("SDK Converse with key %q: %v, want an API error with status 401", key[:6], err)
		}
		_, err = cl.InvokeModel(context.Background(), &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel), ContentType: aws.String("application/json"), Body: []byte(invokeBodyOK)})
		if !errors.As(err, &api) || !strings.Contains(err.Error(), "401") {
			t.Errorf("SDK InvokeModel with key %q: %v, want an API error with status 401", key[:6], err)
		}
	}
	t.Logf("%d unauthenticated requests", n)
	if n := sent.Load(); n != 0 {
		t.Fatalf("unauthenticated requests reached the provider: %d requests", n)
	}
	if rows := h.ledgerRows(); len(rows) != 0 {
		t.Fatalf("unauthenticated requests were ledgered: %+v", rows)
	}
	// The real key works, so the 401s above are about the key.
	cl := bedrockClientKey(t, h, good, nil)
	if _, err := cl.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: userMessage("attack")}); err != nil {
		t.Fatalf("the valid key: %v", err)
	}
}

// TestBedrockAttackCrossTenant: tenant B never gets tenant A's cached
// Converse or InvokeModel answer, nor A's idempotent replay; an
// idempotency key reused by B runs B's call on its own.
func TestBedrockAttackCrossTenant(t *testing.T) {
	h := newHarness(t, withBedrockPrices())
	keyA, keyB := createGatewayKey(t, h, "alpha"), createGatewayKey(t, h, "beta")
	ctx := context.Background()
	useA := bedrockClientKey(t, h, keyA, map[string]string{"Groundhog-Cache": "use"})
	useB := bedrockClientKey(t, h, keyB, map[string]string{"Groundhog-Cache": "use"})
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: userMessage("tenant secret question")}
	inv := &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel), ContentType: aws.String("application/json"), Body: invokeBody("tenant secret invoke")}
	for i, want := range []string{"miss", "hit"} {
		out, err := useA.Converse(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := responseHeader(out.ResultMetadata, "Groundhog-Cache"); got != want {
			t.Fatalf("A's Converse %d: %q, want %q", i, got, want)
		}
		ivo, err := useA.InvokeModel(ctx, inv)
		if err != nil {
			t.Fatal(err)
		}
		if got := responseHeader(ivo.ResultMetadata, "Groundhog-Cache"); got != want {
			t.Fatalf("A's InvokeModel %d: %q, want %q", i, got, want)
		}
	}
	before := h.bill().Calls
	out, err := useB.Converse(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(out.ResultMetadata, "Groundhog-Cache"); got != "miss" {
		t.Fatalf("B's Converse: %q, want miss (A's entry)", got)
	}
	st, err := useB.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: in.ModelId, Messages: in.Messages})
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(st.ResultMetadata, "Groundhog-Cache"); got != "hit" { // B's own entry now
		t.Fatalf("B's ConverseStream: %q, want hit on B's own entry", got)
	}
	streamText(t, st)
	ivo, err := useB.InvokeModel(ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	if got := responseHeader(ivo.ResultMetadata, "Groundhog-Cache"); got != "miss" {
		t.Fatalf("B's InvokeModel: %q, want miss", got)
	}
	if got := h.bill().Calls - before; got != 2 {
		t.Fatalf("B's calls made %d upstream calls, want 2", got)
	}

	// Idempotency: the same key under two tenants is two operations, and
	// another tenant's use of a key is no conflict.
	for _, route := range []string{"converse", "invoke"} {
		client := func(key, idem string) *bedrockruntime.Client {
			return bedrockClientKey(t, h, key, map[string]string{"Idempotency-Key": idem + route})
		}
		call := func(cl *bedrockruntime.Client, text string) string {
			if route == "converse" {
				out, err := cl.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: userMessage(text)})
				if err != nil {
					t.Fatal(err)
				}
				return responseHeader(out.ResultMetadata, "Idempotent-Replayed")
			}
			out, err := cl.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{ModelId: aws.String(bedrockModel), ContentType: aws.String("application/json"), Body: invokeBody(text)})
			if err != nil {
				t.Fatal(err)
			}
			return responseHeader(out.ResultMetadata, "Idempotent-Replayed")
		}
		before := h.bill().Calls
		idA, idB := client(keyA, "shared-"), client(keyB, "shared-")
		if r := call(idA, "pay invoice 7"); r != "" {
			t.Fatalf("%s: A's first call replayed %q", route, r)
		}
		if r := call(idA, "pay invoice 7"); r != "true" {
			t.Fatalf("%s: A's retry replayed %q, want true", route, r)
		}
		if r := call(idB, "pay invoice 7"); r != "" {
			t.Fatalf("%s: B got A's replay under the same key", route)
		}
		if r := call(idB, "pay invoice 7"); r != "true" {
			t.Fatalf("%s: B's retry replayed %q, want true (B's own operation)", route, r)
		}
		otherA, otherB := client(keyA, "other-"), client(keyB, "other-")
		if r := call(otherA, "pay invoice 8"); r != "" {
			t.Fatalf("%s: A's first call under a new key replayed %q", route, r)
		}
		if r := call(otherB, "a different body under A's key"); r != "" { // a conflict would fail the call
			t.Fatalf("%s: B's other body under A's key: replayed %q", route, r)
		}
		if got := h.bill().Calls - before; got != 4 {
			t.Fatalf("%s: %d upstream calls, want 4 (each tenant once per key)", route, got)
		}
	}
}

// gzipped compresses b.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestBedrockAttackMalformedInput: malformed bodies, members of the wrong
// type, model ids with path tricks, oversized and gzip-bomb bodies on
// Converse and InvokeModel each get a clear AWS exception with the right
// status; nothing reaches the provider and nothing is ledgered.
func TestBedrockAttackMalformedInput(t *testing.T) {
	const limit = 4096
	var sent atomic.Int64
	h := newHarness(t, withBedrockPrices(), withUpstreamCount(&sent), withConfig(func(c *config.Config) {
		c.MaxBodyBytes = limit
	}))
	conv, conS := bedrock.Path(bedrockModel, false), bedrock.Path(bedrockModel, true)
	inv, invS := bedrock.InvokePath(bedrockModel, false), bedrock.InvokePath(bedrockModel, true)
	big := `{"messages":[{"role":"user","content":[{"text":"` + strings.Repeat("a", limit) + `"}]}]}`
	bigInvoke := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("a", limit) + `"}]}`
	bomb := gzipped(t, []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[{"role":"user","content":"`+strings.Repeat("0", 32<<20)+`"}]}`))
	cases := []struct {
		name, path string
		body       []byte
		hdr        map[string]string
		status     int
	}{
		{"converse malformed JSON", conv, []byte(`{"messages":[`), nil, 400},
		{"converse-stream malformed JSON", conS, []byte(`{"messages":`), nil, 400},
		{"converse trailing garbage", conv, []byte(converseBody + `}`), nil, 400},
		{"converse array body", conv, []byte(`[` + converseBody + `]`), nil, 400},
		{"converse messages a string", conv, []byte(`{"messages":"hi"}`), nil, 400},
		{"converse content a number", conv, []byte(`{"messages":[{"role":"user","content":5}]}`), nil, 400},
		{"converse text a number", conv, []byte(`{"messages":[{"role":"user","content":[{"text":5}]}]}`), nil, 400},
		{"converse maxTokens a string", conv, []byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}],"inferenceConfig":{"maxTokens":"ten"}}`), nil, 400},
		{"converse maxTokens fractional", conv, []byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}],"inferenceConfig":{"maxTokens":10.5}}`), nil, 400},
		{"converse system a string", conv, []byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}],"system":"be nice"}`), nil, 400},
		{"converse stopSequences numbers", conv, []byte(`{"messages":[{"role":"user","content":[{"text":"x"}]}],"inferenceConfig":{"stopSequences":[1]}}`), nil, 400},
		{"converse role a number", conv, []byte(`{"messages":[{"role":1,"content":[{"text":"x"}]}]}`), nil, 400},
		{"converse empty body", conv, nil, nil, 400},
		{"converse wrong content type", conv, []byte(converseBody), map[string]string{"Content-Type": "text/plain"}, 415},
		{"converse unknown encoding", conv, []byte(converseBody), map[string]string{"Content-Encoding": "br"}, 415},
		{"converse bad gzip", conv, []byte(converseBody), map[string]string{"Content-Encoding": "gzip"}, 400},
		{"converse oversized", conv, []byte(big), nil, 413},
		{"converse-stream oversized", conS, []byte(big), nil, 413},
		{"converse gzip bomb", conv, bomb, map[string]string{"Content-Encoding": "gzip"}, 413},
		{"invoke malformed JSON", inv, []byte(`{"anthropic_version":"bedrock-2023-05-31","messages":[`), nil, 400},
		{"invoke not JSON at all", inv, []byte(`hello`), nil, 400},
		{"invoke-stream malformed JSON", invS, []byte(`{"anthropic_version":`), nil, 400},
		{"invoke messages a string", inv, []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":"hi"}`), nil, 400},
		{"invoke max_tokens a string", inv, []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":"5","messages":[{"role":"user","content":"x"}]}`), nil, 400},
		{"invoke content a number", inv, []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[{"role":"user","content":5}]}`), nil, 400},
		{"invoke temperature a string", inv, []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"temperature":"hot","messages":[{"role":"user","content":"x"}]}`), nil, 400},
		{"invoke oversized", inv, []byte(bigInvoke), nil, 413},
		{"invoke-stream oversized", invS, []byte(bigInvoke), nil, 413},
		{"invoke gzip bomb", inv, bomb, map[string]string{"Content-Encoding": "gzip"}, 413},
		{"invoke-stream gzip bomb", invS, bomb, map[string]string{"Content-Encoding": "gzip"}, 413},
		{"invoke unknown encoding", inv, []byte(invokeBodyOK), map[string]string{"Content-Encoding": "br"}, 415},
		{"model id dot-dot escaped", "/model/%2E%2E/converse", []byte(converseBody), nil, 400},
		{"model id dot escaped", "/model/%2E/converse", []byte(converseBody), nil, 400},
		{"model id dot-dot", "/model/../converse", []byte(converseBody), nil, 0},
		{"model id with escaped slashes climbing", "/model/..%2F..%2Fv1%2Fchat%2Fcompletions/converse", []byte(converseBody), nil, 400},
		{"invoke model id dot-dot escaped", "/model/%2e%2e/invoke", []byte(invokeBodyOK), nil, 400},
		{"invoke model id climbing", "/model/..%2F..%2Fv1%2Fmessages/invoke", []byte(invokeBodyOK), nil, 400},
		{"model id too long", "/model/" + strings.Repeat("m", 3000) + "/converse", []byte(converseBody), nil, 400},
		{"invoke model id too long", "/model/" + strings.Repeat("m", 3000) + "/invoke", []byte(invokeBodyOK), nil, 400},
		{"model id NUL", "/model/a%00b/converse", []byte(converseBody), nil, 400},
		{"model id newline", "/model/a%0D%0AX-Injected:%201/converse", []byte(converseBody), nil, 400},
		{"invoke model id NUL", "/model/a%00b/invoke", []byte(invokeBodyOK), nil, 400},
		{"model id non-ASCII", "/model/%C3%A9/converse", []byte(converseBody), nil, 400},
		{"empty model id", "/model//converse", []byte(converseBody), nil, 0},
		{"bad cache policy", conv, []byte(converseBody), map[string]string{"Groundhog-Cache": "sometimes"}, 400},
		{"idempotency key not ASCII", inv, []byte(invokeBodyOK), map[string]string{"Idempotency-Key": "clé"}, 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := sent.Load()
			res, body := rawPost(t, h, "POST", c.path, bytes.NewReader(c.body), c.hdr)
			if n := sent.Load() - before; n != 0 {
				t.Errorf("sent upstream %d times", n)
			}
			if c.status == 0 { // a path the router cleans: anything but success
				if res.StatusCode < 300 {
					t.Fatalf("status %d: %s", res.StatusCode, body)
				}
				return
			}
			if res.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, c.status, body)
			}
			awsError(t, res, body)
		})
	}
	t.Logf("%d malformed requests", len(cases))
	if n := sent.Load(); n != 0 {
		t.Fatalf("malformed input reached the provider: %d requests", n)
	}
	// A body refused by validation may leave an error row; none is charged.
	for _, r := range h.ledgerRows() {
		if r.Outcome != groundhog.OutcomeError || r.Status != http.StatusBadRequest || r.Cost != 0 || !r.Cost.Known() {
			t.Fatalf("malformed input ledgered as %s, status %d, cost %s", r.Outcome, r.Status, r.Cost)
		}
	}
}

// TestBedrockInvokeLongOtherBodyPassesThrough: an InvokeModel body of
// another provider longer than max_body_bytes is not refused: it streams
// through to Bedrock whole (the gateway reads only max_body_bytes of it to
// tell it from Anthropic's body), and an Anthropic body as long is a 413.
func TestBedrockInvokeLongOtherBodyPassesThrough(t *testing.T) {
	const limit = 4096
	got := make(chan int, 1)
	h := newHarness(t, withBedrockPrices(), func(s *setup) {
		s.tap = func(path string, body []byte) {
			if strings.HasSuffix(path, "/invoke") {
				got <- len(body)
			}
		}
	}, withConfig(func(c *config.Config) { c.MaxBodyBytes = limit }))
	other := `{"inputText":"` + strings.Repeat("n", 3*limit) + `","textGenerationConfig":{"maxTokenCount":10}}`
	res, body := rawPost(t, h, "POST", bedrock.InvokePath(bedrockModel, false), strings.NewReader(other), nil)
	awsError(t, res, body) // the simulator models Anthropic bodies only: its ValidationException
	if !strings.Contains(string(body), "anthropic_version") {
		t.Fatalf("not the provider's answer: %d %s", res.StatusCode, body)
	}
	select {
	case n := <-got:
		if n != len(other) {
			t.Fatalf("the provider got %d bytes, want %d", n, len(other))
		}
	default:
		t.Fatal("the long body did not reach the provider")
	}
	anth := `{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("a", 3*limit) + `"}]}`
	res, body = rawPost(t, h, "POST", bedrock.InvokePath(bedrockModel, false), strings.NewReader(anth), nil)
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("long Anthropic body: %d %s", res.StatusCode, body)
	}
	awsError(t, res, body)
}

// TestBedrockAttackSlowBody: a client that stalls while sending its body
// on Converse or InvokeModel is cut off with a 408 AWS exception, and
// nothing reaches the provider.
func TestBedrockAttackSlowBody(t *testing.T) {
	var sent atomic.Int64
	h := newHarness(t, withBedrockPrices(), withUpstreamCount(&sent))
	srv := httptest.NewServer(httpguard.Handler(h.GW, httpguard.Options{BodyGrace: 100 * time.Millisecond, MinBodyRate: 1000}))
	defer srv.Close()
	paths := []string{bedrock.Path(bedrockModel, false), bedrock.Path(bedrockModel, true), bedrock.InvokePath(bedrockModel, false), bedrock.InvokePath(bedrockModel, true)}
	for _, chunked := range []bool{false, true} {
		for _, path := range paths {
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if chunked {
				fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{\"message", path)
			} else {
				fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"anthropic_version\":", path)
			}
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Second)) // bounds a hang only
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				c.Close()
				t.Fatalf("%s: no response to a stalled body: %v", path, err)
			}
			b, _ := io.ReadAll(res.Body)
			c.Close()
			if res.StatusCode != http.StatusRequestTimeout {
				t.Errorf("%s (chunked %v): status %d, want 408: %s", path, chunked, res.StatusCode, b)
				continue
			}
			awsError(t, res, b)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("the provider was sent %d requests", n)
	}
}

// brokenFrames is a Bedrock upstream whose streamed answers start well and
// then send a frame that does not decode: corrupt (a payload byte flipped,
// so its CRC fails) or truncated (half a prelude, then the end).
type brokenFrames struct {
	calls atomic.Int64
	mode  string // "crc" or "prelude"
}

func (b *brokenFrames) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.calls.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", bedrock.ContentType)
	var good, last []byte
	if strings.HasSuffix(r.URL.Path, "/converse-stream") {
		good = bedrock.AppendEvent(nil, groundhog.Event{Name: bedrock.EventMessageStart, Data: []byte(`{"role":"assistant"}`)})
		good = bedrock.AppendEvent(good, groundhog.Event{Name: bedrock.EventContentBlockDelta, Data: []byte(`{"contentBlockIndex":0,"delta":{"text":"half an ans"}}`)})
		last = bedrock.AppendEvent(nil, groundhog.Event{Name: bedrock.EventMessageStop, Data: []byte(`{"stopReason":"end_turn"}`)})
		last = bedrock.AppendEvent(last, groundhog.Event{Name: bedrock.EventMetadata, Data: []byte(`{"usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5},"metrics":{"latencyMs":1}}`)})
	} else if strings.HasSuffix(r.URL.Path, "/invoke-with-response-stream") {
		good = bedrock.AppendChunk(nil, groundhog.Event{Name: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":0}}}`)})
		good = bedrock.AppendChunk(good, groundhog.Event{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)})
		good = bedrock.AppendChunk(good, groundhog.Event{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"half an ans"}}`)})
		last = bedrock.AppendChunk(nil, groundhog.Event{Name: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)})
		last = bedrock.AppendChunk(last, groundhog.Event{Name: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}`)})
		last = bedrock.AppendChunk(last, groundhog.Event{Name: "message_stop", Data: []byte(`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3,"outputTokenCount":2}}`)})
	} else {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(good)
	w.(http.Flusher).Flush()
	switch b.mode {
	case "crc":
		// The last payload byte of the first message (messageStop, or the
		// content_block_stop chunk): its message CRC fails.
		first := int(last[0])<<24 | int(last[1])<<16 | int(last[2])<<8 | int(last[3])
		last[first-5] ^= 0xff
		_, _ = w.Write(last)
	case "prelude":
		_, _ = w.Write(last[:6]) // half of the 12-byte prelude, then the end
	}
}

// TestBedrockAttackCorruptUpstreamFrames: a ConverseStream or
// InvokeModelWithResponseStream upstream answer with a frame that fails
// its CRC or ends inside its prelude is an error to the AWS SDK (never a
// complete-looking answer) and is never cached: the same call again goes
// upstream again.
func TestBedrockAttackCorruptUpstreamFrames(t *testing.T) {
	for _, mode := range []string{"crc", "prelude"} {
		t.Run(mode, func(t *testing.T) {
			up := &brokenFrames{mode: mode}
			srv := httptest.NewServer(up)
			t.Cleanup(srv.Close)
			h := newHarness(t, withBedrockPrices(), func(s *setup) { s.bedrock = &gateway.Upstream{BaseURL: srv.URL, Provider: "sim"} })
			cl := bedrockClient(t, h, map[string]string{"Groundhog-Cache": "use"})
			ctx := context.Background()
			for i := range 2 {
				out, err := cl.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String(bedrockModel), Messages: userMessage("corrupt me")})
				if err != nil {
					t.Fatal(err)
				}
				st := out.GetStream()
				stopped := false
				for ev := range st.Events() {
					if _, ok := ev.(*types.ConverseStreamOutputMemberMessageStop); ok {
						stopped = true
					}
				}
				if st.Err() == nil || stopped {
					t.Fatalf("ConverseStream %d: err %v, messageStop seen %v; want an error and no stop", i, st.Err(), stopped)
				}
				st.Close()
				if got := up.calls.Load(); got != int64(i+1) {
					t.Fatalf("ConverseStream %d: %d upstream calls, want %d (a corrupt stream is never cached)", i, got, i+1)
				}
			}
			for i := range 2 {
				out, err := cl.InvokeModelWithResponseStream(ctx, &bedrockruntime.InvokeModelWithResponseStreamInput{ModelId: aws.String(bedrockModel), ContentType: aws.String("application/json"), Body: invokeBody("corrupt me")})
				if err != nil {
					t.Fatal(err)
				}
				st := out.GetStream()
				stopped := false
				for ev := range st.Events() {
					if c, ok := ev.(*types.ResponseStreamMemberChunk); ok && strings.Contains(string(c.Value.Bytes), "message_stop") {
						stopped = true
					}
				}
				if st.Err() == nil || stopped {
					t.Fatalf("InvokeModelWithResponseStream %d: err %v, message_stop seen %v; want an error and no stop", i, st.Err(), stopped)
				}
				st.Close()
				if got := up.calls.Load(); got != int64(3+i) {
					t.Fatalf("InvokeModelWithResponseStream %d: %d upstream calls, want %d", i, got, 3+i)
				}
			}
		})
	}
}

// TestBedrockAttackOpenAIEndpointCrossTenant: on Bedrock's
// OpenAI-compatible endpoint too, tenant B never gets A's cached answer
// nor A's idempotent replay, and A's idempotency key is no conflict for B.
func TestBedrockAttackOpenAIEndpointCrossTenant(t *testing.T) {
	var sent atomic.Int64
	h := newHarness(t, withOpenAIOnBedrock(), withUpstreamCount(&sent))
	keyA, keyB := createGatewayKey(t, h, "alpha"), createGatewayKey(t, h, "beta")
	chat := `{"model":"` + gptOSS + `","messages":[{"role":"user","content":"alpha's question"}]}`
	call := func(key, body string, hdr map[string]string) *http.Response {
		t.Helper()
		all := map[string]string{"Authorization": "Bearer " + key}
		for k, v := range hdr {
			all[k] = v
		}
		res, b := h.post("/v1/chat/completions", body, all)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", res.StatusCode, b)
		}
		return res
	}
	use := map[string]string{"Groundhog-Cache": "use"}
	if got := call(keyA, chat, use).Header.Get("Groundhog-Cache"); got != "miss" {
		t.Fatalf("A's first call: %q", got)
	}
	if got := call(keyA, chat, use).Header.Get("Groundhog-Cache"); got != "hit" {
		t.Fatalf("A's repeat: %q", got)
	}
	if got := call(keyB, chat, use).Header.Get("Groundhog-Cache"); got != "miss" {
		t.Fatalf("B's call: %q, want miss (A's entry)", got)
	}
	idem := map[string]string{"Idempotency-Key": "pay-9"}
	call(keyA, chat, idem)
	if got := call(keyA, chat, idem).Header.Get("Idempotent-Replayed"); got != "true" {
		t.Fatalf("A's retry replayed %q", got)
	}
	if got := call(keyB, chat, idem).Header.Get("Idempotent-Replayed"); got != "" {
		t.Fatal("B got A's replay")
	}
	other := `{"model":"` + gptOSS + `","messages":[{"role":"user","content":"beta's own question"}]}`
	if got := call(keyB, other, map[string]string{"Idempotency-Key": "pay-10"}).Header.Get("Idempotent-Replayed"); got != "" {
		t.Fatal("B's new key replayed")
	}
	call(keyA, chat, map[string]string{"Idempotency-Key": "pay-10"}) // A's use of B's key: no conflict
	if got := sent.Load(); got != 6 {
		t.Fatalf("%d upstream requests, want 6 (A miss, B miss, A and B once per key)", got)
	}
}
