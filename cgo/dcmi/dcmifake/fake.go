// Package dcmifake is a whole-node fake of dcmi.Interface for tests: a
// list of NPUs with their health, error codes, ECC counters, network
// health, telemetry and processes, and per-call errors to inject.
package dcmifake

import (
	"fmt"
	"sync"

	"github.com/vigil-hpc/vigil/cgo/dcmi"
)

// NPU is one fake chip.
type NPU struct {
	Dev    dcmi.Device
	Chip   dcmi.ChipInfo
	Label  dcmi.ELabel // the board's electronic label, its serial
	Health uint32
	Codes  []uint32
	HBMECC dcmi.ECCInfo
	Net    dcmi.NetHealth
	Util   uint32 // AI core utilisation, percent
	PowerW float64
	HBM    dcmi.HBMInfo
	Procs  []dcmi.Process
	// Errs makes the named method ("Health", "ECC", "NetworkHealth", ...)
	// fail on this chip.
	Errs map[string]error
}

// Node is a fake dcmi.Interface.
type Node struct {
	NPUs []*NPU
	// InitErr and DevicesErr make Init and Devices fail.
	InitErr, DevicesErr error

	mu     sync.Mutex
	inited bool
	// Calls counts method calls by name.
	Calls map[string]int
}

var _ dcmi.Interface = (*Node)(nil)

// Serial is the board serial Healthy gives the chip on card i.
func Serial(i int) string { return fmt.Sprintf("1023854670%02d", i) }

// Healthy returns a healthy node of n Ascend 910B3 chips, one per card
// (its board labelled with Serial(card)), logical ids 0..n-1, 4 GiB of
// 64 GiB HBM in use (what an idle part holds for the system, per Huawei's
// DCMI reference).
func Healthy(n int) *Node {
	node := &Node{}
	for i := 0; i < n; i++ {
		node.NPUs = append(node.NPUs, &NPU{
			Dev:    dcmi.Device{Card: i, Chip: 0, Logic: i, PCI: fmt.Sprintf("0000:%02x:00.0", 0xc1+i)},
			Chip:   dcmi.ChipInfo{Type: "Ascend", Name: "910B3", Version: "V1", AICores: 20},
			Label:  dcmi.ELabel{Product: "Atlas 800T A2", Manufacturer: "Huawei", Serial: Serial(i)},
			HBMECC: dcmi.ECCInfo{Enabled: true},
			Net:    dcmi.NetOK,
			PowerW: 95,
			HBM:    dcmi.HBMInfo{TotalMiB: 65536, UsedMiB: 4096, FreqMHz: 1600, TempC: 38},
		})
	}
	return node
}

func (n *Node) call(name string, d dcmi.Device) (*NPU, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.Calls == nil {
		n.Calls = map[string]int{}
	}
	n.Calls[name]++
	if !n.inited {
		return nil, &dcmi.Error{Op: name, Code: dcmi.ErrNotReady}
	}
	for _, p := range n.NPUs {
		if p.Dev.Card == d.Card && p.Dev.Chip == d.Chip {
			if err := p.Errs[name]; err != nil {
				return nil, err
			}
			return p, nil
		}
	}
	return nil, &dcmi.Error{Op: name, Code: dcmi.ErrDeviceNotExist}
}

// Init marks the fake initialised.
func (n *Node) Init() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.InitErr != nil {
		return n.InitErr
	}
	n.inited = true
	return nil
}

// Devices lists the fake chips.
func (n *Node) Devices() ([]dcmi.Device, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.inited {
		return nil, &dcmi.Error{Op: "dcmi_get_card_num_list", Code: dcmi.ErrNotReady}
	}
	if n.DevicesErr != nil {
		return nil, n.DevicesErr
	}
	var out []dcmi.Device
	for _, p := range n.NPUs {
		out = append(out, p.Dev)
	}
	return out, nil
}

// ChipInfo returns the chip's info.
func (n *Node) ChipInfo(d dcmi.Device) (dcmi.ChipInfo, error) {
	p, err := n.call("ChipInfo", d)
	if err != nil {
		return dcmi.ChipInfo{}, err
	}
	return p.Chip, nil
}

// ELabel returns the chip's electronic label.
func (n *Node) ELabel(d dcmi.Device) (dcmi.ELabel, error) {
	p, err := n.call("ELabel", d)
	if err != nil {
		return dcmi.ELabel{}, err
	}
	return p.Label, nil
}

// Health returns the chip's health.
func (n *Node) Health(d dcmi.Device) (uint32, error) {
	p, err := n.call("Health", d)
	if err != nil {
		return 0, err
	}
	return p.Health, nil
}

// ErrorCodes returns the chip's error codes.
func (n *Node) ErrorCodes(d dcmi.Device) ([]uint32, error) {
	p, err := n.call("ErrorCodes", d)
	if err != nil {
		return nil, err
	}
	return p.Codes, nil
}

// ECC returns the chip's HBM ECC counters; other memories are not supported.
func (n *Node) ECC(d dcmi.Device, kind dcmi.MemoryKind) (dcmi.ECCInfo, error) {
	p, err := n.call("ECC", d)
	if err != nil {
		return dcmi.ECCInfo{}, err
	}
	if kind != dcmi.MemoryHBM {
		return dcmi.ECCInfo{}, &dcmi.Error{Op: "dcmi_get_device_ecc_info", Code: dcmi.ErrNotSupport}
	}
	return p.HBMECC, nil
}

// NetworkHealth returns the chip's RoCE network health.
func (n *Node) NetworkHealth(d dcmi.Device) (dcmi.NetHealth, error) {
	p, err := n.call("NetworkHealth", d)
	if err != nil {
		return 0, err
	}
	return p.Net, nil
}

// Utilization returns the AI core utilisation for UtilAICore, 0 otherwise.
func (n *Node) Utilization(d dcmi.Device, kind dcmi.UtilKind) (uint32, error) {
	p, err := n.call("Utilization", d)
	if err != nil {
		return 0, err
	}
	if kind == dcmi.UtilAICore {
		return p.Util, nil
	}
	return 0, nil
}

// PowerW returns the chip's power.
func (n *Node) PowerW(d dcmi.Device) (float64, error) {
	p, err := n.call("PowerW", d)
	if err != nil {
		return 0, err
	}
	return p.PowerW, nil
}

// HBM returns the chip's HBM info.
func (n *Node) HBM(d dcmi.Device) (dcmi.HBMInfo, error) {
	p, err := n.call("HBM", d)
	if err != nil {
		return dcmi.HBMInfo{}, err
	}
	return p.HBM, nil
}

// Processes returns the chip's processes.
func (n *Node) Processes(d dcmi.Device) ([]dcmi.Process, error) {
	p, err := n.call("Processes", d)
	if err != nil {
		return nil, err
	}
	return p.Procs, nil
}

// Close does nothing.
func (n *Node) Close() error { return nil }
