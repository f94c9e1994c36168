package groundhog

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Money is an amount of US dollars in picodollars (1e-12 USD). Prices are
// kept in microdollars per million tokens, so tokens × price is an exact
// picodollar amount: no float ever touches money. int64 holds up to about
// 9.2 million dollars, plenty for one call; sums over many calls (reports,
// projections) use Total, which is exact far beyond.
type Money int64

// CostUnknown marks a cost that could not be computed (model missing from the
// price table). It is never added into sums; reports show it as unknown.
const CostUnknown Money = -1

const (
	Picodollar  Money = 1
	Microdollar Money = 1_000_000
	Dollar      Money = 1_000_000_000_000
)

// Known reports whether m is a real amount (not CostUnknown).
func (m Money) Known() bool { return m >= 0 }

// String renders m as a decimal dollar string with six decimals, rounded half
// up at the microdollar ("0.004000"). CostUnknown renders as "unknown".
func (m Money) String() string { return m.Format(6) }

// AppendString appends String() to b: without the string's allocation.
func (m Money) AppendString(b []byte) []byte {
	if m == CostUnknown || m == math.MinInt64 {
		return append(b, m.String()...)
	}
	return m.appendFormat(b, 6)
}

// Format renders m with the given number of decimals (0–12), rounding half
// away from zero.
func (m Money) Format(decimals int) string {
	if m == CostUnknown {
		return "unknown"
	}
	if decimals < 0 {
		decimals = 0
	}
	if decimals > 12 {
		decimals = 12
	}
	if m == math.MinInt64 {
		return TotalOf(m).Format(decimals) // -m does not fit
	}
	if m == 0 && decimals == 6 {
		return "0.000000" // a hit's cost, every time
	}
	var buf [32]byte // sign, 19 digits, point, 12 decimals fit
	return string(m.appendFormat(buf[:0], decimals))
}

// appendFormat appends Format(decimals) for 0 ≤ decimals ≤ 12 and
// m > math.MinInt64, m ≠ CostUnknown, building the string in place (one
// allocation for the result instead of one per part).
func (m Money) appendFormat(b []byte, decimals int) []byte {
	neg := m < 0
	v := int64(m)
	if neg {
		v = -v
	}
	unit := int64(1)
	for i := 0; i < 12-decimals; i++ {
		unit *= 10
	}
	q := v / unit // rounded count of 10^-decimals dollars (no v+unit/2: it overflows near the top)
	if r := v % unit; r >= unit-r {
		q++
	}
	scale := int64(1)
	for i := 0; i < decimals; i++ {
		scale *= 10
	}
	if neg {
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, q/scale, 10)
	if decimals > 0 {
		b = append(b, '.')
		n := len(b)
		b = append(b, "000000000000"[:decimals]...)
		for i, frac := n+decimals-1, q%scale; frac > 0; i, frac = i-1, frac/10 {
			b[i] = byte('0' + frac%10)
		}
	}
	return b
}

// ParseMoney parses a decimal dollar string ("0.004", "24", "1.5e-3" is not
// accepted) into picodollars exactly. More than 12 decimals is an error.
func ParseMoney(s string) (Money, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty amount")
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" {
		return 0, fmt.Errorf("invalid amount %q", s)
	}
	if len(frac) > 12 {
		return 0, fmt.Errorf("amount %q has more than 12 decimals", s)
	}
	for _, c := range whole + frac {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("invalid amount %q", s)
		}
	}
	var w int64
	if whole != "" {
		var err error
		w, err = strconv.ParseInt(whole, 10, 64)
		if err != nil || w > int64(9_000_000) {
			return 0, fmt.Errorf("amount %q out of range", s)
		}
	}
	f := int64(0)
	if frac != "" {
		fv, err := strconv.ParseInt(frac+strings.Repeat("0", 12-len(frac)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid amount %q", s)
		}
		f = fv
	}
	m := Money(w)*Dollar + Money(f)
	if neg {
		m = -m
	}
	return m, nil
}

// Price is what a model costs, in microdollars per million tokens, so that
// tokens × price is picodollars. CacheWrite is the rate of a short-lived
// prompt-cache write (5 or 30 minutes), CacheWrite1h the rate of a one-hour
// write (Anthropic's "ttl": "1h"). CacheStoragePerHour is the storage rent
// of an explicit prompt cache (Gemini's cachedContents), in microdollars per
// million tokens per hour; 0 means not priced (CacheStorageCost is then
// CostUnknown).
type Price struct {
	Input               int64 `json:"input" yaml:"input"`
	CachedInput         int64 `json:"cached_input" yaml:"cached_input"`
	CacheWrite          int64 `json:"cache_write" yaml:"cache_write"`
	CacheWrite1h        int64 `json:"cache_write_1h" yaml:"cache_write_1h"`
	Output              int64 `json:"output" yaml:"output"`
	CacheStoragePerHour int64 `json:"cache_storage_per_mtok_hour,omitempty" yaml:"cache_storage_per_mtok_hour,omitempty"`
}

