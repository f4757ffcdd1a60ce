package health

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeGPU is the state of one device of a fake node. Tests change fields to
// inject faults; errs makes a named call return an NVML error.
type fakeGPU struct {
	name            string
	busID           string // "0000:07:00.0"
	uuid, serial    string // what stays with the GPU: "GPU-...", the board serial
	eccUncorrected  uint64
	remapUnc        int
	remapPending    bool
	remapFailed     bool
	retiredPages    []uint64 // set with noRemap for a pre-Ampere device
	retiredPending  bool
	noRemap         bool // row remapping not supported (pre-Ampere)
	links           []nvml.EnableState
	curGen, maxGen  int
	curWidth, maxW  int
	eventReasons    uint64
	procs           []nvml.ProcessInfo
	memUsedMiB      uint64
	memTotalMiB     uint64
	errs            map[string]nvml.Return
	graphicsUnsuppt bool

	dev *mock.Device // built once, reads the fields above on every call
}

// fakeNVMLNode is a whole node behind go-nvml's mock.Interface, in the manner
// of go-nvml's dgxa100 server (which needs a module this build lacks).
type fakeNVMLNode struct {
	gpus []*fakeGPU
	// visible is how many of gpus NVML reports (the rest fell off the bus).
	visible  int
	initRet  nvml.Return
	countRet nvml.Return
	// calls counts Init and Shutdown.
	inits, shutdowns int
}

// h100BusIDs are the PCI addresses of a DGX H100's eight GPUs; the sysfs
// fixtures under testdata/sysfs use the same.
var h100BusIDs = []string{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
	"0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"}

// newHealthyNode is an 8-GPU H100 SXM node with nothing wrong.
func newHealthyNode() *fakeNVMLNode {
	n := &fakeNVMLNode{visible: 8, initRet: nvml.SUCCESS, countRet: nvml.SUCCESS}
	for i := 0; i < 8; i++ {
		links := make([]nvml.EnableState, 18)
		for l := range links {
			links[l] = nvml.FEATURE_ENABLED
		}
		n.gpus = append(n.gpus, &fakeGPU{
			name: "NVIDIA H100 80GB HBM3", busID: h100BusIDs[i], links: links,
			uuid: fakeUUID(i), serial: fmt.Sprintf("165202300%04d", i),
			curGen: 5, maxGen: 5, curWidth: 16, maxW: 16,
			eventReasons: nvml.ClocksEventReasonGpuIdle, memUsedMiB: 500, memTotalMiB: 81559,
			errs: map[string]nvml.Return{},
		})
	}
	return n
}

// fakeUUID is the UUID of the fake node's GPU i, in NVML's form.
func fakeUUID(i int) string {
	return fmt.Sprintf("GPU-6c1f0a%02x-3e2d-4b5a-9c8d-0000000000%02x", i, i)
}

// library returns a library whose NVML is this node.
func (n *fakeNVMLNode) library() *library {
	return &library{open: func() nvml.Interface { return n.iface() }}
}

func (n *fakeNVMLNode) iface() nvml.Interface {
	return &mock.Interface{
		InitFunc: func() nvml.Return {
			n.inits++
			return n.initRet
		},
		ShutdownFunc: func() nvml.Return {
			n.shutdowns++
			return nvml.SUCCESS
		},
		DeviceGetCountFunc: func() (int, nvml.Return) {
			if n.countRet != nvml.SUCCESS {
				return 0, n.countRet
			}
			return n.visible, nvml.SUCCESS
		},
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= n.visible {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return n.gpus[i].device(), nvml.SUCCESS
		},
	}
}

// ret returns the injected error for call, or SUCCESS.
func (g *fakeGPU) ret(call string) nvml.Return {
	if r, ok := g.errs[call]; ok {
		return r
	}
	return nvml.SUCCESS
}

func (g *fakeGPU) device() nvml.Device {
	if g.dev == nil {
		g.dev = g.newDevice()
	}
	return g.dev
}

func (g *fakeGPU) newDevice() *mock.Device {
	return &mock.Device{
		GetNameFunc:   func() (string, nvml.Return) { return g.name, g.ret("name") },
		GetUUIDFunc:   func() (string, nvml.Return) { return g.uuid, g.ret("uuid") },
		GetSerialFunc: func() (string, nvml.Return) { return g.serial, g.ret("serial") },
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			id := fmt.Sprintf("0000%s", g.busID) // NVML prints an 8-digit domain
			for i := 0; i < len(id) && i < len(p.BusId)-1; i++ {
				p.BusId[i] = int8(id[i])
			}
			return p, g.ret("pci")
		},
		GetTotalEccErrorsFunc: func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
			if t != nvml.MEMORY_ERROR_TYPE_UNCORRECTED || c != nvml.VOLATILE_ECC {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return g.eccUncorrected, g.ret("ecc")
		},
		GetRemappedRowsFunc: func() (int, int, bool, bool, nvml.Return) {
			if g.noRemap {
				return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED
			}
			return 0, g.remapUnc, g.remapPending, g.remapFailed, g.ret("remap")
		},
		GetRetiredPagesFunc: func(nvml.PageRetirementCause) ([]uint64, nvml.Return) {
			return g.retiredPages, g.ret("retired")
		},
		GetRetiredPagesPendingStatusFunc: func() (nvml.EnableState, nvml.Return) {
			if g.retiredPending {
				return nvml.FEATURE_ENABLED, g.ret("retired")
			}
			return nvml.FEATURE_DISABLED, g.ret("retired")
		},
		GetNvLinkStateFunc: func(link int) (nvml.EnableState, nvml.Return) {
			if r := g.ret("nvlink"); r != nvml.SUCCESS {
				return 0, r
			}
			if link < 0 || link >= len(g.links) {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return g.links[link], nvml.SUCCESS
		},
		GetCurrPcieLinkGenerationFunc: func() (int, nvml.Return) { return g.curGen, g.ret("pcie") },
		GetMaxPcieLinkGenerationFunc:  func() (int, nvml.Return) { return g.maxGen, g.ret("pcie") },
		GetCurrPcieLinkWidthFunc:      func() (int, nvml.Return) { return g.curWidth, g.ret("pcie") },
		GetMaxPcieLinkWidthFunc:       func() (int, nvml.Return) { return g.maxW, g.ret("pcie") },
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) {
			return g.eventReasons, g.ret("clocks")
		},
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return g.procs, g.ret("procs")
		},
		GetGraphicsRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			if g.graphicsUnsuppt {
				return nil, nvml.ERROR_NOT_SUPPORTED
			}
			return nil, g.ret("procs")
		},
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			total := g.memTotalMiB << 20
			used := g.memUsedMiB << 20
			return nvml.Memory{Total: total, Used: used, Free: total - used}, g.ret("memory")
		},
	}
}
