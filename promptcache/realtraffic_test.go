package promptcache_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/promptcache"
	"github.com/groundhog-ai/groundhog/realtraffic"
	"github.com/groundhog-ai/groundhog/wire"
)

// recordedTurn is one recorded model call of a conversation.
type recordedTurn struct {
	id    string
	shape groundhog.Shape
	body  []byte
	usage groundhog.Usage
}

// conversations returns the recorded conversations (folders with at least
// two successful model calls whose requests were recorded), each turn
// with its request and the usage the provider reported.
func conversations(t *testing.T, dir string) map[string][]recordedTurn {
	t.Helper()
	metas, err := filepath.Glob(filepath.Join(dir, "*", "*", "*.meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(metas)
	convs := map[string][]recordedTurn{}
	for _, mp := range metas {
		raw, err := os.ReadFile(mp)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Route       string          `json:"route"`
			Status      int             `json:"status"`
			Synthesized bool            `json:"request_synthesized"`
			RequestFile string          `json:"request_file"`
			Stream      bool            `json:"stream"`
			Usage       json.RawMessage `json:"recorded_usage"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", mp, err)
		}
		shape, ok := wire.ShapeForPath(m.Route)
		if !ok || shape == groundhog.ShapeEmbeddings || m.Status != 200 || m.Synthesized || !strings.HasSuffix(m.RequestFile, ".json") {
			continue
		}
		body, err := os.ReadFile(filepath.Join(filepath.Dir(mp), m.RequestFile))
		if err != nil {
			t.Fatal(err)
		}
		u, ok := recordedUsage(t, shape, m.Stream, m.Usage)
		if !ok {
			continue
		}
		conv := filepath.Dir(mp)
		rel, _ := filepath.Rel(dir, mp)
		convs[conv] = append(convs[conv], recordedTurn{id: strings.TrimSuffix(rel, ".meta.json"), shape: shape, body: body, usage: u})
	}
	for k, v := range convs {
		if len(v) < 2 {
			delete(convs, k)
		}
	}
	return convs
}

// recordedUsage reads the provider's usage as the ledger would: a stream's
// usage objects merged in order (Anthropic's message_start carries the
// input side, the last message_delta the final counts).
func recordedUsage(t *testing.T, shape groundhog.Shape, stream bool, raw json.RawMessage) (groundhog.Usage, bool) {
	t.Helper()
	if len(raw) == 0 || string(raw) == "null" {
		return groundhog.Usage{}, false
	}
	merged := map[string]json.RawMessage{}
	if stream {
		var evs []struct {
			Usage map[string]json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal(raw, &evs); err != nil || len(evs) == 0 {
			return groundhog.Usage{}, false
		}
		for _, e := range evs {
			for k, v := range e.Usage {
				if string(v) != "null" {
					merged[k] = v
				}
			}
		}
	} else if err := json.Unmarshal(raw, &merged); err != nil {
		return groundhog.Usage{}, false
	}
	b, _ := json.Marshal(map[string]any{"usage": merged})
	_, u, err := wire.UsageFromBody(shape, b)
	if err != nil || u.InputTokens == 0 {
		return groundhog.Usage{}, false
	}
	return u, true
}

// Diagnosis against the provider's own reads: every multi-turn recorded
// conversation goes through a Tracker turn by turn with the usage the real
// provider reported. For turn k, groundhog's reusable prefix (Expected) is
// compared with the tokens the provider read from its cache: a break must
// be named exactly where the provider read less than the reusable prefix,
// and never where it read all of it. The agreement is logged (run with -v).
func TestDiagnosisAgreesWithRecordedReads(t *testing.T) {
	dir := realtraffic.Folder(t)
	convs := conversations(t, dir)
	if len(convs) == 0 {
		t.Fatal("no recorded multi-turn conversation")
	}
	names := make([]string, 0, len(convs))
	for k := range convs {
		names = append(names, k)
	}
	sort.Strings(names)
	type tally struct{ turns, agree int }
	var all tally
	disagree := map[string]int{}
	breaks := map[string]int{}
	var details []string
	ctx := context.Background()
	for _, name := range names {
		tr := promptcache.NewTracker(promptcache.Config{})
		var prevStored int64 // Anthropic: the previous turn's prefix up to its last breakpoint (read + write)
		for k, turn := range convs[name] {
			call, err := tr.Before(ctx, &promptcache.Request{Tenant: "t", Operation: "recorded", Shape: turn.shape, Body: turn.body})
			if err != nil {
				t.Errorf("%s: %v", turn.id, err)
				break
			}
			res := tr.After(ctx, call, turn.usage)
			stored := prevStored
			prevStored = turn.usage.CachedInputTokens + turn.usage.CacheWriteTokens
			if k == 0 {
				continue // nothing earlier to reuse
			}
			p, _ := promptcache.Parse(turn.shape, turn.body)
			if res.Break && res.Cause != promptcache.CauseBelowMinimum && res.Expected < int64(promptcache.ModelRules(turn.shape, p.Model).MinTokens) {
				t.Errorf("%s: break %s named for a %d-token prefix, under the model's minimum: nothing could be cached", turn.id, res.Cause, res.Expected)
			}
			if turn.shape == groundhog.ShapeMessages && res.Break && stored > 0 && turn.usage.CachedInputTokens >= stored {
				t.Errorf("%s: break %s named although the provider read %d tokens, all the previous turn stored (%d)", turn.id, res.Cause, res.Read, stored)
			}
			all.turns++
			tol := max(res.Expected/50, 16, int64(promptcache.ModelRules(turn.shape, "").Step))
			readAll := turn.usage.CachedInputTokens+tol >= res.Expected
			switch {
			case readAll && res.Break:
				t.Errorf("%s: break %s named although the provider read %d of a %d-token reusable prefix", turn.id, res.Cause, res.Read, res.Expected)
			case !readAll && !res.Break:
				t.Errorf("%s: the provider read %d of a %d-token reusable prefix and no break was named", turn.id, res.Read, res.Expected)
			}
			switch {
			case res.Break:
				// groundhog expected more than the provider read, and says why.
				all.agree++
				breaks[string(res.Cause)]++
				details = append(details, fmt.Sprintf("%s: break %s, expected %d, provider read %d", turn.id, res.Cause, res.Expected, turn.usage.CachedInputTokens))
			case turn.usage.CachedInputTokens > res.Expected+max(res.Expected/50, 128):
				// The provider read more than groundhog thought reusable:
				// groundhog's expectation was wrong, by the kind of turn.
				why := "read_more_than_expected"
				if res.Expected == 0 {
					why = "read_where_nothing_expected"
				}
				disagree[why]++
				details = append(details, fmt.Sprintf("%s: %s, expected %d, provider read %d (input %d)", turn.id, why, res.Expected, turn.usage.CachedInputTokens, turn.usage.InputTokens))
			default:
				all.agree++
			}
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "diagnosis vs the providers' reads: %d conversations, %d later turns, %d agree", len(convs), all.turns, all.agree)
	for _, m := range []struct {
		label string
		by    map[string]int
	}{{"breaks named (provider read less)", breaks}, {"disagree", disagree}} {
		keys := make([]string, 0, len(m.by))
		for k := range m.by {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "\n  %s:", m.label)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%d", k, m.by[k])
		}
	}
	for _, d := range details {
		fmt.Fprintf(&b, "\n    %s", d)
	}
	t.Log(b.String())
}
