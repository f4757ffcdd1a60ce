package hangview

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang"
)

// Chart geometry, in SVG user units.
const (
	chartW   = 1000 // whole chart
	plotX    = 80   // left edge of the plots (labels to its left)
	plotW    = 900  // width of a plot
	panelH   = 90   // height of one panel's plot
	panelGap = 28   // between panels (the panel's title sits in it)
	axisH    = 30   // time labels under the last panel
	maxDrawn = 400  // most points drawn per series
)

// series is one panel: a quantity over time.
type series struct {
	title string
	unit  string
	color string
	ts    []time.Time
	vs    []float64 // NaN: no value (a gap in the line)
}

// seriesOf turns a host's points within [from, to] into the four panels:
// I/O rate, CPU rate, device utilisation and device power (the last two
// only when some point has a device reading). Rates are over
// consecutive drawn points; a counter that dropped (a process exited)
// or could not be read leaves a gap.
func seriesOf(ps []Point, from, to time.Time) []series {
	ps = within(ps, from, to)
	if step := (len(ps) + maxDrawn - 1) / maxDrawn; step > 1 {
		thin := make([]Point, 0, maxDrawn+1)
		for i := 0; i < len(ps); i += step {
			thin = append(thin, ps[i])
		}
		ps = thin
	}
	out := []series{
		{title: "I/O rate", unit: "MiB/s", color: "#1f77b4"},
		{title: "CPU", unit: "cores", color: "#2ca02c"},
		{title: "Device utilisation (mean)", unit: "%", color: "#9467bd"},
		{title: "Device power (sum)", unit: "W", color: "#d62728"},
	}
	for i, p := range ps {
		ioRate, cpu := math.NaN(), math.NaN()
		if i > 0 {
			q := ps[i-1]
			dt := p.Time.Sub(q.Time).Seconds()
			if dt > 0 && !p.NoIO && !q.NoIO && p.IOBytes >= q.IOBytes {
				ioRate = float64(p.IOBytes-q.IOBytes) / dt / (1 << 20)
			}
			if dt > 0 && !p.NoCPU && !q.NoCPU && p.CPUUsec >= q.CPUUsec {
				cpu = float64(p.CPUUsec-q.CPUUsec) / dt / 1e6
			}
		}
		for k, v := range []float64{ioRate, cpu, p.Util, p.PowerW} {
			out[k].ts = append(out[k].ts, p.Time)
			out[k].vs = append(out[k].vs, v)
		}
	}
	if !hasAccel(ps, from, to) {
		out = out[:2]
	}
	return out
}

// hasAccel reports whether some point within [from, to] has a device reading.
func hasAccel(ps []Point, from, to time.Time) bool {
	for _, p := range within(ps, from, to) {
		if !math.IsNaN(p.Util) || !math.IsNaN(p.PowerW) {
			return true
		}
	}
	return false
}

func within(ps []Point, from, to time.Time) []Point {
	i, j := 0, len(ps)
	for i < j && ps[i].Time.Before(from) {
		i++
	}
	for j > i && ps[j-1].Time.After(to) {
		j--
	}
	return ps[i:j]
}

// chart draws one host's panels over [from, to] as an SVG element, with
// the host's events as vertical lines and the window before each hung
// verdict shaded.
func chart(host string, ps []Point, evs []Event, from, to time.Time, window time.Duration) string {
	ss := seriesOf(ps, from, to)
	h := len(ss)*(panelH+panelGap) + axisH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" data-host="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		html.EscapeString(host), chartW, h, chartW, h, html.EscapeString("readings of "+host))
	b.WriteString("\n")
	x := xScale(from, to)
	for _, e := range evs {
		if e.Host == host && e.Event == hang.EventHung && window > 0 {
			x0, x1 := math.Max(x(e.Time.Add(-window)), plotX), math.Min(x(e.Time), plotX+plotW)
			if x1 > x0 {
				fmt.Fprintf(&b, `<rect class="window" x="%.1f" y="0" width="%.1f" height="%d" fill="#fde0dc"/>`+"\n", x0, x1-x0, h-axisH)
			}
		}
	}
	for k, s := range ss {
		panel(&b, s, float64(k*(panelH+panelGap)+panelGap), x)
	}
	for _, e := range evs {
		if e.Host != host || e.Time.Before(from) || e.Time.After(to) {
			continue
		}
		fmt.Fprintf(&b, `<line class="event %s" x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s><title>%s</title></line>`+"\n",
			html.EscapeString(e.Event), x(e.Time), x(e.Time), panelGap-4, h-axisH, eventColor(e.Event), dash(e.Event),
			html.EscapeString(e.Time.UTC().Format(time.RFC3339)+" "+e.Event+" "+e.Reason))
	}
	axis(&b, from, to, float64(h-axisH))
	b.WriteString("</svg>")
	return b.String()
}

// xScale maps a time in [from, to] to a horizontal position in the plots.
func xScale(from, to time.Time) func(time.Time) float64 {
	span := to.Sub(from).Seconds()
	return func(t time.Time) float64 {
		if span <= 0 {
			return plotX
		}
		return plotX + plotW*t.Sub(from).Seconds()/span
	}
}

// panel draws one series with its title, frame and scale at height top.
func panel(b *strings.Builder, s series, top float64, x func(time.Time) float64) {
	hi := 0.0
	for _, v := range s.vs {
		if !math.IsNaN(v) && v > hi {
			hi = v
		}
	}
	if s.unit == "%" {
		hi = 100
	}
	if hi == 0 {
		hi = 1
	}
	hi *= 1.05
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="13" font-family="sans-serif" fill="#333">%s (%s)</text>`+"\n", plotX, top-6, s.title, s.unit)
	fmt.Fprintf(b, `<rect x="%d" y="%.1f" width="%d" height="%d" fill="none" stroke="#bbb"/>`+"\n", plotX, top, plotW, panelH)
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11" font-family="sans-serif" text-anchor="end" fill="#555">%s</text>`+"\n", plotX-6, top+10, number(hi))
	fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="11" font-family="sans-serif" text-anchor="end" fill="#555">0</text>`+"\n", plotX-6, top+panelH)
	y := func(v float64) float64 { return top + panelH - panelH*v/hi }
	var d strings.Builder
	pen := false
	for i, v := range s.vs {
		if math.IsNaN(v) {
			pen = false
			continue
		}
		op := "L"
		if !pen {
			op = "M"
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", op, x(s.ts[i]), y(v))
		pen = true
	}
	if d.Len() > 0 {
		fmt.Fprintf(b, `<path class="series" d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.TrimSpace(d.String()), s.color)
	}
}

// axis writes the times of the plots' edges and middle under them.
func axis(b *strings.Builder, from, to time.Time, y float64) {
	mid := from.Add(to.Sub(from) / 2)
	for i, t := range []time.Time{from, mid, to} {
		anchor := []string{"start", "middle", "end"}[i]
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="11" font-family="sans-serif" text-anchor="%s" fill="#555">%s</text>`+"\n",
			plotX+plotW*float64(i)/2, y+16, anchor, t.UTC().Format("2006-01-02 15:04:05Z"))
	}
}

func number(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

func eventColor(kind string) string {
	switch kind {
	case hang.EventHung:
		return "#c0392b"
	case hang.EventSuspect:
		return "#e67e22"
	case hang.EventRecovered:
		return "#27ae60"
	default:
		return "#7f8c8d"
	}
}

func dash(kind string) string {
	if kind == hang.EventSuspect || kind == hang.EventStraggler {
		return ` stroke-dasharray="6 4"`
	}
	return ""
}
