package crossnet

import (
	"encoding/json"
	"maps"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// PeerCheck is a cross-node check that compares one fact of the job's
// nodes (their RDMA fabric: rdma-peers) instead of measuring links. It is
// registered like every other check (benchmarks.Register, with CrossNode
// true) by the package that knows the fact, and the phase runs it: each
// node reads its fact and sends it with its measurements, the coordinator
// judges the facts of the nodes that met, and each node gets its verdict.
type PeerCheck interface {
	benchmarks.Check
	// Read reads this node's fact, JSON-encodable and small (it travels
	// in the sealed rendezvous). settings decodes a check's [checks.NAME]
	// into v (its defaults beforehand), so that a check can read the
	// section of another that already names a setting (a root).
	Read(settings func(check string) func(v any) error) (json.RawMessage, error)
	// Judge compares the reports of the nodes that met (node → report)
	// and returns each node's verdict; absent are the nodes that never
	// met, for the messages. Pure.
	Judge(reports map[string]Report, absent []string) map[string]Verdict
	// Values are this node's own figures, from its own payload (nil when
	// it could not read it).
	Values(payload json.RawMessage) []benchmarks.Value
}

// Report is one node's fact for a PeerCheck, as the coordinator gets it.
type Report struct {
	// Payload is what the node's Read returned; nil when it failed.
	Payload json.RawMessage `json:"payload,omitempty"`
	// Error says why the node has no payload.
	Error string `json:"error,omitempty"`
}

// peerCheck returns the registered PeerCheck of that name.
func peerCheck(name string) (PeerCheck, bool) {
	c, ok := benchmarks.Lookup(name)
	if !ok {
		return nil, false
	}
	pc, ok := c.(PeerCheck)
	return pc, ok
}

// readPeers reads this node's facts for the PeerChecks of p.Checks.
func (p Phase) readPeers() map[string]Report {
	settings := p.Settings
	if settings == nil {
		settings = func(string) func(v any) error { return func(any) error { return nil } }
	}
	var out map[string]Report
	for _, c := range p.Checks {
		pc, ok := peerCheck(c)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]Report{}
		}
		b, err := pc.Read(settings)
		if err != nil {
			out[c] = Report{Error: err.Error()}
			continue
		}
		out[c] = Report{Payload: b}
	}
	return out
}

// judgePeers runs each PeerCheck's Judge over the reports gathered
// (check → node → report) and returns check → node → verdict.
func (p Phase) judgePeers(reports map[string]map[string]Report, absent []string) map[string]map[string]Verdict {
	out := map[string]map[string]Verdict{}
	for _, c := range p.Checks {
		pc, ok := peerCheck(c)
		if !ok {
			continue
		}
		out[c] = pc.Judge(maps.Clone(reports[c]), absent)
	}
	return out
}
