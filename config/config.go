// Package config loads groundhog's configuration: defaults, then an optional
// YAML file, then GROUNDHOG_* environment variables, then command-line flags
// (each later source overrides the earlier ones).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/groundhog-ai/groundhog/pricing"
)

// Config is the whole gateway configuration.
type Config struct {
	Addr              string `yaml:"addr"`               // listen address; a non-loopback address requires gateway keys
	DB                string `yaml:"db"`                 // SQLite file path, or a postgres:// URL shared by replicas
	Upstream          string `yaml:"upstream"`           // OpenAI-compatible base URL ending in /v1, "sim", or "bedrock" (Bedrock's OpenAI-compatible endpoint: bedrock_upstream + /openai/v1, with the Bedrock API key or SigV4)
	AnthropicUpstream string `yaml:"anthropic_upstream"` // Anthropic base URL; "" = same as Upstream when that is "sim", else https://api.anthropic.com/v1
	OpenAIAPIKey      string `yaml:"openai_api_key"`     // provider key; never logged
	AnthropicAPIKey   string `yaml:"anthropic_api_key"`  // provider key; never logged
	// BedrockUpstream is the Amazon Bedrock runtime endpoint serving the
	// Converse routes; "" = "sim" when Upstream is "sim", else
	// https://bedrock-runtime.<BedrockRegion>.amazonaws.com when
	// BedrockRegion is set, else none (Bedrock routes answer 502).
	BedrockUpstream string `yaml:"bedrock_upstream"`
	BedrockAPIKey   string `yaml:"bedrock_api_key"` // Bedrock API key (sent as a bearer token); never logged
	// BedrockRegion is the region of the default endpoint and of SigV4
	// signing (used when no Bedrock API key is set); "" = the AWS
	// configuration chain's (AWS_REGION, shared config).
	BedrockRegion string `yaml:"bedrock_region"`
	// OpenAIOnBedrock is set by Finish when upstream is "bedrock": the
	// OpenAI routes then go to Upstream, Bedrock's OpenAI-compatible
	// endpoint, with the Bedrock credentials.
	OpenAIOnBedrock bool `yaml:"-"`
	// GeminiUpstream is the Gemini API endpoint serving the generateContent
	// routes; "" = "sim" when Upstream is "sim", else
	// https://generativelanguage.googleapis.com.
	GeminiUpstream   string `yaml:"gemini_upstream"`
	GeminiAPIKey     string `yaml:"gemini_api_key"`     // Gemini API key (sent as x-goog-api-key); never logged
	MaxBodyBytes     int64  `yaml:"max_body_bytes"`     // bound on one request body after decompression (413 past it)
	MaxUpstreamBytes int64  `yaml:"max_upstream_bytes"` // bound on one upstream response, streamed or not; 0 = DefaultMaxUpstreamBytes
	// PassthroughMaxBodyBytes bounds a request body relayed on a
	// passthrough route (file and audio uploads): streamed, never held.
	PassthroughMaxBodyBytes int64         `yaml:"passthrough_max_body_bytes"`
	UpstreamTimeout         time.Duration `yaml:"upstream_timeout"` // bound on one upstream call, stream included
	ShutdownTimeout         time.Duration `yaml:"shutdown_timeout"` // how long a graceful stop waits for calls in flight
	LogLevel                string        `yaml:"log_level"`        // debug, info, warn or error
	// LogFormat is "text" (default) or "json"; every call logs one line.
	LogFormat string `yaml:"log_format"`
	// OTLPEndpoint, when set, exports one trace span per call over
	// OTLP/HTTP (e.g. http://127.0.0.1:4318).
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// MetricsToken, when set, lets clients on other hosts scrape /metrics
	// with "Authorization: Bearer <token>"; without it /metrics is
	// loopback-only.
	MetricsToken string       `yaml:"metrics_token"`
	Cache        CacheConfig  `yaml:"cache"`
	Idempotency  IdemConfig   `yaml:"idempotency"`
	Ledger       LedgerConfig `yaml:"ledger"`
	// Postgres sizes the connection pool when DB is a postgres:// URL.
	Postgres PostgresConfig `yaml:"postgres"`
	// Operations configures per-operation policy by operation name.
	Operations map[string]Operation `yaml:"operations"`
	// Rules name the operation of a call that carries no Groundhog-Operation
	// header; the first matching rule wins, else "default".
	Rules []Rule `yaml:"rules"`
	// Keys are gateway keys given by their SHA-256 (never the secret):
	// serve adds them to the key store at start.
	Keys []KeyConfig `yaml:"keys"`
	// PricesFile is a price table file merged over the built-in table: the
	// YAML format of Prices, or the community JSON format
	// (model_prices_and_context_window.json), told apart by content (see
	// pricing.Load). Prices wins over it.
	PricesFile string                       `yaml:"prices_file"`
	Prices     map[string]pricing.YAMLPrice `yaml:"prices"` // USD per million tokens by model name or "prefix-*", merged over the built-in table and prices_file
	Sim        SimConfig                    `yaml:"sim"`
	State      StateConfig                  `yaml:"state"`
	Evidence   EvidenceConfig               `yaml:"evidence"`
	// PromptCache bounds the provider prompt-cache stage (break diagnosis
	// memory, warm-then-fan-out hold); per-operation switches are in
	// Operations[*].PromptCache.
	PromptCache PromptCacheConfig `yaml:"prompt_cache"`
	// Compaction is the working-state compaction policy (compaction.go).
	Compaction CompactionConfig `yaml:"compaction"`
	// MCP declares the upstream MCP servers proxied at /mcp/NAME (mcp.go).
	MCP MCPConfig `yaml:"mcp"`

	// PriceTable is the effective price table (built-in defaults merged with
	// PricesFile and Prices); filled by Load.
	PriceTable pricing.Table `yaml:"-"`
}

