package all

import (
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// TestEveryCheckDeclares: every shipped check says which vendor it is
// about and what it does, so the default suite can be chosen by vendor and
// --list-checks can describe it.
func TestEveryCheckDeclares(t *testing.T) {
	for _, n := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(n)
		if c.Spec().Vendor == "" {
			t.Errorf("%s declares no vendor", n)
		}
		d := c.Spec().Description
		if d == "" || strings.Contains(d, "\n") || len(d) > 90 {
			t.Errorf("%s: description %q is not one short line", n, d)
		}
	}
}

// TestShippedDefaultSuites checks the shipped default suite on the four
// kinds of node.
func TestShippedDefaultSuites(t *testing.T) {
	has := func(cs []benchmarks.Check, name string) bool {
		return slices.ContainsFunc(cs, func(c benchmarks.Check) bool { return c.Spec().Name == name })
	}
	hasNA := func(na []benchmarks.NotApplicable, name string) bool {
		return slices.ContainsFunc(na, func(n benchmarks.NotApplicable) bool { return n.Check == name })
	}
	tests := []struct {
		name     string
		hw       benchmarks.Hardware
		run, not []string
	}{
		{"nvidia", benchmarks.Hardware{benchmarks.VendorNVIDIA: 8}, []string{"gpu-count", "ecc", "xid", "gemm", "disk", "rdma"}, []string{"npu-count", "npu-gemm"}},
		{"ascend", benchmarks.Hardware{benchmarks.VendorAscend: 8}, []string{"npu-count", "npu-ecc", "npu-gemm", "disk"}, []string{"gpu-count", "ecc", "xid", "gemm"}},
		{"both", benchmarks.Hardware{benchmarks.VendorNVIDIA: 1, benchmarks.VendorAscend: 8}, []string{"gpu-count", "gemm", "npu-count", "npu-gemm", "disk"}, nil},
		{"none", benchmarks.Hardware{}, []string{"gpu-count", "disk", "rdma"}, []string{"ecc", "xid", "gemm", "npu-count", "npu-gemm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, na, err := benchmarks.SelectFor(nil, nil, false, tt.hw)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.run {
				if !has(got, n) || hasNA(na, n) {
					t.Errorf("%s should run", n)
				}
			}
			for _, n := range tt.not {
				if has(got, n) || !hasNA(na, n) {
					t.Errorf("%s should be not applicable", n)
				}
			}
			if has(got, "command") || hasNA(na, "command") {
				t.Error("command is off by default and is neither run nor listed")
			}
			if len(got)+len(na) != len(defaults()) {
				t.Errorf("%d run + %d not applicable != %d in the default suite", len(got), len(na), len(defaults()))
			}
		})
	}
}

func defaults() []string {
	var out []string
	for _, i := range benchmarks.Infos() {
		if i.Default {
			out = append(out, i.Name)
		}
	}
	return out
}

// TestCrossNodeScopeIsDeclared: a check of ScopeCrossNode is one the
// cross-node phase can drive from the registry (a CollectiveCheck, a
// PeerCheck, or one of the phase's own link checks) and gives the scope's
// reasons; a check of ScopeNode is none of them, so the runner runs it.
func TestCrossNodeScopeIsDeclared(t *testing.T) {
	links := []string{"net-connect", "net-bandwidth"}
	cross := 0
	for _, n := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(n)
		d := benchmarks.Describe(c)
		_, coll := c.(benchmarks.CollectiveCheck)
		_, peer := c.(benchmarks.PeerCheck)
		phase := coll || peer || slices.Contains(links, n)
		if d.Scope == benchmarks.ScopeCrossNode {
			cross++
			if !phase {
				t.Errorf("%s: scope cross-node, but the phase cannot drive it (neither a CollectiveCheck nor a PeerCheck)", n)
			}
			for _, r := range benchmarks.CrossNodeReasons() {
				if !slices.Contains(d.Reasons, r) {
					t.Errorf("%s: scope cross-node, but %s is not among its reasons", n, r)
				}
			}
		} else if phase {
			t.Errorf("%s: a CollectiveCheck or PeerCheck of scope %s: the runner would run it alone", n, d.Scope)
		}
	}
	if cross < 4 {
		t.Errorf("%d checks of scope cross-node, want net-connect, net-bandwidth, rdma-peers and the vendors' multi-node collectives", cross)
	}
}
