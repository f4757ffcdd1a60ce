// Package xid is vigil's one home for NVIDIA XID errors: the catalogue
// (what each XID is, whether it is a fault, and what it needs) and the one
// parser of the line the driver logs for it. The prolog/epilog xid check
// (benchmarks/nvidia/health) and the hang watcher (watcher/joblog) both classify
// XIDs here, so a node the watcher blames is a node the epilog fails.
//
// The catalogue follows NVIDIA's XID catalogue for Ampere and newer GPUs,
// https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
// (and its spreadsheet, Xid-Catalog.xlsx): each entry's Remedy is the
// catalogue's "Resolution Bucket (Immediate Action)". The rows were read
// through the copy leptonai/gpud generates from that spreadsheet
// (components/accelerator/nvidia/xid/catalog_generated.go, generated
// 2025-10-29); no code was taken from it.
package xid

import "slices"

// Remedy is what an XID needs, after NVIDIA's immediate-action buckets.
type Remedy uint8

// Remedies, from NVIDIA's "Resolution Bucket (Immediate Action)" column.
const (
	// RemedyNone: nothing (IGNORE; WORKFLOW_XID_45: the cleanup after
	// another XID, which carries the action).
	RemedyNone Remedy = iota
	// RemedyRestartApp: restart the application (RESTART_APP); the GPU
	// goes on.
	RemedyRestartApp
	// RemedyResetGPU: reset the GPU (RESET_GPU; WORKFLOW_XID_48, whose
	// action alone is a reset, with XID 63 or 64 a drain and reset).
	RemedyResetGPU
	// RemedyRebootNode: reboot the node (RESTART_BM, the bare-metal
	// restart of XID 79; RESTART_VM).
	RemedyRebootNode
	// RemedyCheckFabric: check the NVLink links and the fabric
	// (WORKFLOW_NVLINK_ERR, WORKFLOW_NVLINK5_ERR).
	RemedyCheckFabric
	// RemedyContactSupport: contact NVIDIA support (CONTACT_SUPPORT,
	// which the catalogue gives the codes unused on Ampere and newer).
	RemedyContactSupport
	// RemedyUpdateSoftware: update the driver or firmware (UPDATE_SWFW).
	RemedyUpdateSoftware
	// RemedyAsNamed: the recovery action the line names (XID 154,
	// "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset
	// Required)"); Event.Remedy reads it.
	RemedyAsNamed
)

var remedyWords = [...]string{
	RemedyNone:           "none",
	RemedyRestartApp:     "restart the application",
	RemedyResetGPU:       "reset the GPU",
	RemedyRebootNode:     "reboot the node",
	RemedyCheckFabric:    "check NVLink and the fabric",
	RemedyContactSupport: "contact support",
	RemedyUpdateSoftware: "update the driver or firmware",
	RemedyAsNamed:        "the recovery action it names",
}

// String says the remedy for messages ("reset the GPU").
func (r Remedy) String() string {
	if int(r) < len(remedyWords) {
		return remedyWords[r]
	}
	return "unknown"
}

// Fault reports whether the remedy goes beyond the application: the
// device needs an action (reset, reboot, a look at its links, support)
// before it is fit again. RESTART_APP and IGNORE XIDs are not faults,
// whatever part of the GPU reported them: NVIDIA's own NVSentinel draws
// the same line (only those buckets, and WORKFLOW_XID_45, are non-fatal;
// NVIDIA/NVSentinel pull request 1629).
func (r Remedy) Fault() bool {
	return r != RemedyNone && r != RemedyRestartApp
}

// ContainedECC is XID 94, a contained ECC error: the GPU stopped the
// process whose memory an uncorrectable error hit and goes on (a row
// remap pending). Not a fault to take the device out of service for
// (RESTART_APP), but a device memory error was what ended that process.
const ContainedECC = 94

// AppError reports whether the XID is the driver's word that an
// application's work on the GPU failed (RESTART_APP, ContainedECC aside:
// a graphics engine exception, a memory page fault, ...): that process
// crashed on the GPU it ran on.
func AppError(code int) bool {
	i, ok := Lookup(code)
	return ok && i.Remedy == RemedyRestartApp && code != ContainedECC
}

