// Package dcmi binds Huawei's DCMI (libdcmi.so), the management library of
// Ascend NPUs, opened at run time with dlopen: device enumeration, health
// and error codes, ECC, RoCE network health, utilisation, power, HBM and the
// processes holding a device.
//
// Prototypes, structures and constants follow Huawei's published header
// dcmi_interface_api.h (as shipped with the Ascend driver under
// /usr/local/dcmi and mirrored in Ascend/mind-cluster,
// component/ascend-common/devmanager/dcmi/dcmi_interface_api.h) and the
// "Ascend 910B DCMI API" reference; only what vigil uses is declared.
//
// The rest of vigil uses the Interface; Lib is the real implementation and
// package dcmifake a whole-node fake for tests. Nothing is loaded until
// Open is called.
package dcmi

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// struct dcmi_chip_info (MAX_CHIP_NAME_LEN 32).
struct vigil_dcmi_chip_info {
	unsigned char chip_type[32];
	unsigned char chip_name[32];
	unsigned char chip_ver[32];
	unsigned int aicore_cnt;
};

// struct dcmi_pcie_info_all (64 bytes).
struct vigil_dcmi_pcie_info_all {
	unsigned int venderid;
	unsigned int subvenderid;
	unsigned int deviceid;
	unsigned int subdeviceid;
	int domain;
	unsigned int bdf_busid;
	unsigned int bdf_deviceid;
	unsigned int bdf_funcid;
	unsigned char reserve[32];
};

// struct dcmi_ecc_info.
struct vigil_dcmi_ecc_info {
	int enable_flag;
	unsigned int single_bit_error_cnt;
	unsigned int double_bit_error_cnt;
	unsigned int total_single_bit_error_cnt;
	unsigned int total_double_bit_error_cnt;
	unsigned int single_bit_isolated_pages_cnt;
	unsigned int double_bit_isolated_pages_cnt;
};

// struct dcmi_hbm_info (memory_size and memory_usage in MB).
struct vigil_dcmi_hbm_info {
	unsigned long long memory_size;
	unsigned int freq;
	unsigned long long memory_usage;
	int temp;
	unsigned int bandwith_util_rate;
};

// struct dcmi_elabel_info (MAX_LENTH 256; char arrays, read as bytes).
struct vigil_dcmi_elabel_info {
	unsigned char product_name[256];
	unsigned char model[256];
	unsigned char manufacturer[256];
	unsigned char manufacturer_date[256];
	unsigned char serial_number[256];
};

// struct dcmi_proc_mem_info.
struct vigil_dcmi_proc_mem_info {
	int proc_id;
	unsigned long proc_mem_usage;
};

// Trampolines with the prototypes of dcmi_interface_api.h, e.g.
// int dcmi_get_device_health(int card_id, int device_id, unsigned int *health);
// enum arguments (dcmi_device_type, dcmi_rdfx_detect_result) are int-sized.
static int vigil_dcmi_void(void *f) { return ((int (*)(void))f)(); }
static int vigil_dcmi_list(void *f, int *n, int *list, int len) {
	return ((int (*)(int *, int *, int))f)(n, list, len);
}
static int vigil_dcmi_card_int(void *f, int card, int *out) {
	return ((int (*)(int, int *))f)(card, out);
}
static int vigil_dcmi_logic_id(void *f, int *logic, int card, int dev) {
	return ((int (*)(int *, int, int))f)(logic, card, dev);
}
static int vigil_dcmi_dev_ptr(void *f, int card, int dev, void *out) {
	return ((int (*)(int, int, void *))f)(card, dev, out);
}
static int vigil_dcmi_dev_int_ptr(void *f, int card, int dev, int kind, void *out) {
	return ((int (*)(int, int, int, void *))f)(card, dev, kind, out);
}
static int vigil_dcmi_errorcode_v2(void *f, int card, int dev, int *count, unsigned int *list, unsigned int len) {
	return ((int (*)(int, int, int *, unsigned int *, unsigned int))f)(card, dev, count, list, len);
}
static int vigil_dcmi_resource_info(void *f, int card, int dev, struct vigil_dcmi_proc_mem_info *p, int *n) {
	return ((int (*)(int, int, struct vigil_dcmi_proc_mem_info *, int *))f)(card, dev, p, n);
}
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// DefaultNames are the DCMI file names tried.
var DefaultNames = []string{"libdcmi.so"}

