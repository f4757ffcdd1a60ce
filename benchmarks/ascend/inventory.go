package ascend

import (
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/internal/pci"
)

// inventory names DCMI's NPUs by what stays with each wherever it is put:
// the serial number on its board's electronic label, with its model and PCI
// address, under the name results give it ("npu0", by logical id, or by
// enumeration order when DCMI gives none). npu-count records them in its
// result (benchmarks.Result.Components) for the run's report. A fact DCMI
// cannot read (a part without an electronic label) is left empty: the
// inventory never changes a verdict.
func inventory(lib dcmi.Interface, devs []dcmi.Device) []benchmarks.Component {
	out := make([]benchmarks.Component, 0, len(devs))
	for i, d := range devs {
		index := d.Logic
		if index < 0 {
			index = i
		}
		c := benchmarks.Component{Kind: benchmarks.ComponentNPU, Name: fmt.Sprintf("npu%d", index)}
		if d.PCI != "" {
			c.PCI = pci.Normalise(d.PCI)
		}
		if ci, err := lib.ChipInfo(d); err == nil {
			c.Model = ci.Model()
		}
		if e, err := lib.ELabel(d); err == nil {
			c.Serial = e.Serial
		}
		out = append(out, c)
	}
	return out
}
