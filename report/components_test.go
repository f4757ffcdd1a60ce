package report

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// TestTakeComponents: the components move from the results to one list,
// each once in the order the checks ran, a later mention filling what an
// earlier one lacked.
func TestTakeComponents(t *testing.T) {
	gpu0 := benchmarks.Component{Kind: "gpu", Name: "gpu0", UUID: "GPU-a", Model: "NVIDIA H100 80GB HBM3"}
	results := []benchmarks.Result{
		{Check: "gpu-count", Components: []benchmarks.Component{gpu0, {Kind: "gpu", Name: "gpu1", UUID: "GPU-b"}}},
		{Check: "ecc"},
		{Check: "rdma", Components: []benchmarks.Component{{Kind: "hca", Name: "mlx5_0/1", GUID: "a088:c203:0045:6d00", Port: 1}}},
		{Check: "later", Components: []benchmarks.Component{{Kind: "gpu", Name: "gpu1", UUID: "GPU-other", Serial: "1652"}, {Kind: "gpu", Name: "gpu0"}}},
	}
	got := TakeComponents(results)
	want := []benchmarks.Component{gpu0, {Kind: "gpu", Name: "gpu1", UUID: "GPU-b", Serial: "1652"},
		{Kind: "hca", Name: "mlx5_0/1", GUID: "a088:c203:0045:6d00", Port: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("TakeComponents = %+v\nwant %+v", got, want)
	}
	for _, r := range results {
		if r.Components != nil {
			t.Errorf("%s still carries %+v", r.Check, r.Components)
		}
	}
	if TakeComponents(nil) != nil {
		t.Error("no results: want nil, so that the report has no components key")
	}
}

// componentReport is sampleReport with what vigil knows of the parts it
// measured and the remedy the run carried out.
func componentReport() *Report {
	r := sampleReport()
	r.Components = []benchmarks.Component{
		{Kind: "gpu", Name: "gpu0", UUID: "GPU-6c1f0a00-3e2d-4b5a-9c8d-000000000000", Serial: "1652023000000", Model: "NVIDIA H100 80GB HBM3", PCI: "0000:18:00.0"},
		{Kind: "gpu", Name: "gpu1", UUID: "GPU-6c1f0a01-3e2d-4b5a-9c8d-000000000001", Serial: "1652023000001", Model: "NVIDIA H100 80GB HBM3", PCI: "0000:2a:00.0"},
		{Kind: "hca", Name: "mlx5_0/1", GUID: "a088:c203:0045:6d00", Port: 1, Model: "MT4129", PCI: "0000:1b:00.0"},
	}
	r.Action.Remedy = &Remedy{Kind: RemedyReset, Check: "ecc", Device: "gpu1", Attempt: 1, Max: 3, Window: "168h0m0s", At: r.Start.Add(2 * time.Second), Done: true}
	return r
}

// TestGoldenJSONComponents: the components and the remedy, where a run has
// them, are fields of their own; report.json (without) shows neither key,
// so older readers see the reports they knew.
func TestGoldenJSONComponents(t *testing.T) {
	b, err := componentReport().JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report-components.json", b)
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Components, componentReport().Components) || !reflect.DeepEqual(back.Action.Remedy, componentReport().Action.Remedy) {
		t.Errorf("read back: %+v %+v", back.Components, back.Action.Remedy)
	}
	plain, err := sampleReport().JSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"components"`, `"remedy"`} {
		if strings.Contains(string(plain), key) {
			t.Errorf("a report without components or remedy has %s", key)
		}
	}
}

// TestComponentNamed: a result's device is found by name, or by PCI
// address (gpu-count names a GPU that fell off the bus so).
func TestComponentNamed(t *testing.T) {
	r := componentReport()
	if c, ok := r.ComponentNamed("gpu1"); !ok || c.UUID != "GPU-6c1f0a01-3e2d-4b5a-9c8d-000000000001" {
		t.Errorf("gpu1: %+v %v", c, ok)
	}
	if c, ok := r.ComponentNamed("0000:1b:00.0"); !ok || c.Name != "mlx5_0/1" {
		t.Errorf("by PCI: %+v %v", c, ok)
	}
	for _, name := range []string{"", "gpu7", "/scratch"} {
		if _, ok := r.ComponentNamed(name); ok {
			t.Errorf("%q found", name)
		}
	}
}