// CacheConfig configures the exact response cache.
type CacheConfig struct {
	MemoryBytes int64         `yaml:"memory_bytes"` // in-memory tier budget
	DefaultTTL  time.Duration `yaml:"default_ttl"`  // TTL when neither the operation nor Groundhog-Cache-TTL sets one
	MaxTTL      time.Duration `yaml:"max_ttl"`      // upper bound for Groundhog-Cache-TTL
	// Backend is the shared tier behind the memory tier: "memory" (the
	// database's cache table) or a redis:// or rediss:// URL.
	Backend string `yaml:"backend"`
	// RedisPrefix starts every Redis key groundhog writes, so several
	// deployments can share one Redis.
	RedisPrefix string `yaml:"redis_prefix"`
	// RedisMaxEntryBytes is the largest encoded entry written to Redis;
	// larger ones stay in the memory tier of the replica that made them.
	RedisMaxEntryBytes int64 `yaml:"redis_max_entry_bytes"`
}

// PostgresConfig sizes the PostgreSQL store.
type PostgresConfig struct {
	MaxConns         int32         `yaml:"max_conns"`         // pool size per replica
	StatementTimeout time.Duration `yaml:"statement_timeout"` // server-side bound of one statement
	// LedgerRetention drops the ledger's day partitions once their whole
	// UTC day is older than this (checked hourly); 0 keeps every day.
	LedgerRetention time.Duration `yaml:"ledger_retention"`
}

// IdemConfig configures operation records.
type IdemConfig struct {
	Lease     time.Duration `yaml:"lease"`     // how long a running call holds its record without renewal
	Retention time.Duration `yaml:"retention"` // how long a finished record answers retries
}

// LedgerConfig configures the ledger writer.
type LedgerConfig struct {
	JournalDir string `yaml:"journal_dir"` // default: <db>.journal beside the database
	// Disabled turns the ledger off (no rows, no report). For benchmarks
	// that measure the ledger's cost; never the default.
	Disabled bool `yaml:"disabled"`
	// FlushInterval is the longest an answered call's row waits in the
	// journal before it is committed to the database (default 200ms). The
	// report includes uncommitted rows either way.
	FlushInterval time.Duration `yaml:"flush_interval"`
}

// SimConfig configures the in-process simulated provider.
type SimConfig struct {
	FirstToken     time.Duration `yaml:"first_token"`      // latency before the first token
	PerPromptToken time.Duration `yaml:"per_prompt_token"` // added latency per uncached prompt token
	PerOutputToken time.Duration `yaml:"per_output_token"` // latency per output token
	Fault          string        `yaml:"fault"`            // fault to inject on every call (see groundhog sim --help)
}

// StateConfig configures the agent working-state endpoints.
type StateConfig struct {
	MaxBytes int64 `yaml:"max_bytes"` // limit of one state's JSON (413 past it)
}