// DefaultDirs are where the Ascend driver installs libdcmi.so.
var DefaultDirs = []string{
	"/usr/local/dcmi",
	"/usr/local/Ascend/driver/lib64/driver",
	"/usr/local/Ascend/driver/lib64/common",
	"/usr/local/Ascend/driver/lib64",
}

// Health values of dcmi_get_device_health ("Ascend 910B DCMI API",
// dcmi_get_device_health: 0 normal, 1 minor alarm, 2 major alarm, 3
// critical alarm, 0xFFFFFFFF the device does not exist).
const (
	HealthOK       uint32 = 0
	HealthMinor    uint32 = 1
	HealthMajor    uint32 = 2
	HealthCritical uint32 = 3
	HealthAbsent   uint32 = 0xFFFFFFFF
)

// HealthName describes a dcmi_get_device_health value.
func HealthName(h uint32) string {
	switch h {
	case HealthOK:
		return "OK"
	case HealthMinor:
		return "minor alarm"
	case HealthMajor:
		return "major alarm"
	case HealthCritical:
		return "critical alarm"
	case HealthAbsent:
		return "device absent"
	}
	return fmt.Sprintf("health %d", h)
}

// NetHealth is enum dcmi_rdfx_detect_result, the result of the RoCE
// network detection of dcmi_get_device_network_health.
type NetHealth int

// Network health values (enum dcmi_rdfx_detect_result).
const (
	NetOK           NetHealth = 0 // DCMI_RDFX_DETECT_OK
	NetSockFail     NetHealth = 1 // DCMI_RDFX_DETECT_SOCK_FAIL
	NetRecvTimeout  NetHealth = 2 // DCMI_RDFX_DETECT_RECV_TIMEOUT
	NetUnreachable  NetHealth = 3 // DCMI_RDFX_DETECT_UNREACH
	NetTimeExceeded NetHealth = 4 // DCMI_RDFX_DETECT_TIME_EXCEEDED
	NetFault        NetHealth = 5 // DCMI_RDFX_DETECT_FAULT
	NetInit         NetHealth = 6 // DCMI_RDFX_DETECT_INIT (detection not started)
	NetThreadErr    NetHealth = 7 // DCMI_RDFX_DETECT_THREAD_ERR
	NetIPSet        NetHealth = 8 // DCMI_RDFX_DETECT_IP_SET
)

func (n NetHealth) String() string {
	switch n {
	case NetOK:
		return "OK"
	case NetSockFail:
		return "socket failure"
	case NetRecvTimeout:
		return "receive timeout"
	case NetUnreachable:
		return "unreachable"
	case NetTimeExceeded:
		return "time exceeded"
	case NetFault:
		return "fault"
	case NetInit:
		return "detection not started"
	case NetThreadErr:
		return "detection thread error"
	case NetIPSet:
		return "IP being set"
	}
	return fmt.Sprintf("network health %d", int(n))
}

// MemoryKind is enum dcmi_device_type, the memory whose ECC counters are read.
type MemoryKind int

// Memory kinds (enum dcmi_device_type).
const (
	MemoryDDR  MemoryKind = 0 // DCMI_DEVICE_TYPE_DDR
	MemorySRAM MemoryKind = 1 // DCMI_DEVICE_TYPE_SRAM
	MemoryHBM  MemoryKind = 2 // DCMI_DEVICE_TYPE_HBM
)

// UtilKind is the input_type of dcmi_get_device_utilization_rate.
type UtilKind int

// Utilisation kinds (DCMI_UTILIZATION_RATE_* in the header).
const (
	UtilDDR          UtilKind = 1  // DCMI_UTILIZATION_RATE_DDR
	UtilAICore       UtilKind = 2  // DCMI_UTILIZATION_RATE_AICORE
	UtilAICPU        UtilKind = 3  // DCMI_UTILIZATION_RATE_AICPU
	UtilCtrlCPU      UtilKind = 4  // DCMI_UTILIZATION_RATE_CTRLCPU
	UtilHBM          UtilKind = 6  // DCMI_UTILIZATION_RATE_HBM
	UtilHBMBandwidth UtilKind = 10 // DCMI_UTILIZATION_RATE_HBM_BANDWIDTH
	UtilVectorCore   UtilKind = 12 // DCMI_UTILIZATION_RATE_VECTORCORE
)

