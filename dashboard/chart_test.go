package dashboard

import (
	"fmt"
	"strconv"
	"testing"
)

func TestNiceStep(t *testing.T) {
	tests := []struct {
		max       float64
		integer   bool
		step, top float64
	}{
		{0, true, 1, 1},
		{-3, false, 1, 1},
		{1, true, 1, 1},
		{3, true, 1, 3},
		{7, true, 2, 8},
		{792, true, 200, 800},
		{801, true, 200, 1000},
		{40000, true, 10000, 40000},
		{2.87, false, 1, 3},
		{0.0123, false, 0.0025, 0.0125},
		{0.004, false, 0.001, 0.004},
		{12, true, 5, 15}, // 2.5 is not an integer step
	}
	for _, tt := range tests {
		step, top := niceStep(tt.max, tt.integer)
		if !near(step, tt.step) || !near(top, tt.top) {
			t.Errorf("niceStep(%v, %v) = %v, %v; want %v, %v", tt.max, tt.integer, step, top, tt.step, tt.top)
		}
		if tt.max > 0 && (top < tt.max || top/step > maxTickCount+1e-9) {
			t.Errorf("niceStep(%v): top %v, %v ticks", tt.max, top, top/step)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-12 && d > -1e-12 }

func TestAxisLabel(t *testing.T) {
	tests := []struct {
		v, step float64
		money   bool
		want    string
	}{
		{0, 200, false, "0"},
		{800, 200, false, "800"},
		{10000, 10000, false, "10k"},
		{2500, 500, false, "2500"},
		{3000, 1000, false, "3k"},
		{1.5e6, 5e5, false, "1.5M"},
		{2, 1, true, "$2"},
		{0, 0.2, true, "$0"},
		{0.4, 0.2, true, "$0.4"},
		{0.0075, 0.0025, true, "$0.0075"},
		{0.5, 0.5, true, "$0.5"},
		{25000, 5000, true, "$25k"},
	}
	for _, tt := range tests {
		if got := axisLabel(tt.v, tt.step, tt.money); got != tt.want {
			t.Errorf("axisLabel(%v, %v, %v) = %q, want %q", tt.v, tt.step, tt.money, got, tt.want)
		}
	}
}

func TestTrimMoney(t *testing.T) {
	for in, want := range map[string]string{
		"24.000000": "24.00", "0.004000": "0.004000", "1.230000": "1.23", "0.000001": "0.000001", "7": "7",
	} {
		if got := trimMoney(in); got != want {
			t.Errorf("trimMoney(%q) = %q, want %q", in, got, want)
		}
	}
}

func mustF(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestLayout checks the geometry: bars stand on the axis with heights
// proportional to their values, stacked segments touch, every bar lies in
// the plot, and day labels never overlap and always include the last day.
func TestLayout(t *testing.T) {
	for _, n := range []int{1, 7, 14, 30, 90} {
		for _, stacked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d days stacked=%v", n, stacked), func(t *testing.T) {
				days := make([]string, n)
				a := series{Name: "a", Class: "s-a", Field: "calls"}
				b := series{Name: "b", Class: "s-b", Field: "repeats"}
				for i := range days {
					days[i] = fmt.Sprintf("2025-01-%02d", i%28+1)
					a.vals = append(a.vals, float64(10*i+10))
					a.texts = append(a.texts, strconv.Itoa(10*i+10))
					b.vals = append(b.vals, float64(3*i))
					b.texts = append(b.texts, strconv.Itoa(3*i))
				}
				c := layout(chartView{ID: "x"}, days, []series{a, b}, stacked, false)
				if len(c.Bars) != 2*n {
					t.Fatalf("%d bars, want %d", len(c.Bars), 2*n)
				}
				top := 0.0
				if len(c.YTicks) > 0 {
					top = mustF(t, c.YTicks[len(c.YTicks)-1].Label)
				}
				scale := float64(plotBottom-plotTop) / top
				for i := 0; i < n; i++ {
					ba, bb := c.Bars[2*i], c.Bars[2*i+1]
					ha, hb := mustF(t, ba.H), mustF(t, bb.H)
					if d := ha - a.vals[i]*scale; d > 0.1 || d < -0.1 {
						t.Errorf("day %d: bar a height %v for %v (scale %v)", i, ha, a.vals[i], scale)
					}
					if d := hb - b.vals[i]*scale; d > 0.1 || d < -0.1 {
						t.Errorf("day %d: bar b height %v for %v", i, hb, b.vals[i])
					}
					ya := mustF(t, ba.Y)
					if stacked {
						if d := mustF(t, bb.Y) + hb - ya; d > 0.11 || d < -0.11 {
							t.Errorf("day %d: stacked segments do not touch", i)
						}
					} else if d := ya + ha - plotBottom; d > 0.1 || d < -0.1 {
						t.Errorf("day %d: bar does not stand on the axis", i)
					}
					for _, br := range []bar{ba, bb} {
						x, w := mustF(t, br.X), mustF(t, br.W)
						if x < plotLeft-0.05 || x+w > plotRight+0.05 || mustF(t, br.Y) < plotTop-0.05 {
							t.Errorf("day %d: bar %+v outside the plot", i, br)
						}
					}
				}
				if len(c.XLabels) == 0 || c.XLabels[len(c.XLabels)-1].Label != dayLabel(days[n-1]) {
					t.Errorf("last day not labelled: %+v", c.XLabels)
				}
				for i := 1; i < len(c.XLabels); i++ {
					gap := mustF(t, c.XLabels[i].Pos) - mustF(t, c.XLabels[i-1].Pos)
					if gap < 6*labelCharW {
						t.Errorf("labels %d and %d overlap: %v apart", i-1, i, gap)
					}
				}
			})
		}
	}
}
