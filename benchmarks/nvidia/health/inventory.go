package health

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// inventory names NVML's first n devices by what stays with each GPU
// wherever it is put: its UUID and board serial, with its product name and
// PCI address, under the name results give it ("gpu3"). gpu-count records
// them in its result (benchmarks.Result.Components) for the run's report.
// A fact NVML cannot read (serials on parts that have none, a lost GPU) is
// left empty and a device without a handle is left out: the inventory
// never changes a verdict; the health checks judge the device.
func inventory(lib nvml.Interface, n int) []benchmarks.Component {
	var out []benchmarks.Component
	for i := 0; i < n; i++ {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		c := benchmarks.Component{Kind: benchmarks.ComponentGPU, Name: gpu{index: i}.id()}
		if uuid, ret := dev.GetUUID(); ret == nvml.SUCCESS {
			c.UUID = uuid
		}
		if serial, ret := dev.GetSerial(); ret == nvml.SUCCESS {
			c.Serial = serial
		}
		if name, ret := dev.GetName(); ret == nvml.SUCCESS {
			c.Model = name
		}
		if info, ret := dev.GetPciInfo(); ret == nvml.SUCCESS {
			c.PCI = busID(info)
		}
		out = append(out, c)
	}
	return out
}
