package lifecycle

import (
	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/report"
)

// ProbeAccelerators looks for the devices of every vendor of the vendor
// table under root ("/" in production) without any vendor library: device
// nodes and PCI functions of the vendor's ids and classes, as
// vendors.Probe finds them, counted by the vendor's name. An unreadable
// PCI bus counts no devices.
func ProbeAccelerators(root string) report.Accelerators {
	a := report.Accelerators{Count: benchmarks.Hardware{}}
	for _, f := range vendors.Probe(root) {
		a.Count[benchmarks.Vendor(f.Row.Name)] = f.Count
		a.Evidence = append(a.Evidence, f.Evidence...)
	}
	return a
}