// EvidenceConfig configures the evidence store endpoints.
type EvidenceConfig struct {
	QuotaBytes     int64 `yaml:"quota_bytes"`      // bytes one tenant may store in all (507 past it); 0: no quota
	MaxUploadBytes int64 `yaml:"max_upload_bytes"` // limit of one upload request (413 past it)
}

// Operation is the policy of one named operation.
type Operation struct {
	Cache    bool          `yaml:"cache"`    // exact cache on for this operation
	TTL      time.Duration `yaml:"ttl"`      // entry TTL (0: the cache default)
	Versions string        `yaml:"versions"` // declared config versions joining the key, e.g. "prompt=4"
	// PromptCache is the operation's provider prompt-cache policy.
	PromptCache OperationPromptCache `yaml:"prompt_cache"`
	// Coalesce makes identical calls in flight share one upstream call
	// even with the cache off; nil means "when the cache is on".
	Coalesce *bool `yaml:"coalesce"`
}

// OperationPromptCache is one operation's provider prompt-cache policy.
type OperationPromptCache struct {
	// Breakpoints "auto" injects cache breakpoints into every call of the
	// operation (as the Groundhog-Prompt-Cache-Breakpoints: auto header
	// does per call); "" or "off" leaves bodies as the client sent them.
	Breakpoints string `yaml:"breakpoints"`
	// App and PromptVersion name the stable prompt_cache_key that
	// Groundhog-Prompt-Cache-Key: auto sets (defaults: the operation's
	// name, "v1").
	App           string `yaml:"app"`
	PromptVersion string `yaml:"prompt_version"`
	// AskProvider asks the provider for its own cache diagnostics on every
	// call of the operation (as Groundhog-Prompt-Cache-Diagnostics:
	// provider does per call): Anthropic diagnostics.previous_message_id
	// or OpenAI Responses prompt_cache_options.comparison_response_id, set
	// from the previous answer of the call's chain.
	AskProvider bool `yaml:"ask_provider"`
	// Explicit "auto" lets groundhog create and manage Gemini explicit
	// caches (cachedContents) for the operation's repeated prefixes when
	// they pay for themselves; "off" never; "" follows
	// prompt_cache.explicit.
	Explicit string `yaml:"explicit"`
}

// PromptCacheConfig bounds the gateway's prompt-cache stage.
type PromptCacheConfig struct {
	// MaxChains and MaxBytes bound the break-diagnosis memory (LRU);
	// PromptsPerChain is how many recent prompts a chain keeps. 0 takes the
	// promptcache defaults (10,000 chains, 64 MiB, 4).
	MaxChains       int   `yaml:"max_chains"`
	MaxBytes        int64 `yaml:"max_bytes"`
	PromptsPerChain int   `yaml:"prompts_per_chain"`
	// FanOutMaxHold is the longest warm-then-fan-out holds a request while
	// the first request over the same new prefix starts answering; the
	// request then goes upstream anyway (default 10s). A negative value
	// turns fan-out off.
	FanOutMaxHold time.Duration `yaml:"fan_out_max_hold"`
	// FanOutPrewarmAfter is how long after a first request that does not
	// stream went upstream the first request held behind it pre-warms the
	// prefix (Anthropic, max_tokens 0), so the held requests go when that
	// answers rather than when the first one's whole answer is in (default
	// 5s). Keep it past the provider's time to first token on the shared
	// prompt: the pre-warm then reads the prefix the first request wrote;
	// sent earlier, it writes it a second time. A negative value turns
	// pre-warming off.
	FanOutPrewarmAfter time.Duration `yaml:"fan_out_prewarm_after"`
	// MinTokens overrides groundhog's table of the shortest prefix each
	// model's provider caches: model name prefix -> tokens, the longest
	// matching prefix winning ({claude-sonnet-4-6: 2048}). Breakpoint
	// injection, the break diagnosis and warm-then-fan-out use it.
	MinTokens map[string]int `yaml:"min_tokens"`
	// Explicit "auto" lets groundhog create, extend and delete Gemini
	// explicit caches (cachedContents) for a tenant's repeated prompt
	// prefixes when its cost model says they pay for themselves against
	// implicit caching; "off" (the default) never. An operation's
	// prompt_cache.explicit overrides it.
	Explicit string `yaml:"explicit"`
	// ExplicitTTL is the life groundhog gives a cache it creates or
	// extends, and the horizon of its cost model (default 10m).
	ExplicitTTL time.Duration `yaml:"explicit_ttl"`
	// ExplicitWindow: a prefix not sent again within it is no longer
	// reused; its managed cache is deleted (default 10m).
	ExplicitWindow time.Duration `yaml:"explicit_window"`
	// ExplicitMinUses is how many times a prefix must have been sent, each
	// within explicit_window of the one before, before groundhog considers
	// a cache for it (default 3).
	ExplicitMinUses int `yaml:"explicit_min_uses"`
}

