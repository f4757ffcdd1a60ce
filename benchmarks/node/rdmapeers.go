package node

import (
	"fmt"
	"sort"
)

// Reasons OddOneOut names a node with; the cross-node phase fails that
// node's prolog with them.
const (
	// ReasonGDRMissing: the node has no GPUDirect RDMA (no peer-memory
	// module) while at least as many of the job's nodes have it. NCCL then
	// runs GDRDMA on some nodes and not others (the seed case: "via
	// NET/IB/0/GDRDMA" logged by some nodes only); load nvidia_peermem, or
	// set NCCL_NET_GDR_LEVEL=0 for the job.
	ReasonGDRMissing = "GPUDirectRDMAMissing"
	// ReasonRDMAPortsBelowPeers: fewer active RDMA ports than most of the
	// job's nodes.
	ReasonRDMAPortsBelowPeers = "RDMAPortsBelowPeers"
	// ReasonRDMARateBelowPeers: the slowest active port is slower than
	// most of the job's nodes' slowest.
	ReasonRDMARateBelowPeers = "RDMARateBelowPeers"
)

// RDMAFinding names one node whose RDMA summary stands out from its peers'.
type RDMAFinding struct {
	// Node is the node's name, as the summaries were keyed.
	Node string `json:"node"`
	// Reason is a stable token (ReasonGDRMissing ...).
	Reason string `json:"reason"`
	// Message is for people ("node7: 7 active RDMA ports, most nodes have 8").
	Message string `json:"message"`
}

// OddOneOut compares the RDMA summaries of a job's nodes (node name →
// summary) and names the nodes that stand out, sorted by node then reason:
//
//   - a node without GPUDirect RDMA when at least as many nodes have it as
//     lack it (a node that lacks what the others have is the odd one; when
//     most nodes lack it, GDR is not what the job's fabric runs on);
//   - a node with fewer active ports than the most common count (ties go to
//     the larger count: a port that is down is the fault, not one up);
//   - a node whose slowest active port is slower than the most common
//     slowest among nodes with an active port (ties go to the faster).
//
// One node, or nodes that all agree, give no finding. Pure: the same
// summaries always give the same findings.
func OddOneOut(summaries map[string]RDMASummary) []RDMAFinding {
	if len(summaries) < 2 {
		return nil
	}
	nodes := make([]string, 0, len(summaries))
	with := 0
	ports, rates := map[float64]int{}, map[float64]int{}
	for n, s := range summaries {
		nodes = append(nodes, n)
		if s.GDR {
			with++
		}
		ports[float64(s.ActivePorts)]++
		if s.ActivePorts > 0 {
			rates[s.MinRateGbps]++
		}
	}
	sort.Strings(nodes)
	wantPorts, wantRate := mode(ports), mode(rates)
	var out []RDMAFinding
	for _, n := range nodes {
		s := summaries[n]
		if !s.GDR && with > 0 && with >= len(nodes)-with {
			out = append(out, RDMAFinding{n, ReasonGDRMissing, fmt.Sprintf(
				"%s: no GPUDirect RDMA (nvidia_peermem not loaded), %d of %d nodes have it", n, with, len(nodes))})
		}
		if float64(s.ActivePorts) < wantPorts {
			out = append(out, RDMAFinding{n, ReasonRDMAPortsBelowPeers, fmt.Sprintf(
				"%s: %d active RDMA ports, most nodes have %d", n, s.ActivePorts, int(wantPorts))})
		}
		if s.ActivePorts > 0 && s.MinRateGbps < wantRate {
			out = append(out, RDMAFinding{n, ReasonRDMARateBelowPeers, fmt.Sprintf(
				"%s: slowest active RDMA port %g Gb/s, most nodes %g Gb/s", n, s.MinRateGbps, wantRate)})
		}
	}
	return out
}

// mode is the most common value of counts (value → how many), the larger
// value on a tie.
func mode(counts map[float64]int) float64 {
	best, bestN := 0.0, 0
	for v, n := range counts {
		if n > bestN || (n == bestN && v > best) {
			best, bestN = v, n
		}
	}
	return best
}
