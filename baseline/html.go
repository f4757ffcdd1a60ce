package baseline

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"

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
func plotGroup(g *Group) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s %s", orDash(g.Model), g.Check, g.Name)
	p.X.Label.Text = g.Unit
	p.Y.Label.Text = "devices"
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
	if g.Current != nil {
		if err := addLimit(p, *g.Current, top, color.RGBA{R: 110, G: 110, B: 110, A: 255}, true, "current "+limitText(g.Current, g.Lower)); err != nil {
			return "", err
		}
	}
	if g.HasProposal {
		if err := addLimit(p, g.Proposed, top, color.RGBA{R: 200, G: 30, B: 30, A: 255}, false, "proposed "+proposedText(g)); err != nil {
			return "", err
		}
	}
	if err := addOutliers(p, g.Outliers, top); err != nil {
		return "", err
	}
	// Room above the bars for the legend, and beside the outliers on the
	// bad side for their names.
	p.Legend.Top = true
	p.Y.Min, p.Y.Max = 0, 1.6*top
	if g.Lower && len(g.Outliers) > 0 {
		p.X.Max += 0.15 * (p.X.Max - p.X.Min)
	}
	c := vgsvg.New(7*vg.Inch, 3.5*vg.Inch)
	p.Draw(draw.New(c))
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
			lab.XYs = append(lab.XYs, plotter.XY{X: o.Value, Y: top * (0.15 + 0.1*float64(i%5))})
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