// KeyConfig is a gateway key in the configuration file: the tenant and the
// hex SHA-256 of the secret, as `groundhog keys create` prints it.
type KeyConfig struct {
	Tenant string `yaml:"tenant"` // the tenant the key authenticates
	SHA256 string `yaml:"sha256"` // hex SHA-256 of the secret
}

// Rule maps calls without a Groundhog-Operation header to an operation.
// Route and Model are path.Match patterns ("" matches all).
type Rule struct {
	Route     string `yaml:"route"`     // path.Match pattern of the route, "" for all
	Model     string `yaml:"model"`     // path.Match pattern of the model, "" for all
	Operation string `yaml:"operation"` // the operation name given to matching calls
}

// Default returns the built-in configuration: loopback, a SQLite file in the
// working directory, the simulated provider.
func Default() Config {
	return Config{
		Addr:                    "127.0.0.1:8080",
		DB:                      "./groundhog.db",
		Upstream:                "sim",
		MaxBodyBytes:            32 << 20,
		PassthroughMaxBodyBytes: 1 << 30,
		UpstreamTimeout:         10 * time.Minute,
		ShutdownTimeout:         30 * time.Second,
		LogLevel:                "info",
		Cache: CacheConfig{MemoryBytes: 256 << 20, DefaultTTL: time.Hour, MaxTTL: 30 * 24 * time.Hour,
			Backend: "memory", RedisPrefix: "groundhog:", RedisMaxEntryBytes: 4 << 20},
		Postgres:    PostgresConfig{MaxConns: 20, StatementTimeout: 10 * time.Second},
		Idempotency: IdemConfig{Lease: 30 * time.Second, Retention: 24 * time.Hour},
		PriceTable:  pricing.Default(),
		State:       StateConfig{MaxBytes: 256 << 10},
		Evidence:    EvidenceConfig{QuotaBytes: 1 << 30, MaxUploadBytes: 1 << 30},
		Compaction:  DefaultCompaction(),
		PromptCache: PromptCacheConfig{FanOutMaxHold: 10 * time.Second, FanOutPrewarmAfter: 5 * time.Second,
			Explicit: "off", ExplicitTTL: 10 * time.Minute, ExplicitWindow: 10 * time.Minute, ExplicitMinUses: 3},
	}
}

// LoadFile overlays the YAML file at path on c. Unknown keys are errors.
func (c *Config) LoadFile(p string) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		return fmt.Errorf("config %s: %w", p, err)
	}
	return nil
}

// DefaultMaxUpstreamBytes bounds one upstream response (a body, or a
// stream's total) unless max_upstream_bytes says otherwise: a provider, or
// anything posing as one, cannot grow the gateway's memory without limit.
const DefaultMaxUpstreamBytes = 256 << 20