// Info is one XID of the catalogue.
type Info struct {
	// Code is the XID number.
	Code int
	// Mnemonic is NVIDIA's name for it ("ROBUST_CHANNEL_GPU_ECC_DBE").
	Mnemonic string
	// What says it in a few words, for messages ("double-bit ECC error").
	What string
	// Remedy is what it needs (NVIDIA's immediate action).
	Remedy Remedy
}

// Fault reports whether the XID is a device fault (Remedy.Fault).
func (i Info) Fault() bool { return i.Remedy.Fault() }

// "unused on Ampere and newer": the catalogue lists these codes as
// unused (CONTACT_SUPPORT); older GPUs used them for the errors named.
const unused = " (unused on Ampere and newer)"

// catalogue is the data, sorted by code. 68 and 69 are engine exceptions
// like 13: the catalogue's immediate action for both is RESTART_APP (68
// NVDEC0 exception, investigatory CONTACT_SUPPORT; 69 graphics engine
// class error, investigatory CHECK_APP/CUDA), so neither is a fault. 63,
// 92, 121 and 137 are IGNORE and 94 is RESTART_APP: the follow-up of a
// memory error (a pending row remap) is the row-remap check's to fail.
var catalogue = []Info{
	{8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", RemedyRestartApp},
	{13, "ROBUST_CHANNEL_GR_EXCEPTION", "graphics engine exception", RemedyRestartApp},
	{31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", RemedyRestartApp},
	{32, "ROBUST_CHANNEL_PBDMA_ERROR", "invalid or corrupted push buffer stream", RemedyRestartApp},
	{38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "driver firmware error", RemedyNone},
	{43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", RemedyNone},
	{45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "preemptive cleanup, due to previous errors", RemedyNone},
	{46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing (timeout)", RemedyResetGPU},
	{48, "ROBUST_CHANNEL_GPU_ECC_DBE", "double-bit ECC error", RemedyResetGPU},
	{56, "DISPLAY_CHANNEL_EXCEPTION", "display engine error" + unused, RemedyContactSupport},
	{57, "FB_LINK_TRAINING_FAILURE_ERROR", "video memory interface training failure" + unused, RemedyContactSupport},
	{58, "FB_MEMORY_ERROR", "video memory error" + unused, RemedyContactSupport},
	{59, "PMU_ERROR", "internal micro-controller error" + unused, RemedyContactSupport},
	{60, "ROBUST_CHANNEL_SEC2_ERROR", "video processor exception", RemedyRestartApp},
	{61, "PMU_BREAKPOINT", "internal micro-controller breakpoint/warning" + unused, RemedyContactSupport},
	{62, "PMU_HALT_ERROR", "internal micro-controller halt", RemedyResetGPU},
	{63, "INFOROM_DRAM_RETIREMENT_EVENT", "ECC page retirement or row remapping event", RemedyNone},
	{64, "INFOROM_DRAM_RETIREMENT_FAILURE", "ECC page retirement or row remapping failure", RemedyResetGPU},
	{65, "ROBUST_CHANNEL_NVENC1_ERROR", "video encoder error" + unused, RemedyContactSupport},
	{68, "ROBUST_CHANNEL_NVDEC0_ERROR", "video decoder exception", RemedyRestartApp},
	{69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "graphics engine class error", RemedyRestartApp},
	{73, "ROBUST_CHANNEL_NVENC2_ERROR", "video encoder error" + unused, RemedyContactSupport},
	{74, "NVLINK_ERROR", "NVLink error", RemedyCheckFabric},
	{76, "ROBUST_CHANNEL_CE7_ERROR", "copy engine error", RemedyRestartApp},
	{78, "VGPU_START_ERROR", "vGPU start error", RemedyUpdateSoftware},
	{79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", RemedyRebootNode},
	{80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "corrupted data sent to the GPU", RemedyRestartApp},
	{81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", "VGA subsystem error" + unused, RemedyContactSupport},
	{92, "EXCESSIVE_SBE_INTERRUPTS", "high single-bit ECC error rate", RemedyNone},
	{94, "ROBUST_CHANNEL_CONTAINED_ERROR", "contained ECC error", RemedyRestartApp},
	{95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "uncontained ECC error", RemedyResetGPU},
	{119, "GSP_RPC_TIMEOUT", "GSP RPC timeout", RemedyResetGPU},
	{120, "GSP_ERROR", "GSP error", RemedyResetGPU},
	{121, "C2C_ERROR", "C2C link error", RemedyNone},
	{122, "SPI_PMU_RPC_READ_FAIL", "SPI PMU RPC read failure" + unused, RemedyContactSupport},
	{123, "SPI_PMU_RPC_WRITE_FAIL", "SPI PMU RPC write failure" + unused, RemedyContactSupport},
	{136, "ALI_TRAINING_FAIL", "NVLink training failed", RemedyResetGPU},
	{137, "NVLINK_PRIV_ERR", "NVLink privilege error", RemedyNone},
	{139, "ROBUST_CHANNEL_OFA1_ERROR", "optical flow accelerator error", RemedyRestartApp},
	{140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "unrecovered ECC error", RemedyResetGPU},
	{143, "GPU_INIT_ERROR", "GPU initialization error", RemedyResetGPU},
	{144, "NVLINK_SAW_ERROR", "NVLink SAW error", RemedyCheckFabric},
	{145, "NVLINK_RLW_ERROR", "NVLink RLW error", RemedyCheckFabric},
	{146, "NVLINK_TLW_ERROR", "NVLink TLW error", RemedyCheckFabric},
	{147, "NVLINK_TREX_ERROR", "NVLink TREX error", RemedyCheckFabric},
	{148, "NVLINK_NVLPW_CTRL_ERROR", "NVLink NVLPW_CTRL error", RemedyCheckFabric},
	{149, "NVLINK_NETIR_ERROR", "NVLink NETIR error", RemedyCheckFabric},
	{150, "NVLINK_MSE_ERROR", "NVLink MSE error", RemedyCheckFabric},
	{151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "key rotation error", RemedyRebootNode},
	{154, "GPU_RECOVERY_ACTION_CHANGED", "GPU recovery action changed", RemedyAsNamed},
	{155, "NVLINK_SW_DEFINED_ERROR", "NVLink software-defined error", RemedyResetGPU},
	{156, "RESOURCE_RETIREMENT_EVENT", "resource retirement event", RemedyResetGPU},
}

var byCode = func() map[int]Info {
	m := make(map[int]Info, len(catalogue))
	for _, i := range catalogue {
		m[i.Code] = i
	}
	return m
}()

// Lookup returns the catalogue's entry for an XID, and false for one it
// does not list.
func Lookup(code int) (Info, bool) {
	i, ok := byCode[code]
	return i, ok
}

// Catalogue returns every entry, sorted by code.
func Catalogue() []Info { return slices.Clone(catalogue) }

// Faults returns the codes whose entries are faults, sorted: the xid
// check's default fault_xids.
func Faults() []int {
	var out []int
	for _, i := range catalogue {
		if i.Fault() {
			out = append(out, i.Code)
		}
	}
	return out
}

// Unhealable reports whether the remedy says the device cannot go on
// where it is: it must be reset (RESET_GPU), its node rebooted
// (RESTART_BM, RESTART_VM) or its links and fabric repaired
// (WORKFLOW_NVLINK_ERR): a device gone or needing a reset, which no job
// on it recovers from by waiting. RESTART_APP is not (the GPU goes on:
// a job that restarts its processes, or an elastic one, may go on too),
// nor are CONTACT_SUPPORT and UPDATE_SWFW, which NVIDIA gives codes that
// are unused or say nothing of the device's state now.
func (r Remedy) Unhealable() bool {
	return r == RemedyResetGPU || r == RemedyRebootNode || r == RemedyCheckFabric
}

// Unhealable reports whether the XID is one no job recovers from
// (Remedy.Unhealable); XID 154's depends on the action its line names
// (Event.Unhealable).
func (i Info) Unhealable() bool { return i.Remedy.Unhealable() }

// Unhealable reports whether the event is one no job recovers from: its
// Remedy (the catalogue's, or the action an XID 154 names; none for a
// Benign line) is Unhealable.
func (e Event) Unhealable() bool { return e.Remedy().Unhealable() }