// Device names one NPU chip: DCMI addresses it by card and chip within the
// card; ACL and HCCL by its logical id.
type Device struct {
	// Card is the DCMI card id (from dcmi_get_card_num_list).
	Card int
	// Chip is the device id within the card.
	Chip int
	// Logic is the logical id (dcmi_get_device_logic_id) that ACL, HCCL and
	// npu-smi use; -1 when the library cannot tell.
	Logic int
	// PCI is the chip's PCI address ("0000:c1:00.0"), empty when unknown.
	PCI string
}

// ChipInfo is struct dcmi_chip_info.
type ChipInfo struct {
	// Type is the chip type ("Ascend"), Name its model ("910B3"), Version
	// its revision ("V1").
	Type, Name, Version string
	// AICores is the number of AI cores.
	AICores int
}

// Model is how thresholds name the part: Type+Name ("Ascend910B3").
func (c ChipInfo) Model() string { return c.Type + c.Name }

// ECCInfo is struct dcmi_ecc_info for one memory.
type ECCInfo struct {
	// Enabled reports whether ECC is on.
	Enabled bool
	// SingleBit and DoubleBit are the current correctable and
	// uncorrectable error counts.
	SingleBit, DoubleBit uint32
	// TotalSingleBit and TotalDoubleBit are lifetime counts.
	TotalSingleBit, TotalDoubleBit uint32
	// SingleBitIsolatedPages and DoubleBitIsolatedPages are the memory
	// pages isolated after errors.
	SingleBitIsolatedPages, DoubleBitIsolatedPages uint32
}

// HBMInfo is struct dcmi_hbm_info.
type HBMInfo struct {
	// TotalMiB and UsedMiB are the HBM size and the memory in use, MiB
	// (the header's unit is MB = 2^20 bytes).
	TotalMiB, UsedMiB uint64
	// FreqMHz is the HBM clock; TempC its temperature in °C.
	FreqMHz uint32
	TempC   int
	// BandwidthUtil is the HBM bandwidth utilisation, percent.
	BandwidthUtil uint32
}

// ELabel is struct dcmi_elabel_info: the electronic label of the NPU's
// board. Serial stays with the board from node to node.
type ELabel struct {
	// Product and Model name the board, Manufacturer its maker, Date the
	// day it was made, Serial its serial number.
	Product, Model, Manufacturer, Date, Serial string
}

// Process is struct dcmi_proc_mem_info: a process holding device memory.
type Process struct {
	// PID is the host process id.
	PID int
	// MemBytes is the device memory it holds (the header does not give the
	// unit; the driver reports bytes).
	MemBytes uint64
}

// Interface is what vigil needs from DCMI. Lib implements it; dcmifake.Node
// is a fake for tests. Every method but Init and Close may be called
// concurrently.
type Interface interface {
	// Init initialises the library (dcmi_init). It must be called first.
	Init() error
	// Devices lists every NPU chip of the node, card by card.
	Devices() ([]Device, error)
	// ChipInfo is dcmi_get_device_chip_info.
	ChipInfo(d Device) (ChipInfo, error)
	// ELabel is dcmi_get_device_elabel_info (not on every part: the 310P
	// lacks it).
	ELabel(d Device) (ELabel, error)
	// Health is dcmi_get_device_health (HealthOK ... HealthAbsent).
	Health(d Device) (uint32, error)
	// ErrorCodes is dcmi_get_device_errorcode_v2: the device's current error codes.
	ErrorCodes(d Device) ([]uint32, error)
	// ECC is dcmi_get_device_ecc_info for one memory kind.
	ECC(d Device, kind MemoryKind) (ECCInfo, error)
	// NetworkHealth is dcmi_get_device_network_health (RoCE detection).
	NetworkHealth(d Device) (NetHealth, error)
	// Utilization is dcmi_get_device_utilization_rate, percent.
	Utilization(d Device, kind UtilKind) (uint32, error)
	// PowerW is dcmi_get_device_power_info, watts (the library reports 0.1 W units).
	PowerW(d Device) (float64, error)
	// HBM is dcmi_get_device_hbm_info.
	HBM(d Device) (HBMInfo, error)
	// Processes is dcmi_get_device_resource_info: processes holding the device.
	Processes(d Device) ([]Process, error)
	// Close unloads the library.
	Close() error
}

