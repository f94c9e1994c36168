package ledger

import (
	"errors"

	"github.com/groundhog-ai/groundhog"
)

// optInt is an optional token count.
type optInt struct {
	v  int64
	ok bool
}

func (o optInt) or(p optInt) optInt {
	if o.ok {
		return o
	}
	return p
}

var errBadUsage = errors.New(`"usage" must be an object of token counts`)

// parseUsage normalizes a usage object to groundhog.Usage (InputTokens
// includes cached and cache-write tokens). It understands the OpenAI chat
// (prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens),
// OpenAI responses (input_tokens, output_tokens,
// input_tokens_details.cached_tokens; cache_write_tokens in either details),
// Anthropic (input_tokens excluding cache_read_input_tokens and
// cache_creation_input_tokens, whose 1-hour part is
// cache_creation.ephemeral_1h_input_tokens), Bedrock (inputTokens excluding
// cacheReadInputTokens and cacheWriteInputTokens) and groundhog
// (cached_input_tokens, cache_write_tokens, cache_write_1h_tokens) forms;
// other keys are ignored.
// It reads the object with scanObject instead of encoding/json: on a
// million-line log that is a sixth of Analyze's time saved. The usual
// object (unescaped keys, plain integer counts, no spaces) is read first
// by usageFields.fast in one pass; anything else is read here whole.
func parseUsage(v []byte) (groundhog.Usage, error) {
	var f usageFields
	if f.fast(v) {
		if u, err := f.usage(); err == nil {
			return u, nil
		}
	}
	f = usageFields{}
	bad := errBadUsage // one value, not an allocation per line
	count := func(dst *optInt, val []byte) error {
		if isNull(val) {
			return nil
		}
		n, ok := jsonInt(val)
		if !ok || n < 0 {
			return bad
		}
		*dst = optInt{n, true}
		return nil
	}
	details := func(val []byte) error {
		if isNull(val) {
			return nil
		}
		return scanObject(val, func(key, val []byte) error {
			switch string(key) {
			case "cached_tokens":
				var c optInt
				if err := count(&c, val); err != nil {
					return err
				}
				f.detCached.v, f.detCached.ok = f.detCached.v+c.v, f.detCached.ok || c.ok
			case "cache_write_tokens":
				var w optInt
				if err := count(&w, val); err != nil {
					return err
				}
				f.detWrite.v, f.detWrite.ok = f.detWrite.v+w.v, f.detWrite.ok || w.ok
			}
			return nil
		})
	}
	err := scanObject(v, func(key, val []byte) error {
		switch string(key) {
		case "prompt_tokens_details", "input_tokens_details":
			return details(val)
		case "cache_creation":
			if isNull(val) {
				return nil
			}
			return scanObject(val, func(key, val []byte) error {
				if dst := f.creation(key); dst != nil {
					return count(dst, val)
				}
				return nil
			})
		}
		if dst := f.top(key); dst != nil {
			return count(dst, val)
		}
		return nil
	})
	if err != nil {
		return groundhog.Usage{}, bad
	}
	return f.usage()
}

// usageFields are the counts parseUsage reads from a usage object.
type usageFields struct {
	prompt, completion, input, output, cachedInput, cacheWrite, cacheRead, cacheCreation, detCached, detWrite optInt
	write1h, eph5m, eph1h, brIn, brOut, brRead, brWrite                                                       optInt
}

// top is the count a top-level key of the usage object sets, nil for a
// key that sets none (the two details objects and cache_creation are the
// callers' to read).
func (f *usageFields) top(key []byte) *optInt {
	switch string(key) {
	case "prompt_tokens":
		return &f.prompt
	case "completion_tokens":
		return &f.completion
	case "input_tokens":
		return &f.input
	case "output_tokens":
		return &f.output
	case "cached_input_tokens":
		return &f.cachedInput
	case "cache_write_tokens":
		return &f.cacheWrite
	case "cache_read_input_tokens":
		return &f.cacheRead
	case "cache_creation_input_tokens":
		return &f.cacheCreation
	case "cache_write_1h_tokens":
		return &f.write1h
	case "inputTokens":
		return &f.brIn
	case "outputTokens":
		return &f.brOut
	case "cacheReadInputTokens":
		return &f.brRead
	case "cacheWriteInputTokens":
		return &f.brWrite
	}
	return nil
}

// creation is the count a key of cache_creation sets, or nil.
func (f *usageFields) creation(key []byte) *optInt {
	switch string(key) {
	case "ephemeral_5m_input_tokens":
		return &f.eph5m
	case "ephemeral_1h_input_tokens":
		return &f.eph1h
	}
	return nil
}

