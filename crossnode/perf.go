package crossnode

import (
	"fmt"
	"math"
	"time"
)

// metric is one of the link values judged against the job: throughput
// (lower is worse) or round-trip time (higher is worse).
type metric struct {
	// value returns a link's value, its worse measured direction, or false
	// when the link has none (not measured, or a direction failed).
	value func(p *pair) (float64, bool)
	// worse reports whether v is far enough on the bad side of median m.
	worse func(v, m float64) bool
	// culprit fills in a slow node's check, reason and message.
	culprit func(c *Culprit)
}

// performance judges round one's throughput and round-trip times.
func (j *judge) performance(v *Verdict) {
	frac, factor, slack := j.opt.SlowFraction, j.opt.LatencyFactor, j.opt.LatencySlack.Seconds()
	bandwidth := metric{
		value: func(p *pair) (float64, bool) {
			return worst(p, func(d direction) float64 { return d.bps }, math.Min)
		},
		worse: func(v, m float64) bool { return v < frac*m },
		culprit: func(c *Culprit) {
			c.Check, c.Reason = CheckBandwidth, ReasonBandwidthLow
			c.Message = fmt.Sprintf("%s, job median %s, slow with %d of %d peers", bitRate(c.Value), bitRate(c.JobMedian), c.BadPeers, c.Peers)
		},
	}
	latency := metric{
		value: func(p *pair) (float64, bool) {
			return worst(p, func(d direction) float64 { return d.rtt.Seconds() }, math.Max)
		},
		worse: func(v, m float64) bool { return v > factor*m && v > m+slack },
		culprit: func(c *Culprit) {
			c.Check, c.Reason = CheckConnect, ReasonLatencyHigh
			c.Message = fmt.Sprintf("RTT %s, job median %s, slow with %d of %d peers", seconds(c.Value), seconds(c.JobMedian), c.BadPeers, c.Peers)
		},
	}
	var jobMedian float64
	v.Culprits, jobMedian = j.slowNodes(bandwidth, v.Culprits)
	v.JobBytesPerSec = jobMedian
	v.Culprits, jobMedian = j.slowNodes(latency, v.Culprits)
	v.JobRTT = time.Duration(jobMedian * float64(time.Second))
}

// worst returns the worse of a link's measured, positive directions by
// pick (math.Min or math.Max) of get, or false when the link is bad or has
// none.
func worst(p *pair, get func(direction) float64, pick func(a, b float64) float64) (float64, bool) {
	if p.bad() {
		return 0, false
	}
	v, found := 0.0, false
	for _, d := range [2]direction{p.ab, p.ba} {
		if x := get(d); d.ok && x > 0 {
			if found {
				v = pick(v, x)
			} else {
				v, found = x, true
			}
		}
	}
	return v, found
}

// slowNodes appends to cs the nodes slow by m, and returns the job's median
// of the nodes' medians (0 when no link has a value).
func (j *judge) slowNodes(m metric, cs []Culprit) ([]Culprit, float64) {
	values := make([]float64, len(j.r1.order)) // by pair id; NaN: no value
	all := make([]float64, 0, len(j.r1.order))
	for _, p := range j.r1.order {
		values[p.id] = math.NaN()
		if x, ok := m.value(p); ok {
			values[p.id] = x
			all = append(all, x)
		}
	}
	if len(all) == 0 {
		return cs, 0
	}
	linkMedian := median(all)
	scores := make([]float64, len(j.names))
	byNode := make([]float64, 0, len(j.names))
	var buf []float64
	for i, links := range j.r1.adj {
		buf = buf[:0]
		for _, p := range links {
			if x := values[p.id]; !math.IsNaN(x) {
				buf = append(buf, x)
			}
		}
		if len(buf) > 0 {
			scores[i] = median(buf)
			byNode = append(byNode, scores[i])
		}
	}
	jobMedian := median(byNode)
	for i, links := range j.r1.adj {
		peers, slow := 0, 0
		for _, p := range links {
			if x := values[p.id]; !math.IsNaN(x) {
				peers++
				if m.worse(x, linkMedian) {
					slow++
				}
			}
		}
		if peers < 2 || 2*slow <= peers || !m.worse(scores[i], jobMedian) {
			continue
		}
		c := Culprit{Node: j.names[i], Round: RoundPlan, Value: scores[i], JobMedian: jobMedian, Peers: peers, BadPeers: slow}
		for _, p := range links {
			if x := values[p.id]; !math.IsNaN(x) && m.worse(x, linkMedian) {
				c.Against = append(c.Against, p.ms...)
			}
		}
		m.culprit(&c)
		cs = append(cs, c)
	}
	return cs, jobMedian
}

// bitRate formats bytes per second as bits per second: "9.4 Gb/s", or
// "850 Mb/s" below 1 Gb/s.
func bitRate(bytesPerSec float64) string {
	bits := bytesPerSec * 8
	if bits >= 1e9 {
		return fmt.Sprintf("%.1f Gb/s", bits/1e9)
	}
	return fmt.Sprintf("%.0f Mb/s", bits/1e6)
}

// seconds formats a time in seconds as a duration rounded to the
// microsecond: "850µs", "1.2ms".
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= 10*time.Millisecond:
		d = d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	default:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}
