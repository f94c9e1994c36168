package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/fingerprint"
)

// This file decodes one line of Analyze's input into a pendingCall: the
// fields, their types and allowed values (see Analyze). The reading,
// ordering and counting of lines are analyze.go's.

func (p *parser) parse(b []byte, n int64) (pendingCall, error) {
	var (
		ts, op, tenant, req, usage, cost, dur, shape, path []byte
	)
	err := scanObject(b, func(key, val []byte) error {
		switch string(key) {
		case "timestamp":
			ts = val
		case "operation":
			op = val
		case "tenant":
			tenant = val
		case "request":
			req = val
		case "usage":
			usage = val
		case "cost_usd":
			cost = val
		case "duration_ms":
			dur = val
		case "shape":
			shape = val
		case "path":
			path = val
		}
		return nil
	})
	if err != nil {
		return pendingCall{}, err
	}
	c := pendingCall{line: n}
	if ts == nil || isNull(ts) {
		return pendingCall{}, errors.New(`missing "timestamp"`)
	}
	if ns, ok := p.days.fastTimestamp(ts); ok {
		c.t = ns
	} else {
		t, err := parseTimestamp(ts)
		if err != nil {
			return pendingCall{}, err
		}
		c.t = t.UnixNano()
	}
	if c.operation, err = p.optString("operation", op); err != nil {
		return pendingCall{}, err
	}
	if c.tenant, err = p.optString("tenant", tenant); err != nil {
		return pendingCall{}, err
	}
	if c.operation == "" {
		c.operation = DefaultOperation
	}
	if c.tenant == "" {
		c.tenant = groundhog.LocalTenant
	}
	if p.tenant != "" && c.tenant != p.tenant {
		return pendingCall{}, errFiltered // before the fingerprint: the costly part
	}
	if req == nil || isNull(req) {
		return pendingCall{}, errors.New(`missing "request"`)
	}
	sh, err := p.shapeOf(shape, path, req)
	if err != nil {
		return pendingCall{}, err
	}
	fp, err := fingerprint.Compute(fingerprint.Params{Shape: sh, Tenant: c.tenant}, req)
	if err != nil {
		return pendingCall{}, fmt.Errorf("request: %s", groundhog.ErrorMessage(err))
	}
	c.hash, c.model = fp.Hash, fp.Model
	c.sum = decodeHash(c.hash) // here, on a worker, not in the serial collector
	if dur != nil && !isNull(dur) {
		ms, ok := jsonFloat(dur)
		if !ok || ms < 0 || math.IsInf(ms, 0) || ms > 1e12 {
			return pendingCall{}, fmt.Errorf(`"duration_ms" must be a non-negative number of milliseconds`)
		}
		c.duration = int64(math.Round(ms * 1e6))
	}
	// The prompt-cache figures come from usage even when cost_usd gives
	// the cost: a log line carries no saving of its own.
	// (Table.PromptCacheSaving and Table.Cost, with the model's price
	// looked up once per line and remembered per model: see price.)
	price, priced := p.price(c.model)
	hasUsage := usage != nil && !isNull(usage)
	if hasUsage {
		if c.usage, err = parseUsage(usage); err != nil {
			return pendingCall{}, err
		}
	}
	c.pcSaved = groundhog.CostUnknown
	if priced {
		c.pcSaved = price.PromptCacheSaving(c.usage)
	}
	switch {
	case cost != nil && !isNull(cost):
		if c.cost, err = parseUSD(cost); err != nil {
			return pendingCall{}, err
		}
	case hasUsage && priced:
		c.cost = price.Cost(c.usage)
	default:
		c.cost = groundhog.CostUnknown
	}
	return c, nil
}

// price is p.prices.Lookup(model), remembered per model: a model the
// table has no entry for is looked up by scanning every wildcard of the
// table, on every line of that model. The table is not changed while
// Analyze runs.
func (p *parser) price(model string) (groundhog.Price, bool) {
	if e, ok := p.priceOf[model]; ok {
		return e.p, e.ok
	}
	pr, ok := p.prices.Lookup(model)
	if p.priceOf == nil {
		p.priceOf = map[string]priceEntry{}
	}
	if len(p.priceOf) < 1<<10 { // model names of unbounded cardinality: stop remembering
		p.priceOf[model] = priceEntry{pr, ok}
	}
	return pr, ok
}

type priceEntry struct {
	p  groundhog.Price
	ok bool
}

func (p *parser) optString(name string, v []byte) (string, error) {
	if v == nil || isNull(v) {
		return "", nil
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return p.str(v[1 : len(v)-1]), nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("%q must be a string", name)
	}
	return p.str([]byte(s)), nil
}

// shapeOf picks the shape of a line's request (see Analyze).
func (p *parser) shapeOf(shapeField, pathField, req []byte) (groundhog.Shape, error) {
	if shapeField != nil && !isNull(shapeField) {
		if sh, ok := fastShape(shapeField); ok {
			return sh, nil
		}
		s, ok := jsonString(shapeField)
		sh, known := ParseShape(s)
		if !ok || !known {
			return "", fmt.Errorf(`"shape" must be one of %s, or a route path such as /v1/chat/completions`, shapeNames)
		}
		return sh, nil
	}
	if pathField != nil && !isNull(pathField) {
		if sh, ok := fastPath(pathField); ok {
			return sh, nil
		}
		p, ok := plainString(pathField)
		if !ok {
			if err := json.Unmarshal(pathField, &p); err != nil {
				return "", fmt.Errorf(`"path" must be a string`)
			}
		}
		if sh, ok := shapeForPath(p); ok {
			return sh, nil
		}
		return "", fmt.Errorf("path %q is not a provider route groundhog serves", p)
	}
	if p.shape != "" {
		return p.shape, nil
	}
	return inferShape(req), nil
}