// usage is the groundhog.Usage of the counts read.
func (f *usageFields) usage() (groundhog.Usage, error) {
	var u groundhog.Usage
	switch {
	case f.brIn.ok || f.brOut.ok:
		// Bedrock: inputTokens excludes cache reads and writes.
		u.CachedInputTokens, u.CacheWriteTokens = f.brRead.v, f.brWrite.v
		u.InputTokens = f.brIn.v + f.brRead.v + f.brWrite.v
		u.OutputTokens = f.brOut.v
	case f.cacheRead.ok || f.cacheCreation.ok || f.eph5m.ok || f.eph1h.ok:
		// Anthropic: input_tokens excludes cache reads and writes;
		// cache_creation splits the writes by TTL.
		u.CachedInputTokens = f.cacheRead.v
		u.CacheWriteTokens = f.cacheCreation.or(optInt{f.eph5m.v + f.eph1h.v, true}).v
		u.CacheWrite1hTokens = f.eph1h.v
		u.InputTokens = f.input.v + u.CachedInputTokens + u.CacheWriteTokens
		u.OutputTokens = f.output.v
	default:
		u.InputTokens = f.prompt.or(f.input).v
		u.OutputTokens = f.completion.or(f.output).v
		u.CachedInputTokens = f.cachedInput.or(f.detCached).v
		u.CacheWriteTokens = f.cacheWrite.or(f.detWrite).v
		u.CacheWrite1hTokens = f.write1h.v
	}
	if u.CacheWrite1hTokens > u.CacheWriteTokens {
		return groundhog.Usage{}, errBadUsage
	}
	return u, nil
}

// Which object fastObject is reading.
const (
	usageTop = iota
	usageDetails
	usageCreation
)

// fast reads the usual usage object in one pass: no whitespace, keys
// without a backslash, every value 1 to 18 digits or (for
// prompt_tokens_details, input_tokens_details and cache_creation at the top)
// an object of the same. It sets what parseUsage's scanObject reading
// would, and returns false — f then half read, to be thrown away — at
// anything else, valid or not: parseUsage then reads v the general way,
// errors included.
func (f *usageFields) fast(v []byte) bool {
	end, ok := f.fastObject(v, 0, usageTop)
	return ok && end == len(v)
}

// fastObject reads the object at v[i] ('{' expected) as fast does, and
// returns the offset just past it.
func (f *usageFields) fastObject(v []byte, i, in int) (int, bool) {
	if i >= len(v) || v[i] != '{' {
		return 0, false
	}
	i++
	if i < len(v) && v[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(v) || v[i] != '"' {
			return 0, false
		}
		k := i + 1
		for k < len(v) && v[k] != '"' {
			if v[k] == '\\' {
				return 0, false
			}
			k++
		}
		if k+1 >= len(v) || v[k+1] != ':' {
			return 0, false
		}
		key := v[i+1 : k]
		i = k + 2
		if i >= len(v) {
			return 0, false
		}
		if v[i] == '{' {
			if in != usageTop {
				return 0, false
			}
			var sub int
			switch string(key) {
			case "prompt_tokens_details", "input_tokens_details":
				sub = usageDetails
			case "cache_creation":
				sub = usageCreation
			default:
				return 0, false
			}
			end, ok := f.fastObject(v, i, sub)
			if !ok {
				return 0, false
			}
			i = end
		} else {
			j := i
			var n int64
			for j < len(v) && v[j] >= '0' && v[j] <= '9' {
				n = n*10 + int64(v[j]-'0')
				j++
			}
			if j == i || j-i > 18 {
				return 0, false
			}
			i = j
			var dst *optInt
			switch in {
			case usageTop:
				switch string(key) {
				case "prompt_tokens_details", "input_tokens_details", "cache_creation":
					return 0, false // a number where parseUsage wants an object: its error
				}
				dst = f.top(key)
			case usageDetails:
				switch string(key) {
				case "cached_tokens":
					f.detCached.v, f.detCached.ok = f.detCached.v+n, true
				case "cache_write_tokens":
					f.detWrite.v, f.detWrite.ok = f.detWrite.v+n, true
				}
			case usageCreation:
				dst = f.creation(key)
			}
			if dst != nil {
				*dst = optInt{n, true}
			}
		}
		if i >= len(v) {
			return 0, false
		}
		switch v[i] {
		case '}':
			return i + 1, true
		case ',':
			i++
		default:
			return 0, false
		}
	}
}
