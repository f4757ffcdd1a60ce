package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// RDMAPeersName is rdma-peers: the job's nodes compare their RDMA fabric
// (RDMASummary) in the prolog's cross-node phase, and the nodes OddOneOut
// names fail, with its reason (GPUDirectRDMAMissing, RDMAPortsBelowPeers,
// RDMARateBelowPeers).
const RDMAPeersName = "rdma-peers"

// rdmaPeers is rdma-peers, a benchmarks.PeerCheck. It publishes no settings:
// the summary is read under [checks.rdma] root, the one key that names it.
type rdmaPeers struct{}

func init() { benchmarks.Register(rdmaPeers{}) }

// Spec describes the check.
func (rdmaPeers) Spec() benchmarks.Descriptor {
	return benchmarks.Descriptor{Name: RDMAPeersName, Kind: benchmarks.KindHealth, Vendor: benchmarks.VendorNone, Scope: benchmarks.ScopeCrossNode, Default: true,
		Description: "RDMA ports, rates and GPUDirect RDMA against the job's other nodes (prolog, across nodes)",
		Reasons: append([]string{ReasonGDRMissing, ReasonRDMAPortsBelowPeers, ReasonRDMARateBelowPeers, ReasonRDMAUnreadable},
			benchmarks.CrossNodeReasons()...)}
}

// Run is what the check does on its own, outside the phase: unknown.
func (rdmaPeers) Run(context.Context, *benchmarks.Env) benchmarks.Result {
	return benchmarks.Result{Check: RDMAPeersName, Status: benchmarks.StatusUnknown, Reason: benchmarks.ReasonOutsideProlog,
		Message: RDMAPeersName + " runs only in the prolog's cross-node phase, with the job's other nodes", Attempts: 1}
}

// Read reads this node's RDMASummary under [checks.rdma] root.
func (rdmaPeers) Read(settings func(check string) func(v any) error) (json.RawMessage, error) {
	s, err := RDMASummaryFrom(settings("rdma"))
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// Judge compares the summaries of the nodes that sent one (OddOneOut): a
// node it names fails with the first finding's reason (all of them in the
// message), a node whose summary could not be read is unknown
// (RDMAUnreadable), the others pass.
func (rdmaPeers) Judge(reports map[string]benchmarks.PeerReport, absent []string) map[string]benchmarks.PeerVerdict {
	sums := map[string]RDMASummary{}
	bad := map[string]string{}
	gdr := 0
	for n, r := range reports {
		var s RDMASummary
		if err := json.Unmarshal(r.Payload, &s); r.Payload == nil || err != nil {
			bad[n] = r.Error
			if err != nil && r.Payload != nil {
				bad[n] = err.Error()
			}
			continue
		}
		sums[n] = s
		if s.GDR {
			gdr++
		}
	}
	found := map[string][]RDMAFinding{}
	for _, f := range OddOneOut(sums) {
		found[f.Node] = append(found[f.Node], f)
	}
	note := ""
	if len(absent) > 0 {
		note = "; absent (their prologs never met): " + strings.Join(absent, ",")
	}
	out := map[string]benchmarks.PeerVerdict{}
	for n := range reports {
		v := benchmarks.PeerVerdict{Check: RDMAPeersName, Status: benchmarks.StatusPass,
			Message: fmt.Sprintf("RDMA in line with the job's %d nodes compared (%d with GPUDirect RDMA)", len(sums), gdr)}
		if why, ok := bad[n]; ok {
			v.Status, v.Reason, v.Message = benchmarks.StatusUnknown, ReasonRDMAUnreadable, "RDMA summary not read: "+why
		} else if fs := found[n]; len(fs) > 0 {
			v.Status, v.Reason, v.Message = benchmarks.StatusFail, fs[0].Reason, findingsText(fs)
		}
		v.Message += note
		out[n] = v
	}
	return out
}

// findingsText joins a node's findings, with the remedy for missing GDR.
func findingsText(fs []RDMAFinding) string {
	var msgs []string
	for _, f := range fs {
		msgs = append(msgs, f.Message)
	}
	text := strings.Join(msgs, "; ")
	if slices.ContainsFunc(fs, func(f RDMAFinding) bool { return f.Reason == ReasonGDRMissing }) {
		text += " (load nvidia_peermem, or run the job with NCCL_NET_GDR_LEVEL=0)"
	}
	return text
}

// Values are this node's summary: active ports, slowest rate, GDR (0/1).
func (rdmaPeers) Values(payload json.RawMessage) []benchmarks.Value {
	var s RDMASummary
	if payload == nil || json.Unmarshal(payload, &s) != nil {
		return nil
	}
	gdr := 0.0
	if s.GDR {
		gdr = 1
	}
	return []benchmarks.Value{
		{Name: "active_ports", Value: float64(s.ActivePorts), Status: benchmarks.StatusPass},
		{Name: "min_rate_gbps", Value: s.MinRateGbps, Unit: "Gb/s", Status: benchmarks.StatusPass},
		{Name: "gdr", Value: gdr, Status: benchmarks.StatusPass},
	}
}