func shapeForPath(p string) (groundhog.Shape, bool) {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	p = strings.TrimSuffix(p, "/")
	for _, r := range pathShapes {
		if strings.HasSuffix(p, r.suffix) {
			return r.shape, true
		}
	}
	return "", false
}

// pathShapes are the provider routes Analyze recognizes in a "path" field
// (no suffix is a suffix of another, so the order does not matter; an array,
// not a map literal, so no map is built per line).
var pathShapes = [...]struct {
	suffix string
	shape  groundhog.Shape
}{
	{"/chat/completions", groundhog.ShapeChat},
	{"/responses", groundhog.ShapeResponses},
	{"/embeddings", groundhog.ShapeEmbeddings},
	{"/messages", groundhog.ShapeMessages},
	{"/converse", groundhog.ShapeConverse},
	{"/converse-stream", groundhog.ShapeConverse},
}

// plainString returns the content of the JSON string v when it has no
// escapes, control characters or non-ASCII bytes (the common case, read
// without a decoder); ok is false otherwise, and the caller decodes v.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	c := v[1 : len(v)-1]
	for _, b := range c {
		if b < 0x20 || b >= 0x80 || b == '\\' || b == '"' {
			return "", false
		}
	}
	return string(c), true
}

// inferShape guesses a request's shape from its top-level fields.
func inferShape(req []byte) groundhog.Shape {
	var hasMessages, hasSystem, hasInput, embedHint bool
	var model []byte // decoded
	scanObject(req, func(key, val []byte) error {
		switch string(key) {
		case "messages":
			hasMessages = true
		case "system":
			hasSystem = true
		case "input":
			hasInput = true
		case "encoding_format", "dimensions":
			embedHint = true
		case "model":
			if c, ok := plainContent(val); ok {
				model = c // the common case: no copy, no decoder
			} else {
				m := string(model) // as before: null or a non-string leaves it
				json.Unmarshal(val, &m)
				model = []byte(m)
			}
		}
		return nil
	})
	switch {
	case hasMessages && (hasSystem || bytes.HasPrefix(model, []byte("claude"))):
		return groundhog.ShapeMessages
	case hasMessages:
		return groundhog.ShapeChat
	case hasInput && (embedHint || bytes.Contains(model, []byte("embed"))):
		return groundhog.ShapeEmbeddings
	case hasInput:
		return groundhog.ShapeResponses
	}
	return groundhog.ShapeChat
}

func isNull(v []byte) bool { return string(v) == "null" }

// parseTimestamp reads an RFC 3339 string (a space may replace the T) or a
// number of unix seconds (milliseconds above 1e11).
func parseTimestamp(v []byte) (time.Time, error) {
	if v[0] == '"' {
		s, ok := jsonString(v)
		if !ok {
			return time.Time{}, errors.New(`"timestamp" is not a valid string`)
		}
		if len(s) > 10 && s[10] == ' ' {
			s = s[:10] + "T" + s[11:]
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, fmt.Errorf(`"timestamp" %q is not RFC 3339 (2006-01-02T15:04:05Z)`, s)
		}
		return t, nil
	}
	f, ok := jsonFloat(v)
	if !ok || f < 0 || math.IsInf(f, 0) {
		return time.Time{}, errors.New(`"timestamp" must be an RFC 3339 string or unix seconds`)
	}
	if f > 1e11 {
		f /= 1000
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC(), nil
}

var errBadUSD = errors.New(`"cost_usd" must be a non-negative number of dollars, as a JSON number or a decimal string`)

// parseUSD reads a JSON number of dollars, or a string holding one, into
// exact picodollars. Decimals
// beyond the picodollar are rounded half away from zero.
func parseUSD(v []byte) (groundhog.Money, error) {
	bad := errBadUSD // one value, not an allocation per line
	if len(v) > 0 && v[0] == '"' {
		// A decimal string ("0.004", as many loggers write money): the
		// same number syntax, read from the text, never through a float.
		s, ok := jsonString(v)
		s = strings.TrimSpace(s)
		if !ok || s == "" {
			return 0, bad
		}
		if _, isNum := jsonFloat([]byte(s)); !isNum {
			return 0, bad
		}
		v = []byte(s)
	}
	if len(v) == 0 || v[0] == '-' {
		return 0, bad
	}
	if m, err := groundhog.ParseMoney(string(v)); err == nil {
		return m, nil
	}
	// Exponents or more than 12 decimals: exact rational arithmetic.
	var num json.Number
	if err := json.Unmarshal(v, &num); err != nil {
		return 0, bad
	}
	r, ok := new(big.Rat).SetString(num.String())
	if !ok || r.Sign() < 0 {
		return 0, bad
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(groundhog.Dollar)))
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if rem.Mul(rem, big.NewInt(2)).CmpAbs(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > int64(9_000_000*groundhog.Dollar) {
		return 0, errors.New(`"cost_usd" is out of range`)
	}
	return groundhog.Money(q.Int64()), nil
}

// jsonInt reads a JSON number that is an integer (12, or 12.0, 1.2e1).
func jsonInt(v []byte) (int64, bool) {
	if n, ok := plainDigits(v); ok {
		return n, true // what ParseInt gives, without it
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, true
	}
	f, ok := jsonFloat(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// jsonFloat reads a JSON number. strconv alone would also take "Inf",
// "0x1p3" and "1_0", which are not JSON.
func jsonFloat(v []byte) (float64, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	if n, ok := plainDigits(v); ok && n <= 1<<53 {
		return float64(n), true // exact, as ParseFloat would give it
	}
	for _, c := range v {
		if (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// jsonString reads a JSON string value.
func jsonString(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}
