package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadPrecedenceAndValidation(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "g.yaml")
	hash := strings.Repeat("ab", 32)
	if err := os.WriteFile(file, []byte(`
addr: 127.0.0.1:9999
upstream: https://example.invalid/v1
upstream_timeout: 2m
operations:
  summarize: {cache: true, ttl: 6h, versions: "prompt=4"}
rules:
  - {route: /v1/embeddings, model: "text-embedding-*", operation: embed}
keys:
  - {tenant: acme, sha256: `+hash+`}
prices:
  my-model: {input: "0.5", output: "1.5"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := Default()
	if err := c.LoadFile(file); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GROUNDHOG_ADDR": "127.0.0.1:7777", "OPENAI_API_KEY": "sk-test"}
	if err := c.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:7777" {
		t.Errorf("env must override the file: addr %s", c.Addr)
	}
	if c.UpstreamTimeout != 2*time.Minute || c.OpenAIAPIKey != "sk-test" || c.AnthropicUpstream != "https://api.anthropic.com/v1" {
		t.Errorf("timeout %s key set %v anthropic %s", c.UpstreamTimeout, c.OpenAIAPIKey != "", c.AnthropicUpstream)
	}
	if !c.Operations["summarize"].Cache || c.Operations["summarize"].TTL != 6*time.Hour {
		t.Errorf("operations %+v", c.Operations)
	}
	if got := c.OperationFor("/v1/embeddings", "text-embedding-3-small"); got != "embed" {
		t.Errorf("rule: %s", got)
	}
	if got := c.OperationFor("/v1/chat/completions", "gpt-4o"); got != "default" {
		t.Errorf("no rule: %s", got)
	}
	if _, ok := c.PriceTable.Lookup("my-model"); !ok {
		t.Error("configured price missing")
	}
	if _, ok := c.PriceTable.Lookup("sim-small"); !ok {
		t.Error("built-in prices lost by the merge")
	}
	if len(c.Keys) != 1 || c.Keys[0].Tenant != "acme" {
		t.Errorf("keys %+v", c.Keys)
	}

	for name, bad := range map[string]string{
		"unknown key":       "adr: 1.2.3.4:5\n",
		"bad upstream":      "upstream: ftp://x\n",
		"bad operation":     "operations: {\"has space\": {cache: true}}\n",
		"secret as key":     "keys: [{tenant: a, sha256: gh_0123}]\n",
		"bad rule pattern":  "rules: [{route: \"[\", operation: x}]\n",
		"bad price":         "prices: {m: {input: abc, output: 1}}\n",
		"negative body max": "max_body_bytes: -1\n",
	} {
		f := filepath.Join(dir, "bad.yaml")
		_ = os.WriteFile(f, []byte(bad), 0o600)
		c := Default()
		err := c.LoadFile(f)
		if err == nil {
			err = c.Finish()
		}
		if err == nil {
			t.Errorf("%s: accepted %q", name, bad)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:80": true, "[::1]:8080": true, "127.1.2.3:1": true,
		"0.0.0.0:8080": false, ":8080": false, "192.168.1.5:80": false, "[::]:80": false, "example.com:80": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
}

func TestProviderKeyFromEnvWinsOverFile(t *testing.T) {
	c := Default()
	c.OpenAIAPIKey = "from-file"
	_ = c.LoadEnv(func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "from-env"
		}
		return ""
	})
	if c.OpenAIAPIKey != "from-env" {
		t.Fatalf("key %q", c.OpenAIAPIKey)
	}
	c = Default()
	c.Operations = map[string]Operation{"x": {TTL: -time.Second}}
	if err := c.Finish(); err == nil {
		t.Fatal("negative operation TTL accepted (it would mean an entry that never expires)")
	}
}

// An upstream URL refused for its scheme is named in the error without the
// password of its userinfo.
func TestURLErrorsHidePasswords(t *testing.T) {
	for _, tc := range []struct{ upstream, anthropic, want string }{
		{"ftp://proxy:UPPW@h/v1", "", `upstream: "ftp://proxy:xxxxx@h/v1" is not an http(s) URL`},
		{"https://api.openai.com/v1", "htp://proxy:ANPW@h:1/v1?x=@", `anthropic upstream: "htp://proxy:xxxxx@h:1/v1?x=@" is not an http(s) URL`},
		{"http//proxy:UPPW@h/v1", "", `upstream: "xxxxx@h/v1" is not an http(s) URL`}, // mistyped: no "://"
		// would make every call a 500 logging the parse error, URL and password included
		{"http://proxy:UPPW@h:badport/v1", "", `upstream: "http://proxy:xxxxx@h:badport/v1" is not a valid URL: invalid port ":badport" after host`},
		{"https://api.openai.com/v1", "https://proxy:ANPW@/v1", `anthropic upstream: "https://proxy:xxxxx@/v1" has no host`},
	} {
		c := Default()
		c.Upstream, c.AnthropicUpstream = tc.upstream, tc.anthropic
		err := c.Finish()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Finish(%q, %q) = %v, want %s", tc.upstream, tc.anthropic, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "UPPW") || strings.Contains(err.Error(), "ANPW")) {
			t.Errorf("password in %v", err)
		}
	}
	for in, want := range map[string]string{
		"redis://:pw@h:badport/0":  "redis://:xxxxx@h:badport/0",
		"ftp://u@h/v1":             "ftp://u@h/v1",
		"ftp://h/p@q":              "ftp://h/p@q",
		"x://u:p:q@h@i/":           "x://u:xxxxx@i/",
		"no scheme u:p@h":          "xxxxx@h",
		"./data/g.db":              "./data/g.db",
		"postgres://u:p@h/d?a=b@c": "postgres://u:xxxxx@h/d?a=b@c",
	} {
		if got := RedactUserinfo(in); got != want {
			t.Errorf("RedactUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
