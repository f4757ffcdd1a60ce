package benchmarks

import (
	"strconv"
	"strings"
)

// Component kinds: the parts of a node that keep an identity of their own
// when they move from one node to another.
const (
	// ComponentGPU is an NVIDIA GPU (NVML).
	ComponentGPU = "gpu"
	// ComponentNPU is an Ascend NPU chip (DCMI).
	ComponentNPU = "npu"
	// ComponentHCA is one port of an RDMA host channel adapter (sysfs).
	ComponentHCA = "hca"
)

// Component is one part of the node a check found, named both as the
// results name it on this node (Name, "gpu3") and by what stays with the
// part wherever it goes (a GPU's UUID, a board's serial, an HCA's GUID).
// The device-count checks and rdma list every part of their kind on the
// node (Result.Components); the run's report carries them once
// (report.Report.Components), so that a result's Device maps to the part
// that was measured. Fields the vendor library does not give are empty.
type Component struct {
	// Kind is ComponentGPU, ComponentNPU or ComponentHCA.
	Kind string `json:"kind"`
	// Name is the part's name in results on this node: "gpu3" (NVML
	// index), "npu0" (logical id), "mlx5_0/1" (device and port).
	Name string `json:"name"`
	// UUID is the GPU's UUID as NVML gives it ("GPU-5d2c...").
	UUID string `json:"uuid,omitempty"`
	// Serial is the board's serial number (NVML, DCMI's electronic label).
	Serial string `json:"serial,omitempty"`
	// GUID is the HCA's node GUID as sysfs writes it ("b8ce:f603:00a1:2b3c").
	GUID string `json:"guid,omitempty"`
	// Port is the HCA port's number (1 for "mlx5_0/1"); 0 for other kinds.
	Port int `json:"port,omitempty"`
	// Model is the product ("NVIDIA H100 80GB HBM3", "Ascend910B3", "MT4129").
	Model string `json:"model,omitempty"`
	// PCI is the part's PCI address ("0000:3b:00.0"), where known.
	PCI string `json:"pci,omitempty"`
}

// ID is the component's stable identity, the same on every node it is
// put in: "gpu:GPU-5d2c..." (the UUID), "gpu:sn-1650..." or
// "npu:sn-0x1234..." (the serial where there is no UUID),
// "hca:b8ce:f603:00a1:2b3c/1" (node GUID and port). It is "" when the
// library gave nothing stable: such a part is known only by node and name.
func (c Component) ID() string {
	switch {
	case c.Kind == ComponentHCA && c.GUID != "":
		return c.Kind + ":" + strings.ToLower(c.GUID) + "/" + strconv.Itoa(c.Port)
	case c.Kind == ComponentHCA:
		return ""
	case c.UUID != "":
		return c.Kind + ":" + c.UUID
	case c.Serial != "":
		return c.Kind + ":sn-" + c.Serial
	}
	return ""
}
