package lifecycle

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// isolatedCheck is a check that runs in a checker child.
type isolatedCheck struct{ check }

func (c isolatedCheck) Spec() benchmarks.Descriptor {
	d := c.check.Spec()
	d.Isolated = true
	return d
}

var (
	testGPUs = []benchmarks.Component{
		{Kind: "gpu", Name: "gpu0", UUID: "GPU-0a", Serial: "1652", Model: "NVIDIA H100 80GB HBM3", PCI: "0000:18:00.0"},
		{Kind: "gpu", Name: "gpu1", UUID: "GPU-1b", Model: "NVIDIA H100 80GB HBM3", PCI: "0000:2a:00.0"},
	}
	testHCA = benchmarks.Component{Kind: "hca", Name: "mlx5_0/1", GUID: "a088:c203:0045:6d00", Port: 1}
)

func init() {
	benchmarks.Register(isolatedCheck{check{name: "t-inventory", run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusPass, Components: testGPUs}
	}}})
	benchmarks.Register(check{name: "t-inventory-hca", run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusFail, Reason: "Broken", Device: "mlx5_0/1",
			Components: []benchmarks.Component{testHCA, {Kind: "gpu", Name: "gpu1", Serial: "1653"}}}
	}})
}

// TestReportNamesComponents: the components the checks identify, in a
// checker child or not, reach the JSON report once each, under
// "components", and leave the results.
func TestReportNamesComponents(t *testing.T) {
	_, conf := setup(t, `checks = ["t-inventory", "t-inventory-hca"]`)
	out := runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, nil, nil)
	b, err := os.ReadFile(out.ReportPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	gpu1 := testGPUs[1]
	gpu1.Serial = "1653"
	want := []benchmarks.Component{testGPUs[0], gpu1, testHCA}
	if !reflect.DeepEqual(rep.Components, want) {
		t.Fatalf("components = %+v\nwant %+v", rep.Components, want)
	}
	for _, r := range rep.Results {
		if len(r.Components) > 0 {
			t.Errorf("%s still names components", r.Check)
		}
	}
	if c, ok := rep.ComponentNamed(rep.Results[1].Device); !ok || c.ID() != "hca:a088:c203:0045:6d00/1" {
		t.Errorf("the failed device %q is %+v", rep.Results[1].Device, c)
	}
}
