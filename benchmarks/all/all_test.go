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