// envVars maps GROUNDHOG_* variables to setters.
var envVars = map[string]func(c *Config, v string) error{
	"GROUNDHOG_ADDR":               func(c *Config, v string) error { c.Addr = v; return nil },
	"GROUNDHOG_DB":                 func(c *Config, v string) error { c.DB = v; return nil },
	"GROUNDHOG_CACHE":              func(c *Config, v string) error { c.Cache.Backend = v; return nil },
	"GROUNDHOG_UPSTREAM":           func(c *Config, v string) error { c.Upstream = v; return nil },
	"GROUNDHOG_ANTHROPIC_UPSTREAM": func(c *Config, v string) error { c.AnthropicUpstream = v; return nil },
	"GROUNDHOG_BEDROCK_UPSTREAM":   func(c *Config, v string) error { c.BedrockUpstream = v; return nil },
	"GROUNDHOG_BEDROCK_API_KEY":    func(c *Config, v string) error { c.BedrockAPIKey = v; return nil },
	"GROUNDHOG_BEDROCK_REGION":     func(c *Config, v string) error { c.BedrockRegion = v; return nil },
	"GROUNDHOG_GEMINI_UPSTREAM":    func(c *Config, v string) error { c.GeminiUpstream = v; return nil },
	"GROUNDHOG_GEMINI_API_KEY":     func(c *Config, v string) error { c.GeminiAPIKey = v; return nil },
	"GROUNDHOG_LOG_LEVEL":          func(c *Config, v string) error { c.LogLevel = v; return nil },
	"GROUNDHOG_LOG_FORMAT":         func(c *Config, v string) error { c.LogFormat = v; return nil },
	"GROUNDHOG_OTLP_ENDPOINT":      func(c *Config, v string) error { c.OTLPEndpoint = v; return nil },
	"GROUNDHOG_METRICS_TOKEN":      func(c *Config, v string) error { c.MetricsToken = v; return nil },
	"GROUNDHOG_MAX_BODY_BYTES": func(c *Config, v string) (err error) {
		c.MaxBodyBytes, err = strconv.ParseInt(v, 10, 64)
		return err
	},
	"GROUNDHOG_STATE_MAX_BYTES": func(c *Config, v string) (err error) {
		c.State.MaxBytes, err = strconv.ParseInt(v, 10, 64)
		return err
	},
	"GROUNDHOG_EVIDENCE_QUOTA_BYTES": func(c *Config, v string) (err error) {
		c.Evidence.QuotaBytes, err = strconv.ParseInt(v, 10, 64)
		return err
	},
	"GROUNDHOG_UPSTREAM_TIMEOUT": func(c *Config, v string) (err error) {
		c.UpstreamTimeout, err = time.ParseDuration(v)
		return err
	},
}

