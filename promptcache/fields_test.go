package promptcache

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// topFields.get against the map it replaced (every top-level member
// assigned in body order: the last duplicate wins), built by the package's
// own members walk: over the cheap-path corpus and random top-level objects
// with repeated, escaped and near-miss keys, for every name the builder
// looks up, every key present and some absent ones. With get scanning from
// the front (the first duplicate winning) it fails.
func TestTopFieldsMatchMap(t *testing.T) {
	names := []string{"model", "messages", "system", "tools", "functions", "input", "instructions",
		"prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "cache_control",
		"tool_choice", "thinking", "stream", "Model", "model ", "", "mode", "modelx"}
	var bodies []namedBody
	bodies = append(bodies, cheapCorpus(t)...)
	rng := rand.New(rand.NewPCG(12, 3))
	vals := []string{`"m"`, `"other"`, `[]`, `[{"role":"user","content":"x"}]`, `null`, `{"type":"ephemeral"}`, `1`, `"x\"y"`, `{}`}
	for i := 0; i < 3000; i++ {
		var sb strings.Builder
		sb.WriteString("{")
		n := rng.IntN(12)
		for k := 0; k < n; k++ {
			if k > 0 {
				sb.WriteString(",")
			}
			key := names[rng.IntN(len(names))]
			switch rng.IntN(6) {
			case 0:
				key = fmt.Sprintf("k%d", rng.IntN(4))
			case 1:
				key = strings.Replace(key, "m", `\u006d`, 1) // escaped: a different raw key
			}
			fmt.Fprintf(&sb, "%q:%s", key, vals[rng.IntN(len(vals))])
			if rng.IntN(3) == 0 {
				sb.WriteString(" ")
			}
		}
		sb.WriteString("}")
		shape := fuzzShapes[rng.IntN(len(fuzzShapes))]
		bodies = append(bodies, namedBody{fmt.Sprint("random/", i), shape, []byte(sb.String())})
	}
	checked, dups := 0, 0
	for _, nb := range bodies {
		p, err := Parse(nb.shape, nb.body)
		if err != nil {
			continue
		}
		old := map[string]span{}
		seen := 0
		if err := members(p.body, p.root, func(m member) error {
			old[string(m.key)] = m.val
			seen++
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", nb.name, err)
		}
		if seen != len(p.fields) {
			t.Fatalf("%s: %d fields recorded, %d members", nb.name, len(p.fields), seen)
		}
		if seen > len(old) {
			dups++
		}
		for _, k := range names {
			if got, want := p.fields.get(k), old[k]; got != want {
				t.Fatalf("%s: get(%q) = %v, the map had %v", nb.name, k, got, want)
			}
		}
		for k, want := range old {
			if got := p.fields.get(k); got != want {
				t.Fatalf("%s: get(%q) = %v, the map had %v", nb.name, k, got, want)
			}
		}
		checked++
	}
	t.Logf("checked %d dups %d", checked, dups)
	if checked < 2000 || dups < 500 {
		t.Fatalf("only %d bodies parsed, %d with a repeated key", checked, dups)
	}
}