// maxCards bounds dcmi_get_card_num_list (MAX_CARD_NUM is 64).
const maxCards = 64

// maxErrorCodes bounds dcmi_get_device_errorcode_v2's list.
const maxErrorCodes = 128

// maxProcs bounds dcmi_get_device_resource_info's list.
const maxProcs = 1024

// Lib is an opened libdcmi.so.
type Lib struct {
	lib  *dl.Library
	once sync.Once
	err  error
	f    struct {
		init, cardList, devNum                                    unsafe.Pointer
		logicID, pcie, chipInfo, health, errCodes, ecc, netHealth unsafe.Pointer
		util, power, hbm, resource, elabel                        unsafe.Pointer
	}
}

var _ Interface = (*Lib)(nil)

// Open loads libdcmi.so (o.Names defaults to DefaultNames, and DefaultDirs
// are searched after o.Dirs). dcmi_init, the card list and the device count
// are required; the other functions are looked up too, and one the driver
// lacks makes only its own method fail (with an error wrapping dl.ErrSymbol).
func Open(o dl.Options) (*Lib, error) {
	lib, err := dl.Open(o.WithDefaults(DefaultNames, DefaultDirs))
	if err != nil {
		return nil, err
	}
	l := &Lib{lib: lib}
	f := &l.f
	if err := lib.Syms(map[string]*unsafe.Pointer{"dcmi_init": &f.init, "dcmi_get_device_num_in_card": &f.devNum}); err != nil {
		lib.Close()
		return nil, err
	}
	// dcmi_get_card_num_list is the current name; older drivers have
	// dcmi_get_card_list with the same prototype.
	if f.cardList, err = lib.Sym("dcmi_get_card_num_list"); err != nil {
		if f.cardList, err = lib.Sym("dcmi_get_card_list"); err != nil {
			lib.Close()
			return nil, err
		}
	}
	for name, p := range map[string]*unsafe.Pointer{
		"dcmi_get_device_logic_id":         &f.logicID,
		"dcmi_get_device_pcie_info_v2":     &f.pcie,
		"dcmi_get_device_chip_info":        &f.chipInfo,
		"dcmi_get_device_elabel_info":      &f.elabel,
		"dcmi_get_device_health":           &f.health,
		"dcmi_get_device_errorcode_v2":     &f.errCodes,
		"dcmi_get_device_ecc_info":         &f.ecc,
		"dcmi_get_device_network_health":   &f.netHealth,
		"dcmi_get_device_utilization_rate": &f.util,
		"dcmi_get_device_power_info":       &f.power,
		"dcmi_get_device_hbm_info":         &f.hbm,
		"dcmi_get_device_resource_info":    &f.resource,
	} {
		*p, _ = lib.Sym(name) // nil: that method reports the missing symbol
	}
	return l, nil
}

// Path is the library file that was opened.
func (l *Lib) Path() string { return l.lib.Path }

// Close unloads the library.
func (l *Lib) Close() error { return l.lib.Close() }

// Init calls dcmi_init once; later calls return the first result.
func (l *Lib) Init() error {
	l.once.Do(func() { l.err = check("dcmi_init", int(C.vigil_dcmi_void(l.f.init))) })
	return l.err
}

func (l *Lib) sym(name string, p unsafe.Pointer) error {
	if p == nil {
		return fmt.Errorf("%s in %s: %w", name, l.lib.Path, dl.ErrSymbol)
	}
	return nil
}