// CacheStorageCost is the storage rent of an explicit cache of tokens tokens
// that has lived the first seconds whole seconds of its life:
//
//	floor(tokens × CacheStoragePerHour × seconds / 3600)   picodollars
//
// The rent of any stretch of the cache's life, from second a to second b
// (both counted from its creation), is CacheStorageCost(tokens, b) −
// CacheStorageCost(tokens, a): the pieces a biller or a ledger cuts a life
// into (one per UTC day) always add up to the rent of the whole life, to the
// picodollar, whatever the cut. A cache's life is counted in whole seconds:
// elapsed time truncated to the second (CacheLifeSeconds). An unpriced
// storage rate (0), a negative count or a figure that does not fit a Money
// is CostUnknown.
func (p Price) CacheStorageCost(tokens, seconds int64) Money {
	if p.CacheStoragePerHour <= 0 || tokens < 0 || seconds < 0 {
		return CostUnknown
	}
	hi, lo := bits.Mul64(uint64(tokens), uint64(p.CacheStoragePerHour))
	if hi != 0 {
		return CostUnknown
	}
	hi, lo = bits.Mul64(lo, uint64(seconds))
	if hi >= 3600 {
		return CostUnknown
	}
	q, _ := bits.Div64(hi, lo, 3600)
	if q > math.MaxInt64 {
		return CostUnknown
	}
	return Money(q)
}

// CacheLifeSeconds is how many whole seconds of a cache's life lie between
// its creation and t (0 when t is not after it): the argument
// CacheStorageCost takes.
func CacheLifeSeconds(created, t time.Time) int64 {
	if !t.After(created) {
		return 0
	}
	return int64(t.Sub(created) / time.Second)
}

// Cost prices u. InputTokens includes the cached and cache-write tokens; the
// uncached remainder is charged at Input, the reads at CachedInput, the
// short writes (CacheWriteTokens − CacheWrite1hTokens) at CacheWrite and the
// one-hour writes at CacheWrite1h. A cost that does not fit a Money (over
// about $9.2 million for one call: absurd token counts, as a crafted log
// line can hold) or a negative token count is CostUnknown, never a wrapped
// figure.
func (p Price) Cost(u Usage) Money {
	uncached := u.InputTokens - u.CachedInputTokens - u.CacheWriteTokens
	if uncached < 0 {
		uncached = 0
	}
	long := min(max(u.CacheWrite1hTokens, 0), u.CacheWriteTokens)
	short := u.CacheWriteTokens - long
	t := Total{}
	for _, term := range [...][2]int64{{uncached, p.Input}, {u.CachedInputTokens, p.CachedInput},
		{short, p.CacheWrite}, {long, p.CacheWrite1h}, {u.OutputTokens, p.Output}} {
		n, price := term[0], term[1]
		if n < 0 || price < 0 {
			return CostUnknown
		}
		hi, lo := bits.Mul64(uint64(n), uint64(price))
		if hi != 0 || lo > math.MaxInt64 {
			return CostUnknown
		}
		t = t.Add(Money(lo))
	}
	m, ok := t.Money()
	if !ok {
		return CostUnknown
	}
	return m
}

// PromptCacheSaving is the net saving of the provider's prompt cache on a
// call with usage u: what the reads saved against the uncached input rate,
// minus what the writes cost above it,
//
//	reads × (Input − CachedInput) − shortWrites × (CacheWrite − Input) − 1hWrites × (CacheWrite1h − Input)
//
// exact in picodollars; negative when caching cost more than it saved.
// (A net loss of exactly one picodollar would read as CostUnknown; with
// prices in microdollars per million tokens that needs a rate difference of
// one picodollar per token, which no real price has.)
func (p Price) PromptCacheSaving(u Usage) Money {
	long := min(max(u.CacheWrite1hTokens, 0), u.CacheWriteTokens)
	short := u.CacheWriteTokens - long
	return Money(u.CachedInputTokens*(p.Input-p.CachedInput) -
		short*(p.CacheWrite-p.Input) - long*(p.CacheWrite1h-p.Input))
}
