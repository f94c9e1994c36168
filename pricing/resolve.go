package pricing

import (
	"strings"

	"github.com/groundhog-ai/groundhog"
)

// Match says how Resolve found a model's entry.
type Match string

// The ways a model name resolves, in the order Lookup tries them.
const (
	MatchExact  Match = "exact"        // the name itself is an entry
	MatchFamily Match = "dated family" // the name without its snapshot date is
	MatchPrefix Match = "prefix"       // the longest "*" entry that prefixes it
)

// Resolve is Lookup that also says which entry priced model and how: entry
// is the table key (the family for a dated name, "gpt-4o-mini*" for a
// prefix). ok is false, and entry empty, for an unknown model.
func (t Table) Resolve(model string) (entry string, how Match, p groundhog.Price, ok bool) {
	if p, ok := t[model]; ok {
		return model, MatchExact, p, true
	}
	if fam := Family(model); fam != model {
		if p, ok := t[fam]; ok {
			return fam, MatchFamily, p, true
		}
	}
	bestLen := -1
	for name, q := range t {
		if prefix, isPrefix := strings.CutSuffix(name, "*"); isPrefix && strings.HasPrefix(model, prefix) &&
			(len(prefix) > bestLen || len(prefix) == bestLen && name < entry) {
			entry, p, bestLen = name, q, len(prefix)
		}
	}
	if bestLen < 0 {
		if entry, ok := t.lookupBedrock(model); ok { // bedrock.go
			return entry, MatchBedrock, t[entry], true
		}
		return "", "", groundhog.Price{}, false
	}
	return entry, MatchPrefix, p, true
}