// Devices lists the NPU chips: every card of dcmi_get_card_num_list, every
// chip of dcmi_get_device_num_in_card, with its logical id and PCI address
// where the library gives them.
func (l *Lib) Devices() ([]Device, error) {
	var n C.int
	list := make([]C.int, maxCards)
	if err := check("dcmi_get_card_num_list", int(C.vigil_dcmi_list(l.f.cardList, &n, &list[0], C.int(maxCards)))); err != nil {
		return nil, err
	}
	var out []Device
	for _, card := range list[:max(0, min(int(n), maxCards))] {
		var chips C.int
		if err := check("dcmi_get_device_num_in_card", int(C.vigil_dcmi_card_int(l.f.devNum, card, &chips))); err != nil {
			return out, fmt.Errorf("card %d: %w", int(card), err)
		}
		for chip := 0; chip < int(chips); chip++ {
			d := Device{Card: int(card), Chip: chip, Logic: -1}
			if l.f.logicID != nil {
				var id C.int
				if C.vigil_dcmi_logic_id(l.f.logicID, &id, card, C.int(chip)) == 0 {
					d.Logic = int(id)
				}
			}
			if l.f.pcie != nil {
				var p C.struct_vigil_dcmi_pcie_info_all
				if C.vigil_dcmi_dev_ptr(l.f.pcie, card, C.int(chip), unsafe.Pointer(&p)) == 0 {
					d.PCI = fmt.Sprintf("%04x:%02x:%02x.%x", int(p.domain), uint(p.bdf_busid), uint(p.bdf_deviceid), uint(p.bdf_funcid))
				}
			}
			out = append(out, d)
		}
	}
	return out, nil
}

func cstr(b []C.uchar) string {
	s := C.GoBytes(unsafe.Pointer(&b[0]), C.int(len(b)))
	if i := strings.IndexByte(string(s), 0); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(string(s))
}

// ChipInfo reads the chip's type, name and version.
func (l *Lib) ChipInfo(d Device) (ChipInfo, error) {
	const op = "dcmi_get_device_chip_info"
	if err := l.sym(op, l.f.chipInfo); err != nil {
		return ChipInfo{}, err
	}
	var c C.struct_vigil_dcmi_chip_info
	if err := check(op, int(C.vigil_dcmi_dev_ptr(l.f.chipInfo, C.int(d.Card), C.int(d.Chip), unsafe.Pointer(&c)))); err != nil {
		return ChipInfo{}, err
	}
	return ChipInfo{Type: cstr(c.chip_type[:]), Name: cstr(c.chip_name[:]), Version: cstr(c.chip_ver[:]), AICores: int(c.aicore_cnt)}, nil
}

// ELabel reads the electronic label of the chip's board.
func (l *Lib) ELabel(d Device) (ELabel, error) {
	const op = "dcmi_get_device_elabel_info"
	if err := l.sym(op, l.f.elabel); err != nil {
		return ELabel{}, err
	}
	var e C.struct_vigil_dcmi_elabel_info
	if err := check(op, int(C.vigil_dcmi_dev_ptr(l.f.elabel, C.int(d.Card), C.int(d.Chip), unsafe.Pointer(&e)))); err != nil {
		return ELabel{}, err
	}
	return ELabel{Product: cstr(e.product_name[:]), Model: cstr(e.model[:]), Manufacturer: cstr(e.manufacturer[:]),
		Date: cstr(e.manufacturer_date[:]), Serial: cstr(e.serial_number[:])}, nil
}

// Health reads the chip's overall health.
func (l *Lib) Health(d Device) (uint32, error) {
	const op = "dcmi_get_device_health"
	if err := l.sym(op, l.f.health); err != nil {
		return 0, err
	}
	var h C.uint
	err := check(op, int(C.vigil_dcmi_dev_ptr(l.f.health, C.int(d.Card), C.int(d.Chip), unsafe.Pointer(&h))))
	return uint32(h), err
}

// ErrorCodes reads the chip's current error codes.
func (l *Lib) ErrorCodes(d Device) ([]uint32, error) {
	const op = "dcmi_get_device_errorcode_v2"
	if err := l.sym(op, l.f.errCodes); err != nil {
		return nil, err
	}
	var n C.int
	list := make([]C.uint, maxErrorCodes)
	if err := check(op, int(C.vigil_dcmi_errorcode_v2(l.f.errCodes, C.int(d.Card), C.int(d.Chip), &n, &list[0], C.uint(maxErrorCodes)))); err != nil {
		return nil, err
	}
	var out []uint32
	for _, c := range list[:max(0, min(int(n), maxErrorCodes))] {
		out = append(out, uint32(c))
	}
	return out, nil
}

