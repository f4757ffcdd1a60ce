package baseline

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// maxLabels is the most outliers named on a plot; the table under it
// names them all.
const maxLabels = 8

// section is one metric's part of the page.
type section struct {
	Title    string
	Summary  string
	SVG      template.HTML
	Outliers []Sample
	Unit     string
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>vigil fleet baseline</title>
<style>
body{font-family:sans-serif;margin:2em;max-width:60em}
h2{font-size:1.1em;margin-top:2em}
table{border-collapse:collapse;font-size:.9em}td,th{padding:.1em .8em;text-align:left;border-bottom:1px solid #ddd}
pre{background:#f4f4f4;padding:1em;overflow-x:auto}
</style></head><body>
<h1>vigil fleet baseline</h1>
<p>Rule: {{.Rule}}.</p>
{{range $s := .Sections}}<h2>{{.Title}}</h2>
<p>{{.Summary}}</p>
{{.SVG}}
{{if .Outliers}}<table><tr><th>outlier</th><th>value</th></tr>
{{range .Outliers}}<tr><td>{{.Label}}</td><td>{{.Value}} {{$s.Unit}}</td></tr>
{{end}}</table>{{end}}
{{end}}<h2>Proposed thresholds</h2>
<pre>{{.TOML}}</pre>
</body></html>
`))

// WriteHTML writes one self-contained page (inline SVG, no external
// assets): a histogram per metric with the current and proposed limits
// drawn and the outliers named, then the proposed TOML.
func WriteHTML(w io.Writer, groups []*Group) error {
	var secs []section
	for _, g := range groups {
		svg, err := plotGroup(g)
		if err != nil {
			return fmt.Errorf("html: %s %s: %w", g.Check, g.Name, err)
		}
		s := g.Stats
		secs = append(secs, section{
			Title: fmt.Sprintf("%s %s %s (%s)", orDash(g.Model), g.Check, g.Name, g.Unit),
			Summary: fmt.Sprintf("n %d, median %s, MAD %s, p1 %s, p5 %s, p95 %s, p99 %s; current %s, proposed %s, outliers %d",
				s.N, num(s.Median), num(s.MAD), num(s.P1), num(s.P5), num(s.P95), num(s.P99),
				limitText(g.Current, g.Lower), proposedText(g), len(g.Outliers)),
			SVG: svg, Outliers: g.Outliers, Unit: g.Unit,
		})
	}
	var toml bytes.Buffer
	if err := WriteTOML(&toml, groups); err != nil {
		return err
	}
	err := page.Execute(w, struct {
		Rule     string
		Sections []section
		TOML     string
	}{Rule, secs, toml.String()})
	if err != nil {
		return fmt.Errorf("html: %w", err)
	}
	return nil
}

// plotGroup draws g's histogram with its limits and outliers as SVG.
// The x axis spans the values (limitRange); a limit far outside them is
// named in the legend, not drawn, so that the bars do not all sit in one
// corner. The plot is drawn inside a margin, with room between legend
// entries and under the tick labels, because the browser may render the
// text in a wider font than the one the layout was measured with.
func plotGroup(g *Group) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s %s", orDash(g.Model), g.Check, g.Name)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = g.Unit
	p.X.Label.Padding = vg.Points(4)
	p.Y.Label.Text = countNoun(g)
	p.X.Tick.Marker = compactTicks{}
	p.Y.Tick.Marker = compactTicks{}
	vals := make(plotter.Values, len(g.Samples))
	for i, s := range g.Samples {
		vals[i] = s.Value
	}
	h, err := plotter.NewHist(vals, 40)
	if err != nil {
		return "", err
	}
	h.FillColor = color.RGBA{R: 120, G: 150, B: 200, A: 255}
	p.Add(h)
	top := 1.0
	for _, b := range h.Bins {
		top = max(top, b.Weight)
	}
	lo, hi := limitRange(g)
	if err := addLimits(p, g, top, lo, hi); err != nil {
		return "", err
	}
	if err := addOutliers(p, g.Outliers, top); err != nil {
		return "", err
	}
	// Room above the bars for the legend, and beside the outliers on the
	// bad side for their names.
	p.Legend.Top = true
	p.Legend.Padding = vg.Points(3)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Y.Min, p.Y.Max = 0, 1.9*top
	p.X.Min, p.X.Max = lo, hi
	if g.Lower && len(g.Outliers) > 0 {
		p.X.Max += 0.15 * (p.X.Max - p.X.Min)
	}
	c := vgsvg.New(7*vg.Inch, 3.5*vg.Inch)
	p.Draw(draw.Crop(draw.New(c), vg.Points(6), -vg.Points(24), vg.Points(4), -vg.Points(6)))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	svg := b.Bytes()
	if i := bytes.Index(svg, []byte("<svg")); i > 0 {
		svg = svg[i:] // inline: no XML declaration
	}
	return template.HTML(svg), nil
}

// countNoun is what g's histogram counts: nodes for values without a
// device or of a node's file system ("/scratch"), else devices.
func countNoun(g *Group) string {
	for _, s := range g.Samples {
		if s.Device != "" && !strings.HasPrefix(s.Device, "/") {
			return "devices"
		}
	}
	return "nodes"
}

// limitRange is the x axis of g's plot: the values' range, widened by a
// tenth of it (at least 5% of the median) each way, and to each limit
// that lies within five times that range of the values. A limit further
// away is left off the chart (addLimits names it).
func limitRange(g *Group) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range g.Samples {
		lo, hi = math.Min(lo, s.Value), math.Max(hi, s.Value)
	}
	pad := math.Max(0.1*(hi-lo), 0.05*math.Abs(g.Stats.Median))
	if pad == 0 {
		pad = 1
	}
	vlo, vhi := lo, hi
	lo, hi = lo-pad, hi+pad
	for _, l := range limits(g) {
		if onChart(l.x, vlo, vhi) {
			lo, hi = math.Min(lo, l.x-pad), math.Max(hi, l.x+pad)
		}
	}
	if vlo >= 0 {
		lo = math.Max(lo, 0) // no negative throughput or latency
	}
	return lo, hi
}

// onChart reports whether a limit at x is close enough to the values in
// [lo, hi] to be drawn: within five times their spread (or half the
// largest value) of them.
func onChart(x, lo, hi float64) bool {
	reach := 5 * math.Max(hi-lo, 0.1*math.Abs(hi))
	return x >= lo-reach && x <= hi+reach
}

// limit is a limit line of a plot.
type limit struct {
	x      float64
	name   string
	c      color.Color
	dashed bool
}

// limits are g's current and proposed limits.
func limits(g *Group) []limit {
	var out []limit
	if g.Current != nil {
		out = append(out, limit{*g.Current, "current " + limitText(g.Current, g.Lower), color.RGBA{R: 110, G: 110, B: 110, A: 255}, true})
	}
	if g.HasProposal {
		out = append(out, limit{g.Proposed, "proposed " + proposedText(g), color.RGBA{R: 200, G: 30, B: 30, A: 255}, false})
	}
	return out
}

// addLimits draws g's limits within [lo, hi]; one outside is named in the
// legend as off the chart.
func addLimits(p *plot.Plot, g *Group, top, lo, hi float64) error {
	for _, l := range limits(g) {
		name := l.name
		if l.x < lo || l.x > hi {
			name += " (off the chart)"
		}
		if err := addLimit(p, l.x, top, l.c, l.dashed, name); err != nil {
			return err
		}
	}
	return nil
}

// compactTicks are plot.DefaultTicks with labels in the fewest digits
// that tell them apart ("1750", not "1750.00").
type compactTicks struct{}

// Ticks implements plot.Ticker.
func (compactTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
}

// addLimit draws a vertical line at x, dashed or solid, with a legend entry.
func addLimit(p *plot.Plot, x, top float64, c color.Color, dashed bool, name string) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
	if err != nil {
		return err
	}
	l.Color, l.Width = c, vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// addOutliers marks the outliers on the x axis and names the first
// maxLabels of them, staggered so that neighbours stay readable.
func addOutliers(p *plot.Plot, os []Sample, top float64) error {
	if len(os) == 0 {
		return nil
	}
	var pts plotter.XYs
	var lab plotter.XYLabels
	for i, o := range os {
		pts = append(pts, plotter.XY{X: o.Value, Y: 0})
		if i < maxLabels {
			lab.XYs = append(lab.XYs, plotter.XY{X: o.Value, Y: top * (0.15 + 0.2*float64(i%5))})
			lab.Labels = append(lab.Labels, o.Label())
		}
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.Color = color.RGBA{R: 200, G: 30, B: 30, A: 255}
	l, err := plotter.NewLabels(lab)
	if err != nil {
		return err
	}
	p.Add(s, l)
	p.Legend.Add(fmt.Sprintf("outliers (%d)", len(os)), s)
	return nil
}
