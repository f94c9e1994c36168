package simulate

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH             = 720, 420
	marginL, marginR         = 90, 30
	marginT, marginB         = 40, 60
	plotTicks                = 5
	maxPlotPoints            = 400 // points per curve; long runs are sampled
	fullColor, compactColor  = "#d62728", "#1f77b4"
	axisColor, gridLineColor = "#333333", "#dddddd"
)

// WritePlot draws the cumulative input tokens after each step, from step 1
// to the largest step count of p, for the full transcript and the compact
// state, as an SVG document with axes, tick labels and a legend. The output
// depends only on p (no timestamps), so the same parameters give the same
// bytes.
func WritePlot(w io.Writer, p Params) error {
	if p.StateChangeEvery == 0 {
		p.StateChangeEvery = 1
	}
	if err := p.Validate(); err != nil {
		return err
	}
	maxN := int64(0)
	for _, n := range p.Steps {
		maxN = max(maxN, n)
	}
	t, s, pre := p.TokensPerStep, p.StateTokens, p.PrefixTokens
	maxY := max(FullTranscriptTokens(maxN, t, pre), CompactTokens(maxN, t, s, pre))
	stride := max(1, maxN/maxPlotPoints)
	x := func(n int64) float64 {
		return marginL + float64(n)/float64(maxN)*float64(plotW-marginL-marginR)
	}
	y := func(v int64) float64 {
		return float64(plotH-marginB) - float64(v)/float64(maxY)*float64(plotH-marginT-marginB)
	}
	curve := func(f func(n int64) int64) string {
		var b bytes.Buffer
		for n := int64(0); ; n += stride {
			n = min(n, maxN)
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x(n), y(f(n)))
			if n == maxN {
				break
			}
		}
		return b.String()
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", esc(fmt.Sprintf("Cumulative input tokens: %d tokens a step, state %d tokens", t, s)))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", plotW, plotH)
	// Grid and tick labels.
	b.WriteString(`<g id="y-axis-ticks">` + "\n")
	for i := 0; i <= plotTicks; i++ {
		v := maxY * int64(i) / plotTicks
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", marginL, y(v), plotW-marginR, y(v), gridLineColor)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y(v)+4, esc(groupDigits(v)))
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g id="x-axis-ticks">` + "\n")
	for i := 0; i <= plotTicks; i++ {
		n := maxN * int64(i) / plotTicks
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x(n), plotH-marginB, x(n), plotH-marginB+5, axisColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(n), plotH-marginB+18, n)
	}
	b.WriteString("</g>\n")
	// Axes.
	fmt.Fprintf(&b, `<line id="x-axis" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5"/>`+"\n", marginL, plotH-marginB, plotW-marginR, plotH-marginB, axisColor)
	fmt.Fprintf(&b, `<line id="y-axis" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5"/>`+"\n", marginL, marginT, marginL, plotH-marginB, axisColor)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">step</text>`+"\n", (marginL+plotW-marginR)/2, plotH-marginB+40)
	fmt.Fprintf(&b, `<text x="20" y="%d" text-anchor="middle" transform="rotate(-90 20 %d)">cumulative input tokens</text>`+"\n", (marginT+plotH-marginB)/2, (marginT+plotH-marginB)/2)
	// Curves.
	fmt.Fprintf(&b, `<polyline id="full-transcript" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", fullColor,
		curve(func(n int64) int64 { return FullTranscriptTokens(n, t, pre) }))
	fmt.Fprintf(&b, `<polyline id="compact-state" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", compactColor,
		curve(func(n int64) int64 { return CompactTokens(n, t, s, pre) }))
	// Legend.
	lx, ly := marginL+16, marginT+8
	b.WriteString(`<g id="legend">` + "\n")
	for i, e := range []struct{ color, label string }{
		{fullColor, "full transcript: t·n(n+1)/2"},
		{compactColor, "compact state: n·(state + t)"},
	} {
		yy := ly + i*18
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", lx, yy, lx+24, yy, e.color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+30, yy+4, esc(e.label))
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// groupDigits renders v with thousands separators ("10,100,000").
func groupDigits(v int64) string {
	s := strconv.FormatInt(v, 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