// ECC reads the ECC counters of one memory.
func (l *Lib) ECC(d Device, kind MemoryKind) (ECCInfo, error) {
	const op = "dcmi_get_device_ecc_info"
	if err := l.sym(op, l.f.ecc); err != nil {
		return ECCInfo{}, err
	}
	var e C.struct_vigil_dcmi_ecc_info
	if err := check(op, int(C.vigil_dcmi_dev_int_ptr(l.f.ecc, C.int(d.Card), C.int(d.Chip), C.int(kind), unsafe.Pointer(&e)))); err != nil {
		return ECCInfo{}, err
	}
	return ECCInfo{
		Enabled:   e.enable_flag != 0,
		SingleBit: uint32(e.single_bit_error_cnt), DoubleBit: uint32(e.double_bit_error_cnt),
		TotalSingleBit: uint32(e.total_single_bit_error_cnt), TotalDoubleBit: uint32(e.total_double_bit_error_cnt),
		SingleBitIsolatedPages: uint32(e.single_bit_isolated_pages_cnt), DoubleBitIsolatedPages: uint32(e.double_bit_isolated_pages_cnt),
	}, nil
}

// NetworkHealth reads the RoCE network detection result.
func (l *Lib) NetworkHealth(d Device) (NetHealth, error) {
	const op = "dcmi_get_device_network_health"
	if err := l.sym(op, l.f.netHealth); err != nil {
		return 0, err
	}
	var r C.int // enum dcmi_rdfx_detect_result
	err := check(op, int(C.vigil_dcmi_dev_ptr(l.f.netHealth, C.int(d.Card), C.int(d.Chip), unsafe.Pointer(&r))))
	return NetHealth(r), err
}

// Utilization reads one utilisation rate, percent.
func (l *Lib) Utilization(d Device, kind UtilKind) (uint32, error) {
	const op = "dcmi_get_device_utilization_rate"
	if err := l.sym(op, l.f.util); err != nil {
		return 0, err
	}
	var u C.uint
	err := check(op, int(C.vigil_dcmi_dev_int_ptr(l.f.util, C.int(d.Card), C.int(d.Chip), C.int(kind), unsafe.Pointer(&u))))
	return uint32(u), err
}

// PowerW reads the chip's power draw in watts.
func (l *Lib) PowerW(d Device) (float64, error) {
	const op = "dcmi_get_device_power_info"
	if err := l.sym(op, l.f.power); err != nil {
		return 0, err
	}
	var p C.int
	err := check(op, int(C.vigil_dcmi_dev_ptr(l.f.power, C.int(d.Card), C.int(d.Chip), unsafe.Pointer(&p))))
	return float64(p) / 10, err
}

// HBM reads the chip's HBM size and use.
func (l *Lib) HBM(d Device) (HBMInfo, error) {
	const op = "dcmi_get_device_hbm_info"
	if err := l.sym(op, l.f.hbm); err != nil {
		return HBMInfo{}, err
	}
	var h C.struct_vigil_dcmi_hbm_info
	if err := check(op, int(C.vigil_dcmi_dev_ptr(l.f.hbm, C.int(d.Card), C.int(d.Chip), unsafe.Pointer(&h)))); err != nil {
		return HBMInfo{}, err
	}
	return HBMInfo{TotalMiB: uint64(h.memory_size), UsedMiB: uint64(h.memory_usage), FreqMHz: uint32(h.freq), TempC: int(h.temp), BandwidthUtil: uint32(h.bandwith_util_rate)}, nil
}

// Processes lists the processes holding the chip.
func (l *Lib) Processes(d Device) ([]Process, error) {
	const op = "dcmi_get_device_resource_info"
	if err := l.sym(op, l.f.resource); err != nil {
		return nil, err
	}
	buf := (*C.struct_vigil_dcmi_proc_mem_info)(C.calloc(maxProcs, C.size_t(unsafe.Sizeof(C.struct_vigil_dcmi_proc_mem_info{}))))
	defer C.free(unsafe.Pointer(buf))
	n := C.int(maxProcs)
	if err := check(op, int(C.vigil_dcmi_resource_info(l.f.resource, C.int(d.Card), C.int(d.Chip), buf, &n))); err != nil {
		return nil, err
	}
	var out []Process
	for _, p := range unsafe.Slice(buf, maxProcs)[:max(0, min(int(n), maxProcs))] {
		out = append(out, Process{PID: int(p.proc_id), MemBytes: uint64(p.proc_mem_usage)})
	}
	return out, nil
}