// LoadEnv overlays GROUNDHOG_* variables and the provider keys from
// OPENAI_API_KEY / ANTHROPIC_API_KEY (set variables win over the file).
func (c *Config) LoadEnv(getenv func(string) string) error {
	for name, set := range envVars {
		if v := getenv(name); v != "" {
			if err := set(c, v); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if v := getenv("OPENAI_API_KEY"); v != "" {
		c.OpenAIAPIKey = v
	}
	if v := getenv("ANTHROPIC_API_KEY"); v != "" {
		c.AnthropicAPIKey = v
	}
	return nil
}

// Finish validates c and computes derived fields (the price table, the
// Anthropic upstream default). Call it after every source is applied.
func (c *Config) Finish() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("addr %q: %w", c.Addr, err)
	}
	if c.DB == "" {
		return fmt.Errorf("db: a database path is required")
	}
	switch b := c.Cache.Backend; {
	case b == "" || b == "memory":
		c.Cache.Backend = "memory"
	case strings.HasPrefix(b, "redis://") || strings.HasPrefix(b, "rediss://"):
	default:
		return fmt.Errorf("cache: backend must be memory or a redis:// or rediss:// URL")
	}
	if c.Cache.RedisMaxEntryBytes <= 0 {
		return fmt.Errorf("cache: redis_max_entry_bytes must be positive")
	}
	if c.Postgres.MaxConns <= 0 || c.Postgres.StatementTimeout < 0 {
		return fmt.Errorf("postgres: max_conns must be positive and statement_timeout not negative")
	}
	if c.Postgres.LedgerRetention < 0 {
		return fmt.Errorf("postgres: ledger_retention must not be negative")
	}
	if c.MaxBodyBytes <= 0 {
		return fmt.Errorf("max_body_bytes must be positive")
	}
	if c.PassthroughMaxBodyBytes <= 0 {
		return fmt.Errorf("passthrough_max_body_bytes must be positive")
	}
	if c.UpstreamTimeout <= 0 {
		return fmt.Errorf("upstream_timeout must be positive")
	}
	if c.MaxUpstreamBytes == 0 {
		c.MaxUpstreamBytes = DefaultMaxUpstreamBytes
	}
	if c.MaxUpstreamBytes < 0 {
		return fmt.Errorf("max_upstream_bytes must be positive")
	}
	if c.Idempotency.Lease <= 0 || c.Idempotency.Retention <= 0 {
		return fmt.Errorf("idempotency lease and retention must be positive")
	}
	switch c.LogFormat {
	case "", "text", "json":
	default:
		return fmt.Errorf("log_format %q: use text or json", c.LogFormat)
	}
	if c.State.MaxBytes <= 0 {
		return fmt.Errorf("state.max_bytes must be positive")
	}
	if c.Evidence.QuotaBytes < 0 || c.Evidence.MaxUploadBytes <= 0 {
		return fmt.Errorf("evidence: quota_bytes must be 0 (no quota) or positive, max_upload_bytes positive")
	}
	if c.PromptCache.MaxChains < 0 || c.PromptCache.MaxBytes < 0 || c.PromptCache.PromptsPerChain < 0 {
		return fmt.Errorf("prompt_cache: max_chains, max_bytes and prompts_per_chain must not be negative")
	}
	for model, n := range c.PromptCache.MinTokens {
		if model == "" || n < 1 || n > 1<<20 {
			return fmt.Errorf("prompt_cache.min_tokens: %q: %d: want a model name prefix and 1 to %d tokens", model, n, 1<<20)
		}
	}
	switch c.PromptCache.Explicit {
	case "", "off", "auto":
	default:
		return fmt.Errorf("prompt_cache.explicit %q: use auto or off", c.PromptCache.Explicit)
	}
	if pc := c.PromptCache; pc.ExplicitTTL != 0 && pc.ExplicitTTL < time.Minute || pc.ExplicitWindow < 0 || pc.ExplicitMinUses != 0 && pc.ExplicitMinUses < 2 {
		return fmt.Errorf("prompt_cache: explicit_ttl must be at least 1m, explicit_window positive and explicit_min_uses at least 2")
	}
	if c.ShutdownTimeout <= 0 {
		return fmt.Errorf("shutdown_timeout must be positive")
	}
	if c.Cache.MaxTTL <= 0 || c.Cache.DefaultTTL < 0 || c.Cache.DefaultTTL > c.Cache.MaxTTL {
		return fmt.Errorf("cache: max_ttl must be positive and default_ttl between 0 and max_ttl")
	}
	for name, op := range c.Operations {
		if op.TTL < 0 || op.TTL > c.Cache.MaxTTL {
			return fmt.Errorf("operations.%s.ttl must be between 0 and cache.max_ttl", name)
		}
		switch op.PromptCache.Breakpoints {
		case "", "off", "auto":
		default:
			return fmt.Errorf("operations.%s.prompt_cache.breakpoints %q: use auto or off", name, op.PromptCache.Breakpoints)
		}
		switch op.PromptCache.Explicit {
		case "", "off", "auto":
		default:
			return fmt.Errorf("operations.%s.prompt_cache.explicit %q: use auto or off", name, op.PromptCache.Explicit)
		}
		if op.PromptCache.App != "" && !ValidOperationName(op.PromptCache.App) || op.PromptCache.PromptVersion != "" && !ValidOperationName(op.PromptCache.PromptVersion) {
			return fmt.Errorf("operations.%s.prompt_cache: app and prompt_version must be 1–128 of A-Z a-z 0-9 . _ - : /", name)
		}
	}
	if c.Upstream == "" {
		c.Upstream = "sim"
	}
	c.OpenAIOnBedrock = c.Upstream == "bedrock"
	if c.Upstream != "sim" && !c.OpenAIOnBedrock {
		if err := checkURL(c.Upstream); err != nil {
			return fmt.Errorf("upstream: %w", err)
		}
	}
	if c.AnthropicUpstream == "" {
		if c.Upstream == "sim" {
			c.AnthropicUpstream = "sim"
		} else {
			c.AnthropicUpstream = "https://api.anthropic.com/v1"
		}
	}
	if c.AnthropicUpstream != "sim" {
		if err := checkURL(c.AnthropicUpstream); err != nil {
			return fmt.Errorf("anthropic upstream: %w", err)
		}
	}
	if c.BedrockUpstream == "" {
		if c.Upstream == "sim" {
			c.BedrockUpstream = "sim"
		} else if c.BedrockRegion != "" {
			c.BedrockUpstream = "https://bedrock-runtime." + c.BedrockRegion + ".amazonaws.com"
		}
	}
	if c.BedrockUpstream != "sim" && c.BedrockUpstream != "" {
		if err := checkURL(c.BedrockUpstream); err != nil {
			return fmt.Errorf("bedrock upstream: %w", err)
		}
	}
	if c.OpenAIOnBedrock {
		if c.BedrockUpstream == "" || c.BedrockUpstream == "sim" {
			return fmt.Errorf("upstream: bedrock needs bedrock_region (or a bedrock_upstream URL) for Bedrock's OpenAI-compatible endpoint")
		}
		c.Upstream = strings.TrimSuffix(c.BedrockUpstream, "/") + "/openai/v1"
	}
	if c.GeminiUpstream == "" {
		if c.Upstream == "sim" {
			c.GeminiUpstream = "sim"
		} else {
			c.GeminiUpstream = "https://generativelanguage.googleapis.com"
		}
	}
	if c.GeminiUpstream != "sim" {
		if err := checkURL(c.GeminiUpstream); err != nil {
			return fmt.Errorf("gemini upstream: %w", err)
		}
	}
	for name := range c.Operations {
		if !ValidOperationName(name) {
			return fmt.Errorf("operations: invalid operation name %q (1–128 of A-Z a-z 0-9 . _ - : /)", name)
		}
	}
	for i, r := range c.Rules {
		if !ValidOperationName(r.Operation) {
			return fmt.Errorf("rules[%d]: invalid operation %q", i, r.Operation)
		}
		for _, pat := range []string{r.Route, r.Model} {
			if _, err := path.Match(pat, ""); err != nil {
				return fmt.Errorf("rules[%d]: bad pattern %q", i, pat)
			}
		}
	}
	for i, k := range c.Keys {
		if !ValidOperationName(k.Tenant) {
			return fmt.Errorf("keys[%d]: invalid tenant %q", i, k.Tenant)
		}
		if !isSHA256Hex(k.SHA256) {
			return fmt.Errorf("keys[%d]: sha256 must be 64 lowercase hex digits (the hash of the key, never the key itself)", i)
		}
	}
	if err := c.MCP.finish(); err != nil {
		return err
	}
	if err := c.Compaction.finish(); err != nil {
		return err
	}
	t := pricing.Default()
	if c.PricesFile != "" {
		ft, err := pricing.Load(c.PricesFile)
		if err != nil {
			return err
		}
		t = t.Merge(ft)
	}
	if len(c.Prices) > 0 {
		pt, err := pricing.FromStrings(c.Prices)
		if err != nil {
			return err
		}
		t = t.Merge(pt)
	}
	c.PriceTable = t
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func checkURL(u string) error {
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("%q is not an http(s) URL or \"sim\"", RedactUserinfo(u))
	}
	// A URL that does not parse would fail every call (500), each logging
	// the parse error, which quotes the URL and its password.
	pu, err := url.Parse(u)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%q is not a valid URL: %w", RedactUserinfo(u), err)
	}
	if pu.Host == "" {
		return fmt.Errorf("%q has no host", RedactUserinfo(u))
	}
	return nil
}

