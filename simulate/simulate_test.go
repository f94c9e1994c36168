package simulate

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/groundhog-ai/groundhog"
	"github.com/groundhog-ai/groundhog/pricing"
)

// The design's worked example: 50 → 100 steps at 2,000 tokens a step.
func TestSeedFigures(t *testing.T) {
	res, err := Run(Params{Steps: []int64{50, 100}, TokensPerStep: 2000, StateTokens: 4000})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int64{{2_550_000, 300_000}, {10_100_000, 600_000}}
	for i, w := range want {
		if g := [2]int64{res.Rows[i].Full.InputTokens, res.Rows[i].Compact.InputTokens}; g != w {
			t.Errorf("row %d: got %v, want %v", i, g, w)
		}
	}
	if r := res.Ratios[0]; r.Full != "3.96" || r.Compact != "2.00" {
		t.Errorf("ratios %+v, want 3.96 and 2.00", r)
	}
	if c := res.Rows[0].Full.CostUSD; c != "unknown" {
		t.Errorf("cost without a price = %q, want unknown", c)
	}
}

// The closed forms, checked against a step-by-step sum for several (n, t, s, p, k).
func TestClosedFormMatchesStepSum(t *testing.T) {
	for _, c := range []struct{ n, t, s, p, k int64 }{
		{1, 1, 0, 0, 1}, {2, 3, 5, 0, 1}, {50, 2000, 4000, 0, 1}, {100, 2000, 4000, 0, 1},
		{7, 123, 456, 789, 3}, {1000, 500, 8000, 1500, 10}, {99, 1, 1, 1, 100},
	} {
		var full, compact int64
		var fu, cu groundhog.Usage
		for k := int64(1); k <= c.n; k++ {
			prompt := c.p + k*c.t
			full += prompt
			compact += c.p + c.s + c.t
			// Prompt cache, step by step: the previous full prompt is read.
			fu.InputTokens += prompt
			if k == 1 {
				fu.CacheWriteTokens += prompt
			} else {
				fu.CachedInputTokens += c.p + (k-1)*c.t
				fu.CacheWriteTokens += c.t
			}
			cu.InputTokens += c.p + c.s + c.t
			if k == 1 {
				cu.CacheWriteTokens += c.p
			} else {
				cu.CachedInputTokens += c.p
			}
			if (k-1)%c.k == 0 {
				cu.CacheWriteTokens += c.s
			} else {
				cu.CachedInputTokens += c.s
			}
		}
		if g := FullTranscriptTokens(c.n, c.t, c.p); g != full {
			t.Errorf("%+v: full %d, step sum %d", c, g, full)
		}
		if g := CompactTokens(c.n, c.t, c.s, c.p); g != compact {
			t.Errorf("%+v: compact %d, step sum %d", c, g, compact)
		}
		if g := FullTranscriptCached(c.n, c.t, c.p); g != fu {
			t.Errorf("%+v: full cached %+v, step sum %+v", c, g, fu)
		}
		if g := CompactCached(c.n, c.t, c.s, c.p, c.k); g != cu {
			t.Errorf("%+v: compact cached %+v, step sum %+v", c, g, cu)
		}
	}
}

func TestCostsExact(t *testing.T) {
	price, _ := pricing.Default().Lookup("sim-large") // $10 in, $1 cached, $12.50 write per M
	res, err := Run(Params{Steps: []int64{50, 100}, TokensPerStep: 2000, StateTokens: 4000, PromptCache: true, Model: "sim-large", Price: &price})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rows[0]
	// 2,550,000 × $10/M; cached: 2,450,000 read × $1/M + 100,000 written × $12.50/M.
	for _, c := range []struct{ got, want string }{
		{r.Full.CostUSD, "25.500000"}, {r.Compact.CostUSD, "3.000000"},
		{r.FullCached.CostUSD, "3.700000"}, {r.CompactCached.CostUSD, "3.500000"},
	} {
		if c.got != c.want {
			t.Errorf("cost %s, want %s", c.got, c.want)
		}
	}
}

func TestRatioString(t *testing.T) {
	for _, c := range []struct {
		num, den int64
		want     string
	}{{10_100_000, 2_550_000, "3.96"}, {600, 300, "2.00"}, {1, 3, "0.33"}, {2, 3, "0.67"}, {5, 0, "n/a"}, {1005, 1000, "1.01"}} {
		if g := RatioString(c.num, c.den); g != c.want {
			t.Errorf("RatioString(%d, %d) = %s, want %s", c.num, c.den, g, c.want)
		}
	}
}

func TestInvalidParams(t *testing.T) {
	for _, p := range []Params{
		{TokensPerStep: 1},
		{Steps: []int64{0}, TokensPerStep: 1},
		{Steps: []int64{10}, TokensPerStep: 0},
		{Steps: []int64{10}, TokensPerStep: 1, StateTokens: -1},
		{Steps: []int64{200_000}, TokensPerStep: 1},
	} {
		if _, err := Run(p); err == nil {
			t.Errorf("Run(%+v) accepted", p)
		}
	}
	price := groundhog.Price{Input: 75_000_000} // $75 per M: 5e15 tokens overflow Money
	if _, err := Run(Params{Steps: []int64{100_000}, TokensPerStep: 1_000_000, Price: &price}); err == nil {
		t.Error("a cost past exact money was accepted")
	}
}

func TestJSONAndTable(t *testing.T) {
	res, _ := Run(Params{Steps: []int64{50, 100}, TokensPerStep: 2000, StateTokens: 4000})
	var buf bytes.Buffer
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Rows []struct {
			Full struct {
				InputTokens int64 `json:"input_tokens"`
			} `json:"full_transcript"`
		} `json:"rows"`
		Ratios []struct {
			Full string `json:"full_transcript"`
		} `json:"ratios"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Rows[1].Full.InputTokens != 10_100_000 || back.Ratios[0].Full != "3.96" {
		t.Errorf("json %s", buf.String())
	}
	buf.Reset()
	if err := WriteTable(&buf, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10,100,000", "2,550,000", "600,000", "×3.96", "×2.00"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestPlotIsSVGWithAxesAndLegend(t *testing.T) {
	var buf bytes.Buffer
	p := Params{Steps: []int64{50, 100}, TokensPerStep: 2000, StateTokens: 4000}
	if err := WritePlot(&buf, p); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	texts := ""
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
			}
			for _, a := range e.Attr {
				if a.Name.Local == "id" {
					ids[a.Value] = e.Name.Local
				}
			}
		case xml.CharData:
			texts += string(e)
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	for id, el := range map[string]string{"x-axis": "line", "y-axis": "line", "legend": "g", "full-transcript": "polyline", "compact-state": "polyline"} {
		if ids[id] != el {
			t.Errorf("no <%s id=%q>", el, id)
		}
	}
	for _, want := range []string{"full transcript", "compact state", "10,100,000", "step"} {
		if !strings.Contains(texts, want) {
			t.Errorf("plot text lacks %q", want)
		}
	}
	var again bytes.Buffer
	_ = WritePlot(&again, p)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("the same parameters drew different bytes")
	}
}
