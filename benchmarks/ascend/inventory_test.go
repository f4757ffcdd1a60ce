package ascend

import (
	"fmt"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dcmi/dcmifake"
)

// TestNPUCountInventory: npu-count names every NPU DCMI lists by the
// serial of its board's electronic label (the DCMI fake), with its model
// and PCI address, under the name the other checks' results use (the
// logical id); a part without a label is listed without a serial, and the
// verdict does not change.
func TestNPUCountInventory(t *testing.T) {
	node := dcmifake.Healthy(8)
	node.NPUs[2].Dev.Logic = 5 // logical ids need not follow the cards
	node.NPUs[5].Dev.Logic = 2
	node.NPUs[7].Errs = map[string]error{"ELabel": &dcmi.Error{Op: "dcmi_get_device_elabel_info", Code: dcmi.ErrNotSupport}}
	env := settings(t, "npu-count", fmt.Sprintf("[checks.npu-count]\nexpected = 8\nsysfs = %q\n", eightNPUs(t)))
	r := run1(t, &npuCount{dcmiCheck{fakeLib(node)}}, env)
	expect(t, r, benchmarks.StatusPass, "", "", "8 NPUs, 8 expected")
	if len(r.Components) != 8 {
		t.Fatalf("%d components, want 8: %+v", len(r.Components), r.Components)
	}
	want := benchmarks.Component{Kind: "npu", Name: "npu5", Serial: dcmifake.Serial(2), Model: "Ascend910B3", PCI: "0000:c3:00.0"}
	if r.Components[2] != want {
		t.Errorf("card 2: %+v, want %+v", r.Components[2], want)
	}
	if id := r.Components[2].ID(); id != "npu:sn-"+dcmifake.Serial(2) {
		t.Errorf("ID = %q", id)
	}
	if c := r.Components[7]; c.Serial != "" || c.ID() != "" || c.Name != "npu7" || c.Model != "Ascend910B3" {
		t.Errorf("a part without a label: %+v (ID %q), want no serial and no identity", c, c.ID())
	}
	names := map[string]string{}
	for _, c := range r.Components {
		names[c.Name] = c.Serial
	}
	if names["npu2"] != dcmifake.Serial(5) {
		t.Errorf("npu2 is card 5's chip: %q", names["npu2"])
	}
	if r := run1(t, &npuCount{dcmiCheck{missingLib()}}, env); len(r.Components) != 0 {
		t.Errorf("no DCMI, yet components %+v", r.Components)
	}
}
