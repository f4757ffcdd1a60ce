package decide

import (
	"slices"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// What the decision words for others: the job's comment names the node's
// failure, the admins hear of the checks vigil's reason did not name
// before, and the messages name the run.

// NodeFailure is one node's failure as the comment shows it:
// "n3 failed gemm (GEMMBelowThreshold gpu5)".
func NodeFailure(node string, results []benchmarks.Result) string {
	var parts []string
	for _, res := range results {
		if res.Status != benchmarks.StatusFail {
			continue
		}
		why := strings.TrimSpace(res.Reason + " " + res.Device)
		if why == "" {
			parts = append(parts, res.Check)
		} else {
			parts = append(parts, res.Check+" ("+why+")")
		}
	}
	if len(parts) == 0 {
		return node + " failed"
	}
	return node + " failed " + strings.Join(parts, ", ")
}

// newlyDrained lists the checks that failed (and were not guarded) in
// results and that vigil's earlier reason old did not name; the budget
// when none did and it ran out.
func newlyDrained(old string, guarded []GuardedCheck, results []benchmarks.Result, budgetExpired bool) []string {
	entries, _ := benchmarks.ParseDrain(old)
	var out []string
	for _, c := range FailedChecks(results) {
		if slices.ContainsFunc(guarded, func(g GuardedCheck) bool { return g.Check == c }) ||
			slices.ContainsFunc(entries, func(e benchmarks.DrainEntry) bool { return e.Check == c }) {
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 && budgetExpired && !strings.Contains(old, benchmarks.BudgetCheck) {
		out = append(out, benchmarks.BudgetCheck)
	}
	return out
}

// validateWho names the validate mode in messages.
const validateWho = "this idle validation"
