// Package node holds vigil's vendor-neutral checks of the node itself:
// the scratch disk (disk), the RDMA ports and GPUDirect RDMA (rdma, and
// rdma-peers across the job's nodes) and an admin-configured command whose
// JSON output becomes values and thresholds (command). Each check lives in
// its own file and registers itself with benchmarks.Register from init().
package node

import (
	"fmt"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// newTally returns the tally of a check: what it found, turned into a Result.
func newTally(check string) *devcheck.Tally { return &devcheck.Tally{Check: check} }

// loadSettings decodes the check's config table over s, which holds the
// defaults, and validates the result.
func loadSettings(env *benchmarks.Env, s benchmarks.Validator) error {
	if err := devcheck.Decode(env, s); err != nil {
		return err
	}
	return s.Validate()
}

func unknown(check, reason, format string, args ...any) benchmarks.Result {
	return benchmarks.Result{Check: check, Status: benchmarks.StatusUnknown, Reason: reason, Message: fmt.Sprintf(format, args...)}
}
