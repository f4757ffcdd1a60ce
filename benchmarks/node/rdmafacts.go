package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/pci"
)

// The RDMA facts of a node, read from sysfs (Documentation/ABI/stable/
// sysfs-class-infiniband in the kernel tree):
//
//	/sys/class/infiniband/<dev>/hca_type                  "MT4129" (optional)
//	/sys/class/infiniband/<dev>/node_guid                 "b8ce:f603:00a1:2b3c" (the adapter's identity)
//	/sys/class/infiniband/<dev>/device                    link to the PCI function ("../../../0000:3b:00.0")
//	/sys/class/infiniband/<dev>/ports/<n>/state           "4: ACTIVE"
//	/sys/class/infiniband/<dev>/ports/<n>/phys_state      "5: LinkUp"
//	/sys/class/infiniband/<dev>/ports/<n>/rate            "400 Gb/sec (4X NDR)"
//	/sys/class/infiniband/<dev>/ports/<n>/link_layer      "InfiniBand" or "Ethernet" (RoCE)
//	/sys/class/infiniband/<dev>/ports/<n>/counters/<name> one decimal number each
//
// GPUDirect RDMA needs the NVIDIA peer-memory module: /sys/module/nvidia_peermem
// (driver 470 and later) or the legacy Mellanox nv_peer_mem.

// ibClass is where the RDMA devices are, under the root.
const ibClass = "sys/class/infiniband"

// peerMemModules are the kernel modules that give NCCL GPUDirect RDMA.
var peerMemModules = []string{"nvidia_peermem", "nv_peer_mem"}

// rdmaPort is one port of one RDMA device as sysfs shows it.
type rdmaPort struct {
	// Device and Port name it ("mlx5_0", 1).
	Device string
	Port   int
	// HCA is the device's hca_type ("MT4129"), "" when not shown.
	HCA string
	// GUID is the device's node_guid, PCI the address of its PCI
	// function; "" when not shown.
	GUID, PCI string
	// State and PhysState are the names after the number ("ACTIVE", "LinkUp").
	State, PhysState string
	// RateGbps is the port's data rate in Gb/s (active width × speed).
	RateGbps float64
	// LinkLayer is "InfiniBand" or "Ethernet" (RoCE).
	LinkLayer string
	// Counters are the port's counters/* files that read as numbers.
	Counters map[string]uint64
}

// Name is "dev/port" ("mlx5_0/1").
func (p rdmaPort) Name() string { return fmt.Sprintf("%s/%d", p.Device, p.Port) }

// Component is the port as a part of the node with its own identity (the
// adapter's GUID and the port's number), for the report.
func (p rdmaPort) Component() benchmarks.Component {
	return benchmarks.Component{Kind: benchmarks.ComponentHCA, Name: p.Name(), GUID: p.GUID, Port: p.Port, Model: p.HCA, PCI: p.PCI}
}

// Active reports whether the port is up: logical state ACTIVE and the
// physical link up.
func (p rdmaPort) Active() bool {
	return (p.State == "ACTIVE" || p.State == "ACTIVE_DEFER") && p.PhysState == "LinkUp"
}

// sysfsValue is a sysfs "N: NAME" value's name ("4: ACTIVE" → "ACTIVE");
// a value without a number is returned trimmed.
func sysfsValue(s string) string {
	s = strings.TrimSpace(s)
	if _, name, ok := strings.Cut(s, ":"); ok {
		return strings.TrimSpace(name)
	}
	return s
}

// parseRate reads "400 Gb/sec (4X NDR)" as 400.
func parseRate(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) < 2 || !strings.HasPrefix(f[1], "Gb/sec") {
		return 0, fmt.Errorf("rate %q: want \"N Gb/sec ...\"", strings.TrimSpace(s))
	}
	return strconv.ParseFloat(f[0], 64)
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// readRDMAPorts reads every port of every RDMA device under root, sorted by
// device and port. No /sys/class/infiniband is no device (nil, nil).
func readRDMAPorts(root string) ([]rdmaPort, error) {
	devs, err := os.ReadDir(filepath.Join(root, ibClass))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []rdmaPort
	for _, d := range devs {
		dir := filepath.Join(root, ibClass, d.Name())
		hca, _ := readTrim(filepath.Join(dir, "hca_type"))
		guid, _ := readTrim(filepath.Join(dir, "node_guid"))
		addr := pciOf(dir)
		ports, err := os.ReadDir(filepath.Join(dir, "ports"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name(), err)
		}
		for _, p := range ports {
			n, err := strconv.Atoi(p.Name())
			if err != nil {
				continue
			}
			port, err := readRDMAPort(filepath.Join(dir, "ports", p.Name()))
			if err != nil {
				return nil, fmt.Errorf("%s/%d: %w", d.Name(), n, err)
			}
			port.Device, port.Port, port.HCA, port.GUID, port.PCI = d.Name(), n, hca, guid, addr
			out = append(out, port)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Device != out[j].Device {
			return out[i].Device < out[j].Device
		}
		return out[i].Port < out[j].Port
	})
	return out, nil
}