// RedactUserinfo replaces the password of a URL's userinfo
// ("scheme://user:password@host…") with xxxxx, by its text alone, so that
// an error about a URL that does not parse (or has the wrong scheme) never
// prints the password. Text without "://" but with an "@" (a mistyped URL)
// keeps only what follows its last "@". Other text is returned as it is.
func RedactUserinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		if at := strings.LastIndex(s, "@"); at >= 0 {
			return "xxxxx" + s[at:]
		}
		return s
	}
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return s
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return s
	}
	return s[:i+3] + user + ":xxxxx" + rest[at:]
}

// ValidOperationName reports whether s can name an operation: 1–128 bytes of
// letters, digits and . _ - : /.
func ValidOperationName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._-:/", c) >= 0) {
			return false
		}
	}
	return true
}

// ExplicitCache reports whether groundhog manages Gemini explicit caches
// for the calls of operation op: the operation's prompt_cache.explicit
// when set, else prompt_cache.explicit.
func (c *Config) ExplicitCache(op string) bool {
	if v := c.Operations[op].PromptCache.Explicit; v != "" {
		return v == "auto"
	}
	return c.PromptCache.Explicit == "auto"
}

// OperationFor names the operation of a call without a header: the first
// matching rule, else "default".
func (c *Config) OperationFor(route, model string) string {
	for _, r := range c.Rules {
		if match(r.Route, route) && match(r.Model, model) {
			return r.Operation
		}
	}
	return "default"
}

func match(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	ok, _ := path.Match(pattern, s)
	return ok
}

// IsLoopback reports whether addr's host is a loopback address or
// "localhost". An empty host (all interfaces) is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
