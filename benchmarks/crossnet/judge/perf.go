package judge

import (
	"fmt"
	"math"
	"slices"
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

// performance judges the throughput and round-trip times of round one,
// and confirms them in round two. A node slow in round one is a suspect:
// round one asks to measure its slow links again (Retests for round-trip
// time, RetestThroughput for throughput), and on the second call the
// suspect is a culprit only when the repeat agrees: more than half of its
// re-measured links are still on the bad side of round one's median link.
// A suspect whose repeat does not agree (or never came) is a Warning,
// never a culprit: load and jitter make one bad round, a bad path makes
// two.
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
	var slow []suspect
	slow, jobMedian = j.slowNodes(bandwidth)
	v.JobBytesPerSec = jobMedian
	j.confirm(v, bandwidth, slow, &v.RetestThroughput)
	slow, jobMedian = j.slowNodes(latency)
	v.JobRTT = time.Duration(jobMedian * float64(time.Second))
	j.confirm(v, latency, slow, &v.Retests)
}

// suspect is a node slow in round one: its entry, the median link it was
// judged against, and its slow links.
type suspect struct {
	c          Culprit
	linkMedian float64
	links      []*pair
}

// confirm turns round one's suspects into re-tests (first call) or into
// culprits and warnings (second call).
func (j *judge) confirm(v *Verdict, m metric, slow []suspect, retests *[]Link) {
	for _, s := range slow {
		if !j.second {
			v.Warnings = append(v.Warnings, s.c)
			for _, p := range s.links {
				l := Link{j.names[p.a], j.names[p.b]}
				if !slices.Contains(*retests, l) {
					*retests = append(*retests, l)
				}
			}
			continue
		}
		measured, worse := 0, 0
		for _, p := range s.links {
			q := j.r2.link(p.a, p.b)
			if q == nil {
				continue
			}
			if x, ok := m.value(q); ok {
				measured++
				if m.worse(x, s.linkMedian) {
					worse++
					s.c.Against = append(s.c.Against, q.ms...)
				}
			}
		}
		if measured > 0 && 2*worse > measured {
			s.c.Round = RoundRetest
			s.c.Message += fmt.Sprintf(" (re-test: %d of %d again)", worse, measured)
			v.Culprits = append(v.Culprits, s.c)
		} else {
			s.c.Message += fmt.Sprintf(" in one round only (re-test: %d of %d slow): not drained", worse, measured)
			v.Warnings = append(v.Warnings, s.c)
		}
	}
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

// slowNodes returns the nodes slow by m in round one, and the job's median
// of the nodes' medians (0 when no link has a value).
func (j *judge) slowNodes(m metric) ([]suspect, float64) {
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
		return nil, 0
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
	var out []suspect
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
		s := suspect{c: Culprit{Node: j.names[i], Round: RoundPlan, Value: scores[i], JobMedian: jobMedian, Peers: peers, BadPeers: slow},
			linkMedian: linkMedian}
		for _, p := range links {
			if x := values[p.id]; !math.IsNaN(x) && m.worse(x, linkMedian) {
				s.c.Against = append(s.c.Against, p.ms...)
				s.links = append(s.links, p)
			}
		}
		m.culprit(&s.c)
		out = append(out, s)
	}
	return out, jobMedian
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
