package baseline

import (
	"fmt"
	"regexp"
	"slices"
)

// The config keys vigil-baseline proposes. Each is a key the check reads
// and compares a device's value with, so that everything vigil-baseline
// prints loads in vigil-prolog --check-config (an invalid config turns the
// prolog's checks off). Values without an entry here get statistics only.
// propose_checkconfig_test.go feeds the whole proposal back through
// --check-config and holds each per-model key against the check's shipped
// thresholds.

// Check families that share their threshold keys, by check name.
var (
	gemmChecks       = []string{"gemm", "npu-gemm"}
	launchChecks     = []string{"kernel-launch", "npu-kernel-launch"}
	copyChecks       = []string{"copy", "npu-copy"}
	collectiveChecks = []string{"allreduce", "allgather", "alltoall", "multi-allreduce", "nccl-allreduce-multinode",
		"npu-allreduce", "npu-allgather", "npu-alltoall", "hccl-allreduce-multinode"}
	modelChecks = []string{"model-gpt", "model-resnet", "model-gpt-multinode"}
)

// perModelKeys are the value names whose limit is the key of the same
// name in [checks.NAME.thresholds."MODEL"], per check family (GEMM, whose
// value names carry the size, is handled by gemmSized).
var perModelKeys = []struct {
	checks []string
	names  []string
}{
	{launchChecks, []string{"event_us", "wall_us"}},
	{copyChecks, []string{"h2d_gbps", "d2h_gbps", "d2d_gbps"}},
	{collectiveChecks, []string{"busbw_gbps"}},
	{modelChecks, []string{"step_ms"}},
}

// diskKeys maps the disk check's value names to its config keys, which
// hold for every node rather than per device model ([checks.disk]).
var diskKeys = map[string]string{
	"write_mib_s":     "min_write_mib_s",
	"read_mib_s":      "min_read_mib_s",
	"read_latency_ms": "max_latency_ms",
}

// PerLinkChecks are the checks whose values are per link (a node to one
// of its peers), not per device: their limits are relative to the job's
// own links, so the fleet's values are neither grouped by device model nor
// given a proposal.
var PerLinkChecks = []string{"net-connect", "net-bandwidth"}

// gemmSized is a GEMM value name with its size ("tflops_bf16_8192").
var gemmSized = regexp.MustCompile(`^(tflops_[a-z0-9]+)_([0-9]+)$`)

// configKey returns the config key of a check's value name ("" when the
// check has no limit for it), whether the limit is per model (false: one
// limit for every node, directly under [checks.NAME]), and the GEMM size
// the name carries (0 when none).
func configKey(check, name string) (key string, perModel bool, size int) {
	if check == "disk" {
		return diskKeys[name], false, 0
	}
	if slices.Contains(gemmChecks, check) {
		if m := gemmSized.FindStringSubmatch(name); m != nil {
			fmt.Sscan(m[2], &size)
			return m[1], true, size
		}
		return "", true, 0
	}
	for _, f := range perModelKeys {
		if slices.Contains(f.checks, check) && slices.Contains(f.names, name) {
			return name, true, 0
		}
	}
	return "", true, 0
}

// isPerLink reports whether check's values are per link.
func isPerLink(check string) bool { return slices.Contains(PerLinkChecks, check) }
