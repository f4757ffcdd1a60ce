package lifecycle

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// vendorCheck is a default-suite check of one vendor. These are the only
// checks of this test binary in the default suite; every other test names
// its checks.
type vendorCheck struct {
	check
	vendor benchmarks.Vendor
	gres   bool
}

func (c vendorCheck) Spec() benchmarks.Descriptor {
	d := c.check.Spec()
	d.Vendor, d.Default, d.ChecksGres, d.Description = c.vendor, true, c.gres, "test check of "+string(c.vendor)
	return d
}
func (c vendorCheck) Run(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
	return c.run(ctx, e)
}

func init() {
	pass := func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusPass}
	}
	// An Ascend check on a node without DCMI says unknown, as the real ones do.
	noDCMI := func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusUnknown, Reason: "LibraryMissing", Message: "libdcmi.so not found"}
	}
	benchmarks.Register(vendorCheck{check: check{name: "tv-gpu-count", run: pass}, vendor: benchmarks.VendorNVIDIA, gres: true})
	benchmarks.Register(vendorCheck{check: check{name: "tv-nvml", run: pass}, vendor: benchmarks.VendorNVIDIA})
	benchmarks.Register(vendorCheck{check: check{name: "tv-npu", run: noDCMI}, vendor: benchmarks.VendorAscend})
	benchmarks.Register(vendorCheck{check: check{name: "tv-disk", run: pass}, vendor: benchmarks.VendorNone})
}

// pciRoot builds a root whose /sys/bus/pci/devices holds one function per
// "vendor class" pair.
func pciRoot(t *testing.T, functions ...[2]string) string {
	t.Helper()
	root := t.TempDir()
	for i, f := range functions {
		dir := filepath.Join(root, "sys/bus/pci/devices", "0000:"+string(rune('a'+i))+"0:00.0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, v := range map[string]string{"vendor": f[0], "class": f[1]} {
			if err := os.WriteFile(filepath.Join(dir, file), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func TestDefaultSuiteByVendor(t *testing.T) {
	gpu := [2]string{"0x10de", "0x030200"}
	npu := [2]string{"0x19e5", "0x120000"}
	nvidiaGone := "no NVIDIA GPU on this node (PCI vendor 10de not found, no /dev/nvidia[0-9]*)"
	ascendGone := "no Ascend NPU on this node (PCI vendor 19e5 not found, no /dev/davinci[0-9]*)"
	tests := []struct {
		name    string
		pci     [][2]string
		checks  string // [prolog] checks; "" for the default suite
		ran     []string
		na      map[string]string
		verdict benchmarks.Status
	}{
		{name: "nvidia only: the Ascend check is not applicable, the node passes", pci: [][2]string{gpu, gpu},
			ran: []string{"tv-disk", "tv-gpu-count", "tv-nvml"}, na: map[string]string{"tv-npu": ascendGone}, verdict: benchmarks.StatusPass},
		{name: "ascend only", pci: [][2]string{npu},
			ran: []string{"tv-disk", "tv-npu"}, na: map[string]string{"tv-gpu-count": nvidiaGone, "tv-nvml": nvidiaGone},
			verdict: benchmarks.StatusUnknown},
		{name: "both vendors run both", pci: [][2]string{gpu, npu},
			ran: []string{"tv-disk", "tv-gpu-count", "tv-npu", "tv-nvml"}, verdict: benchmarks.StatusUnknown},
		{name: "no accelerator: gpu-count still compares Gres", ran: []string{"tv-disk", "tv-gpu-count"},
			na: map[string]string{"tv-nvml": nvidiaGone, "tv-npu": ascendGone}, verdict: benchmarks.StatusPass},
		{name: "an explicit list runs as asked", pci: [][2]string{gpu}, checks: `checks = ["tv-npu", "tv-nvml"]`,
			ran: []string{"tv-npu", "tv-nvml"}, verdict: benchmarks.StatusUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.checks == "" {
				// The cross-node checks are in every default suite; outside
				// a job they are not applicable.
				tt.na = maps.Clone(tt.na)
				if tt.na == nil {
					tt.na = map[string]string{}
				}
				for _, c := range []string{"net-connect", "net-bandwidth"} {
					tt.na[c] = "runs only in a job's prolog, with the job's other nodes"
				}
			}
			_, conf := setup(t, tt.checks)
			fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
			root := pciRoot(t, tt.pci...)
			out := runWith(t, conf, decide.ModeProlog, fs, nil, func(o *Options) { o.Root = root })
			var ran []string
			for _, r := range out.Report.Results {
				ran = append(ran, r.Check)
			}
			slices.Sort(ran)
			if !slices.Equal(ran, tt.ran) {
				t.Errorf("ran %v, want %v", ran, tt.ran)
			}
			na := map[string]string{}
			for _, n := range out.Report.NotApplicable {
				na[n.Check] = n.Message
			}
			if len(na) != len(tt.na) {
				t.Errorf("not applicable %v, want %v", na, tt.na)
			}
			for c, m := range tt.na {
				if na[c] != m {
					t.Errorf("not applicable %s: %q, want %q", c, na[c], m)
				}
			}
			p, f, u := out.Report.Counts()
			if out.Report.Verdict != tt.verdict || p+f+u != len(tt.ran) {
				t.Errorf("verdict %s (%d/%d/%d), want %s over %d results", out.Report.Verdict, p, f, u, tt.verdict, len(tt.ran))
			}
			if out.ExitCode != decide.ExitOK || out.Report.Action.Kind == report.ActionDrain || len(fs.mutations()) != 0 {
				t.Errorf("not applicable drained or failed: exit %d, action %+v, calls %v", out.ExitCode, out.Report.Action, fs.mutations())
			}
			// The JSON report on disk lists them too.
			b, err := os.ReadFile(out.ReportPath)
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				NotApplicable []benchmarks.NotApplicable `json:"not_applicable"`
			}
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			if len(rep.NotApplicable) != len(tt.na) {
				t.Errorf("report %s lists %v as not applicable", filepath.Base(out.ReportPath), rep.NotApplicable)
			}
		})
	}
}
