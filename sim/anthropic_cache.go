package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/groundhog-ai/groundhog"
)

// longCacheTTL is Anthropic's cache_control ttl "1h".
const longCacheTTL = time.Hour

// anthropicCache collects the block boundaries and cache_control
// breakpoints of a Messages prompt while it is tokenized, and applies
// Anthropic's rules to them:
//   - cache_control may sit on a tool, a system block or a message content
//     block, never on an empty text block (400);
//   - at most AnthropicMaxBreakpoints of them (one more is a 400 with the
//     provider's text), a top-level cache_control counting as one on the
//     last block;
//   - ttl "5m" (the default) or "1h", and a 1h breakpoint may not follow a
//     5m one in prompt order (400);
//   - a read is looked for at each breakpoint and the AnthropicLookback
//     block boundaries before it; each breakpoint of at least
//     AnthropicMinTokens is written.
type anthropicCache struct {
	limits CacheLimits
	ts     *tokenStream
	bounds []PrefixPoint   // after each block
	breaks []int           // indexes into bounds carrying cache_control
	ttls   []time.Duration // per break: 0 ("5m") or longCacheTTL
	where  []string        // per break: its JSON path, for errors
}

// mark records the block boundary just passed and, when cc is a
// cache_control, a breakpoint there. path names the block in errors;
// emptyText says it is an empty text block.
func (c *anthropicCache) mark(cc json.RawMessage, path string, emptyText bool) error {
	c.bounds = append(c.bounds, c.ts.point())
	if !hasMarker(cc) {
		return nil
	}
	if emptyText {
		return groundhog.Errorf(groundhog.EINVALID, "%s.text: cache_control cannot be set for empty text blocks", path)
	}
	ttl, err := cacheControlTTL(cc, path)
	if err != nil {
		return err
	}
	c.breaks = append(c.breaks, len(c.bounds)-1)
	c.ttls = append(c.ttls, ttl)
	c.where = append(c.where, path+".cache_control")
	return nil
}

// automatic applies a top-level cache_control: a breakpoint on the last
// block, unless that block already carries one.
func (c *anthropicCache) automatic(cc json.RawMessage) error {
	if !hasMarker(cc) || len(c.bounds) == 0 {
		return nil
	}
	last := len(c.bounds) - 1
	if n := len(c.breaks); n > 0 && c.breaks[n-1] == last {
		return nil
	}
	ttl, err := cacheControlTTL(cc, "cache_control")
	if err != nil {
		return err
	}
	c.breaks = append(c.breaks, last)
	c.ttls = append(c.ttls, ttl)
	c.where = append(c.where, "cache_control")
	return nil
}

// cacheControlTTL validates a cache_control object and returns its ttl (0
// for the default 5 minutes).
func cacheControlTTL(cc json.RawMessage, path string) (time.Duration, error) {
	var v struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if err := json.Unmarshal(cc, &v); err != nil {
		return 0, groundhog.WrapError(groundhog.EINVALID, path+".cache_control: Input should be an object", err)
	}
	if v.Type != "ephemeral" {
		return 0, groundhog.Errorf(groundhog.EINVALID, "%s.cache_control.type: Input should be 'ephemeral'", path)
	}
	switch v.TTL {
	case "", "5m":
		return 0, nil
	case "1h":
		return longCacheTTL, nil
	}
	return 0, groundhog.Errorf(groundhog.EINVALID, "%s.cache_control.ttl: Input should be '5m' or '1h'", path)
}

// plan checks the breakpoint limits and returns the points to look a read
// up at, the prefixes to write, and the end of the 1-hour writes (0: none).
func (c *anthropicCache) plan() (lookup []PrefixPoint, store []PrefixWrite, longEnd int, err error) {
	if len(c.breaks) > c.limits.AnthropicMaxBreakpoints {
		return nil, nil, 0, groundhog.Errorf(groundhog.EINVALID, "A maximum of %d blocks with cache_control may be provided. Found %d.", c.limits.AnthropicMaxBreakpoints, len(c.breaks))
	}
	for i := 1; i < len(c.ttls); i++ {
		if c.ttls[i] > c.ttls[i-1] {
			return nil, nil, 0, groundhog.Errorf(groundhog.EINVALID,
				"%s: a ttl='1h' cache_control block cannot come after a ttl='5m' one (longer TTLs must come first, in the order tools, system, messages)", c.where[i])
		}
	}
	minTokens := c.limits.AnthropicMinTokens
	in := make([]bool, len(c.bounds))
	for i, b := range c.breaks {
		for k := max(0, b-c.limits.AnthropicLookback); k <= b; k++ {
			in[k] = true
		}
		if p := c.bounds[b]; p.Tokens >= minTokens {
			store = append(store, PrefixWrite{PrefixPoint: p, TTL: c.ttls[i]})
			if c.ttls[i] == longCacheTTL {
				longEnd = p.Tokens
			}
		}
	}
	for k, ok := range in {
		if p := c.bounds[k]; ok && p.Tokens >= minTokens && (len(lookup) == 0 || lookup[len(lookup)-1] != p) {
			lookup = append(lookup, p)
		}
	}
	return lookup, store, longEnd, nil
}

// messagesLevelSalt is what the messages level of the cache depends on
// besides its text: tool_choice, the thinking settings and whether the
// prompt holds images. Changing any of them invalidates the cached messages
// while the tools and system levels are still read.
func messagesLevelSalt(req *messagesRequest) string {
	var b bytes.Buffer
	if hasMarker(req.ToolChoice) {
		b.WriteString("tool_choice=" + compactJSON(req.ToolChoice) + "\x00")
	}
	if hasMarker(req.Thinking) {
		b.WriteString("thinking=" + compactJSON(req.Thinking) + "\x00")
	}
	for _, m := range req.Messages {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, bl := range blocks {
			if bl.Type == "image" {
				fmt.Fprint(&b, "images\x00")
				return b.String()
			}
		}
	}
	return b.String()
}
