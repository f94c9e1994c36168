package dashboard

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The charts are laid out here, in Go, and the template only prints the
// coordinates: html/template escapes every text and attribute it writes, and
// no geometry is computed from strings a client sent.

// Chart geometry, in SVG user units (the viewBox); the SVG scales to its
// container's width.
const (
	chartW       = 420
	chartH       = 260
	plotLeft     = 54
	plotRight    = chartW - 12
	plotTop      = 40
	plotBottom   = chartH - 30
	legendY      = 16
	labelCharW   = 6.8 // average glyph width at the 12-unit chart font
	barGapFrac   = 0.22
	maxTickCount = 5
)

// series is one quantity drawn per day.
type series struct {
	Name  string // legend text
	Class string // CSS class giving its colour
	Field string // report JSON key, for data-field
	// values per day, for drawing (float) and for data-value/tooltips (text:
	// the exact number as the JSON report writes it).
	vals  []float64
	texts []string
}

// chartView is what the template draws for one chart.
type chartView struct {
	ID       string
	Title    string // visible heading and SVG <title>
	Desc     string // SVG <desc> / aria-label: what is plotted, for whom, which days
	W, H     int
	PlotL    string
	PlotR    string
	PlotT    string
	PlotB    string
	CX, CY   string // centre of the plot, for the "no data" note
	AxisNote string // y axis unit
	Legend   []legendItem
	YTicks   []tick
	XLabels  []tick
	Bars     []bar
	Empty    bool
}

type legendItem struct {
	X, TextX, Y, TextY string
	Class, Name        string
}

type tick struct {
	Pos   string // y of a horizontal tick, x of a day label
	Label string
}

type bar struct {
	X, Y, W, H string
	Class      string
	Title      string // tooltip: day, series, value
	Day        string
	Field      string
	Value      string
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// niceStep returns a step of 1, 2, 2.5 or 5 × 10^k that divides [0, max]
// into at most maxTickCount intervals, and the axis top (a multiple of it).
// integer forces steps ≥ 1 (counts have no fractional ticks).
func niceStep(max float64, integer bool) (step, top float64) {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		return 1, 1
	}
	raw := max / maxTickCount
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	norm := raw / mag
	switch {
	case norm <= 1:
		step = mag
	case norm <= 2:
		step = 2 * mag
	case norm <= 2.5:
		step = 2.5 * mag
	case norm <= 5:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	if integer && step < 1 {
		step = 1
	}
	if integer && step != math.Trunc(step) {
		step = 5 // 2.5 → 2 could need one more interval than allowed
	}
	top = math.Ceil(max/step-1e-9) * step
	if top <= 0 {
		top = step
	}
	return step, top
}

// decimalsFor returns how many decimals show a multiple of step exactly
// (up to 6).
func decimalsFor(step float64) int {
	for d := 0; d < 6; d++ {
		p := math.Pow(10, float64(d))
		if math.Abs(step*p-math.Round(step*p)) < 1e-6*p*step+1e-9 {
			return d
		}
	}
	return 6
}

// axisLabel renders a tick value: compact (k, M) for large values, dollars
// with the decimals the step needs for money.
func axisLabel(v, step float64, money bool) string {
	prefix := ""
	if money {
		prefix = "$"
	}
	short := func(v, step float64) string {
		s := strconv.FormatFloat(v, 'f', decimalsFor(step), 64)
		if strings.Contains(s, ".") {
			s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	switch {
	case v == 0:
		return prefix + "0"
	case v >= 1e6:
		return prefix + short(v/1e6, step/1e6) + "M"
	case v >= 1e4 || (v >= 1e3 && step >= 1e3):
		return prefix + short(v/1e3, step/1e3) + "k"
	}
	return prefix + strconv.FormatFloat(v, 'f', decimalsFor(step), 64)
}

// dayLabel turns "2025-03-14" into "Mar 14".
func dayLabel(day string) string {
	t, err := time.Parse("2006-01-02", day)
	if err != nil {
		return day
	}
	return t.Format("Jan 2")
}

// layout computes a chart of days × series: grouped bars side by side, or
// stacked bars (series drawn bottom to top) when stacked is set.
func layout(c chartView, days []string, ss []series, stacked, money bool) chartView {
	c.W, c.H = chartW, chartH
	c.PlotL, c.PlotR, c.PlotT, c.PlotB = f1(plotLeft), f1(plotRight), f1(plotTop), f1(plotBottom)
	c.CX, c.CY = f1((plotLeft+plotRight)/2), f1((plotTop+plotBottom)/2)

	// Legend: swatch and name, laid out left to right above the plot.
	x := float64(plotLeft)
	for _, s := range ss {
		c.Legend = append(c.Legend, legendItem{
			X: f1(x), Y: f1(legendY - 9), TextX: f1(x + 14), TextY: f1(legendY),
			Class: s.Class, Name: s.Name,
		})
		x += 14 + float64(len(s.Name))*labelCharW + 18
	}

	max := 0.0
	for i := range days {
		sum := 0.0
		for _, s := range ss {
			if stacked {
				sum += s.vals[i]
			} else if s.vals[i] > max {
				max = s.vals[i]
			}
		}
		if sum > max {
			max = sum
		}
	}
	c.Empty = max == 0
	step, top := niceStep(max, !money)
	ph := float64(plotBottom - plotTop)
	y := func(v float64) float64 { return plotBottom - v/top*ph }
	for v := 0.0; v <= top+step/2; v += step {
		c.YTicks = append(c.YTicks, tick{Pos: f1(y(v)), Label: axisLabel(v, step, money)})
	}

	n := len(days)
	if n == 0 {
		return c
	}
	slot := float64(plotRight-plotLeft) / float64(n)
	gap := slot * barGapFrac
	// Label every k-th day (always the last, the day the page is about) so
	// labels never overlap however many days are shown.
	k := int(math.Ceil(6 * labelCharW * 1.15 / slot))
	if k < 1 {
		k = 1
	}
	for i, day := range days {
		x0 := plotLeft + float64(i)*slot + gap/2
		w := slot - gap
		if (n-1-i)%k == 0 {
			c.XLabels = append(c.XLabels, tick{Pos: f1(x0 + w/2), Label: dayLabel(day)})
		}
		base := 0.0
		for j, s := range ss {
			v := s.vals[i]
			b := bar{Class: s.Class, Day: day, Field: s.Field, Value: s.texts[i],
				Title: dayLabel(day) + ": " + s.Name + " " + tooltipValue(s.texts[i], money)}
			if stacked {
				b.X, b.W = f1(x0), f1(w)
				b.Y, b.H = f1(y(base+v)), f1(y(base)-y(base+v))
				base += v
			} else {
				bw := w / float64(len(ss))
				b.X, b.W = f1(x0+float64(j)*bw), f1(bw)
				b.Y, b.H = f1(y(v)), f1(plotBottom-y(v))
			}
			c.Bars = append(c.Bars, b)
		}
	}
	return c
}

// tooltipValue shows an exact JSON number in a tooltip: money with a dollar
// sign and cents (or all six decimals below a cent), counts as they are.
func tooltipValue(text string, money bool) string {
	if !money {
		return text
	}
	return "$" + trimMoney(text)
}

// trimMoney shortens a six-decimal dollar string to cents when the dropped
// digits are zero ("24.000000" → "24.00"); otherwise it keeps them all, so a
// tooltip never rounds.
func trimMoney(s string) string {
	whole, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) <= 2 {
		return s
	}
	if strings.Trim(frac[2:], "0") == "" {
		return whole + "." + frac[:2]
	}
	return s
}
