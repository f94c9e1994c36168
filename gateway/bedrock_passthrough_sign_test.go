package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/config"
	"github.com/groundhog-ai/groundhog/gateway"
	"github.com/groundhog-ai/groundhog/wire/bedrock"
)

var sigV4Auth = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/bedrock/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$`)

// verifySigV4 checks r as AWS would: its signature, recomputed with the
// secret over the signed headers and the digest of the body it carried, is
// the one it has. It returns what is wrong, ""
// when nothing is.
func verifySigV4(r *http.Request, body []byte, creds aws.Credentials, region string) string {
	m := sigV4Auth.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return "no SigV4 Authorization: " + r.Header.Get("Authorization")
	}
	if m[1] != creds.AccessKeyID || m[3] != region {
		return "credential scope " + m[0]
	}
	sum := sha256.Sum256(body) // the canonical request signed covers it
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "X-Amz-Date: " + err.Error()
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for _, name := range strings.Split(m[4], ";") {
		if name != "host" {
			again.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	again.ContentLength = int64(len(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "bedrock", region, at); err != nil {
		return err.Error()
	}
	if want := sigV4Auth.FindStringSubmatch(again.Header.Get("Authorization")); want == nil || want[5] != m[5] {
		return "signature " + m[5] + " does not verify"
	}
	return ""
}

// TestBedrockPassthroughSigV4: with a SigV4 signer (credentials from the AWS
// chain, no Bedrock API key), the Bedrock runtime routes groundhog relays
// without modelling — ApplyGuardrail here, with the AWS SDK, and a GET of
// the async invocations — reach the provider signed over the exact body
// they carry, the client's own X-Amz-* headers left out, and the answer
// comes back to the SDK as the provider sent it.
func TestBedrockPassthroughSigV4(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}
	type seen struct{ problem, path, clientHdr string }
	got := make(chan seen, 4)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{verifySigV4(r, body, creds, "eu-west-3"), r.URL.Path, r.Header.Get("X-Amz-Client-Thing")}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"asyncInvokeSummaries":[]}`))
			return
		}
		_, _ = w.Write([]byte(`{"action":"NONE","outputs":[],"assessments":[],"usage":{"topicPolicyUnits":1,"contentPolicyUnits":1,"wordPolicyUnits":0,"sensitiveInformationPolicyUnits":0,"sensitiveInformationPolicyFreeUnits":0,"contextualGroundingPolicyUnits":0}}`))
	}))
	t.Cleanup(upstream.Close)
	provider := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })
	up := gateway.Upstream{BaseURL: upstream.URL, Provider: "bedrock", Sign: bedrock.NewSigner(provider, "eu-west-3", nil)}
	h := newHarness(t, withBedrockPrices(), func(s *setup) { s.bedrock = &up }, withConfig(func(c *config.Config) { c.MaxBodyBytes = 4096 }))
	cl := bedrockClient(t, h, map[string]string{"X-Amz-Client-Thing": "mine"})
	out, err := cl.ApplyGuardrail(context.Background(), &bedrockruntime.ApplyGuardrailInput{
		GuardrailIdentifier: aws.String("gr-1"), GuardrailVersion: aws.String("DRAFT"), Source: types.GuardrailContentSourceInput,
		Content: []types.GuardrailContentBlock{&types.GuardrailContentBlockMemberText{Value: types.GuardrailTextBlock{Text: aws.String("is this fine?")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Action != types.GuardrailActionNone {
		t.Fatalf("action %q, want the provider's NONE", out.Action)
	}
	s := <-got
	if s.problem != "" || s.path != "/guardrail/gr-1/version/DRAFT/apply" || s.clientHdr != "" {
		t.Fatalf("upstream saw %+v: want a verified signature on the guardrail path, no client X-Amz-* header", s)
	}

	req, _ := http.NewRequest(http.MethodGet, h.URL+"/async-invoke", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if s := <-got; res.StatusCode != 200 || s.problem != "" {
		t.Fatalf("GET /async-invoke: status %d, upstream saw %+v", res.StatusCode, s)
	}

	// A signed body is held to be signed: past max_body_bytes it is a 413
	// that says why, and nothing reaches the provider.
	res, body := h.post("/model/"+bedrockModel+"/count-tokens", `{"input":"`+strings.Repeat("x", 5000)+`"}`, nil)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "SigV4") {
		t.Fatalf("oversized signed passthrough: %d %s", res.StatusCode, body)
	}
	select {
	case s := <-got:
		t.Fatalf("an oversized body reached the provider: %+v", s)
	default:
	}
	rows := h.ledgerRows()
	if len(rows) != 3 || rows[0].Outcome != groundhog.OutcomePassthrough || rows[0].Status != 200 {
		t.Fatalf("ledger rows %+v, want 3 passthrough rows (the 413 booked too)", rows)
	}
}
