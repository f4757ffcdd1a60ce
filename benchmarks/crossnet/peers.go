package crossnet

import (
	"maps"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// peerCheck returns the registered benchmarks.PeerCheck of that name.
func peerCheck(name string) (benchmarks.PeerCheck, bool) {
	c, ok := benchmarks.Lookup(name)
	if !ok {
		return nil, false
	}
	pc, ok := c.(benchmarks.PeerCheck)
	return pc, ok
}

// readPeers reads this node's facts for the PeerChecks of p.Checks.
func (p Phase) readPeers() map[string]benchmarks.PeerReport {
	settings := p.Settings
	if settings == nil {
		settings = func(string) func(v any) error { return func(any) error { return nil } }
	}
	var out map[string]benchmarks.PeerReport
	for _, c := range p.Checks {
		pc, ok := peerCheck(c)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]benchmarks.PeerReport{}
		}
		b, err := pc.Read(settings)
		if err != nil {
			out[c] = benchmarks.PeerReport{Error: err.Error()}
			continue
		}
		out[c] = benchmarks.PeerReport{Payload: b}
	}
	return out
}

// judgePeers runs each benchmarks.PeerCheck's Judge over the reports gathered
// (check → node → report) and returns check → node → verdict.
func (p Phase) judgePeers(reports map[string]map[string]benchmarks.PeerReport, absent []string) map[string]map[string]benchmarks.PeerVerdict {
	out := map[string]map[string]benchmarks.PeerVerdict{}
	for _, c := range p.Checks {
		pc, ok := peerCheck(c)
		if !ok {
			continue
		}
		out[c] = pc.Judge(maps.Clone(reports[c]), absent)
	}
	return out
}
