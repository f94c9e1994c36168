package explicitcache

import (
	"time"

	"github.com/groundhog-ai/groundhog"
)

// Rates are a model's prices as the cost model reads them, in microdollars
// per million tokens (groundhog.Price's unit): Input the uncached prompt
// rate, Cached the rate of a prompt token read from a cache (implicit or
// explicit alike), Creation the rate of a token written into a new
// explicit cache, StoragePerHour the rent of a cached token per hour.
type Rates struct {
	Input, Cached, Creation, StoragePerHour int64
}

// known reports whether every rate the model needs is priced: without a
// storage rate the rent is unknown, and a cache is never created.
func (r Rates) known() bool {
	return r.Input > 0 && r.StoragePerHour > 0 && r.Cached >= 0 && r.Creation >= 0 && r.Cached < r.Input
}

// Estimate is the cost model's verdict on holding an explicit cache of
// Tokens prompt tokens over a horizon (the cache's TTL), with the figures
// that decided it. Money figures are in picodollars, like every cost.
type Estimate struct {
	Tokens int64
	// ExpectedReads is how many reads of the prefix over the horizon only
	// an explicit cache would serve at the cached rate: the reads implicit
	// caching would serve anyway (a request within ImplicitLife of the one
	// before it) are not counted. In thousandths of a read.
	ExpectedMilliReads int64
	Savings            groundhog.Money // ExpectedReads × Tokens × (Input − Cached)
	Creation           groundhog.Money // Tokens × Creation (0 for a cache that exists)
	Rent               groundhog.Money // Tokens × StoragePerHour × horizon
	Net                groundhog.Money // Savings − Creation − Rent
	Pays               bool            // Net > 0 and every rate known
	Reason             string          // why it does not pay, "" when it does
}

// Model is the cost model's parameters.
type Model struct {
	// TTL is the life a created or extended cache is given: the horizon
	// of every estimate.
	TTL time.Duration
	// Window: reuse that has not come back within Window is over; its
	// cache no longer pays.
	Window time.Duration
	// ImplicitLife is how long the provider's implicit cache keeps a
	// prefix after its last use (Gemini: 5 minutes): a request that comes
	// within it reads the prefix at the cached rate without any explicit
	// cache.
	ImplicitLife time.Duration
}

// reads returns, from the times a prefix was used (oldest first, the last
// one the latest use), the explicit-only reads expected over the next
// horizon, in thousandths: the rate of use (uses − 1 over the time they
// span) times the share of the gaps between uses longer than
// ImplicitLife (the uses implicit caching would miss) times horizon. No
// reuse within Window (now − last use) is no reuse at all.
func (m Model) reads(uses []time.Time, now time.Time, horizon time.Duration) int64 {
	n := len(uses)
	if n < 2 || now.Sub(uses[n-1]) > m.Window {
		return 0
	}
	span := uses[n-1].Sub(uses[0])
	missed := 0
	for i := 1; i < n; i++ {
		if uses[i].Sub(uses[i-1]) > m.ImplicitLife {
			missed++
		}
	}
	if span <= 0 || missed == 0 {
		return 0
	}
	// reads = (n−1)/span × missed/(n−1) × horizon = missed × horizon / span.
	return int64(missed) * int64(horizon/time.Millisecond) * 1000 / int64(span/time.Millisecond)
}

// CreateEstimate is the verdict on creating a cache of tokens tokens now,
// for a request whose prefix was used at uses (oldest first; the last is
// this request). The request itself counts as a read when implicit caching
// would miss it (its prefix's previous use is more than ImplicitLife ago);
// then the reads expected over TTL. Creation is billed once, rent over TTL.
func (m Model) CreateEstimate(r Rates, tokens int64, uses []time.Time, now time.Time) Estimate {
	e := Estimate{Tokens: tokens}
	if !r.known() {
		e.Reason = "unknown price"
		e.Savings, e.Creation, e.Rent, e.Net = groundhog.CostUnknown, groundhog.CostUnknown, groundhog.CostUnknown, groundhog.CostUnknown
		return e
	}
	milli := m.reads(uses, now, m.TTL)
	if n := len(uses); n >= 2 && uses[n-1].Sub(uses[n-2]) > m.ImplicitLife {
		milli += 1000
	}
	e.ExpectedMilliReads = milli
	e.Creation = groundhog.Money(tokens * r.Creation)
	return m.finish(e, r, tokens)
}

// KeepEstimate is the verdict on keeping (extending) an existing cache of
// tokens tokens for another TTL from now: the reads expected over TTL
// against the rent of TTL, no creation.
func (m Model) KeepEstimate(r Rates, tokens int64, uses []time.Time, now time.Time) Estimate {
	e := Estimate{Tokens: tokens}
	if !r.known() {
		e.Reason = "unknown price"
		e.Savings, e.Rent, e.Net = groundhog.CostUnknown, groundhog.CostUnknown, groundhog.CostUnknown
		return e
	}
	e.ExpectedMilliReads = m.reads(uses, now, m.TTL)
	return m.finish(e, r, tokens)
}

func (m Model) finish(e Estimate, r Rates, tokens int64) Estimate {
	read := tokens * (r.Input - r.Cached) // picodollars saved per read
	e.Savings = groundhog.Money(read*(e.ExpectedMilliReads/1000) + read*(e.ExpectedMilliReads%1000)/1000)
	// tokens × µ$/Mtok/h × seconds / 3600: the rent as a biller counts it
	// per whole second.
	e.Rent = groundhog.Money(tokens * r.StoragePerHour * int64(m.TTL/time.Second) / 3600)
	e.Net = e.Savings - e.Creation - e.Rent
	e.Pays = e.Net > 0
	switch {
	case e.ExpectedMilliReads == 0:
		e.Reason = "no reads implicit caching would miss"
	case !e.Pays:
		e.Reason = "savings do not cover creation and rent"
	}
	return e
}