// pciOf is the PCI address the RDMA device directory dir links to as its
// device, "" when it links to none (a software device such as rxe).
func pciOf(dir string) string {
	link, err := os.Readlink(filepath.Join(dir, "device"))
	if err != nil {
		return ""
	}
	addr := pci.Normalise(filepath.Base(link))
	if strings.Count(addr, ":") != 2 || !strings.Contains(addr, ".") {
		return ""
	}
	return addr
}

// readRDMAPort reads one port directory. state and phys_state must read;
// the rate of a port that is down may be missing.
func readRDMAPort(dir string) (rdmaPort, error) {
	var p rdmaPort
	state, err := readTrim(filepath.Join(dir, "state"))
	if err != nil {
		return p, err
	}
	phys, err := readTrim(filepath.Join(dir, "phys_state"))
	if err != nil {
		return p, err
	}
	p.State, p.PhysState = sysfsValue(state), sysfsValue(phys)
	if r, err := readTrim(filepath.Join(dir, "rate")); err == nil {
		if p.RateGbps, err = parseRate(r); err != nil && p.Active() {
			return p, err
		}
	}
	p.LinkLayer, _ = readTrim(filepath.Join(dir, "link_layer"))
	p.Counters = map[string]uint64{}
	cs, _ := os.ReadDir(filepath.Join(dir, "counters"))
	for _, c := range cs {
		s, err := readTrim(filepath.Join(dir, "counters", c.Name()))
		if err != nil {
			continue // some drivers refuse to read a counter they lack
		}
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			p.Counters[c.Name()] = v
		}
	}
	return p, nil
}

// peerMemLoaded returns the loaded peer-memory module, "" when none is.
func peerMemLoaded(root string) string {
	for _, m := range peerMemModules {
		if st, err := os.Stat(filepath.Join(root, "sys", "module", m)); err == nil && st.IsDir() {
			return m
		}
	}
	return ""
}

// RDMASummary is what the job's nodes compare of their RDMA fabric: small,
// JSON-encodable, the same on every node that is wired alike.
type RDMASummary struct {
	// Devices is the number of RDMA devices (/sys/class/infiniband/*).
	Devices int `json:"devices"`
	// Ports is the number of ports of those devices.
	Ports int `json:"ports"`
	// ActivePorts is the number of ports that are ACTIVE and LinkUp.
	ActivePorts int `json:"active_ports"`
	// MinRateGbps is the rate of the slowest active port in Gb/s (0: none active).
	MinRateGbps float64 `json:"min_rate_gbps"`
	// TotalRateGbps is the sum of the active ports' rates in Gb/s.
	TotalRateGbps float64 `json:"total_rate_gbps"`
	// GDR is true when a GPUDirect RDMA peer-memory module is loaded.
	GDR bool `json:"gdr"`
	// GDRModule is that module ("nvidia_peermem"), "" without one.
	GDRModule string `json:"gdr_module,omitempty"`
}

// summarise reduces ports and the peer-memory module to a summary.
func summarise(ports []rdmaPort, module string) RDMASummary {
	s := RDMASummary{Ports: len(ports), GDR: module != "", GDRModule: module}
	devs := map[string]bool{}
	for _, p := range ports {
		devs[p.Device] = true
		if !p.Active() {
			continue
		}
		s.ActivePorts++
		s.TotalRateGbps += p.RateGbps
		if s.MinRateGbps == 0 || p.RateGbps < s.MinRateGbps {
			s.MinRateGbps = p.RateGbps
		}
	}
	s.Devices = len(devs)
	return s
}

// ReadRDMASummary reads this node's RDMA summary from the sysfs under root
// ("/" on a node). A node without RDMA devices has a zero summary (GDR
// still read).
func ReadRDMASummary(root string) (RDMASummary, error) {
	ports, err := readRDMAPorts(root)
	if err != nil {
		return RDMASummary{}, err
	}
	return summarise(ports, peerMemLoaded(root)), nil
}

// RDMASummaryFrom reads this node's RDMA summary under the root that
// [checks.rdma] sets: settings decodes that section (nil: the defaults).
// The cross-node phase's rdma-peers reads it so, so that one key names the
// root for both checks.
func RDMASummaryFrom(settings func(v any) error) (RDMASummary, error) {
	s := defaultRdmaSettings()
	if settings != nil {
		if err := settings(s); err != nil {
			return RDMASummary{}, err
		}
	}
	return ReadRDMASummary(s.Root)
}
