package lifecycle

import (
	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/report"
)

// ProbeAccelerators looks for the devices of every vendor of the vendor
// table under root ("/" in production) without any vendor library: device
// nodes and PCI functions of the vendor's ids and classes, as
// vendors.Probe finds them. An unreadable PCI bus counts no devices.
func ProbeAccelerators(root string) report.Accelerators {
	var a report.Accelerators
	for _, f := range vendors.Probe(root) {
		switch f.Row.Name {
		case "nvidia":
			a.NVIDIA = f.Count
		case "ascend":
			a.Ascend = f.Count
		}
		a.Evidence = append(a.Evidence, f.Evidence...)
	}
	return a
}
