package decide

// Mode is what a run is for.
type Mode string

const (
	// ModeProlog runs before a job (Slurm Prolog with PrologFlags=Alloc).
	ModeProlog Mode = "prolog"
	// ModeEpilog runs after a job: kill the job's leftovers, re-check
	// health facts.
	ModeEpilog Mode = "epilog"
	// ModeHealth runs outside jobs (Slurm HealthCheckProgram, cron, by hand).
	ModeHealth Mode = "health"
	// ModeValidate runs the deep suite of [idle] in one of vigil's idle
	// validation jobs (vigil-prolog validate) and acts like health mode.
	ModeValidate Mode = "validate"
)

// Exit codes of vigil-prolog and vigil-epilog.
const (
	// ExitOK: the node passed, or nothing may be done (unknown results, an
	// invalid config under Slurm, a held job, a skipped run, failures that
	// the guard kept from draining the node: see docs/notify.md).
	ExitOK = 0
	// ExitFail: the node is drained by vigil after this run (a check failed
	// or the budget ran out with on_budget_expiry = "fail", or an earlier
	// vigil drain stays because this run did not clear it). The prolog's
	// non-zero exit makes Slurm requeue the job; the epilog never exits
	// with it (Slurm would replace vigil's reason with "Epilog error").
	// In a dry run: the node would be drained.
	ExitFail = 1
	// ExitUsage: bad command line.
	ExitUsage = 2
	// ExitConfig: the config is invalid (only for --check-config and
	// --dry-run; under Slurm an invalid config exits ExitOK).
	ExitConfig = 3
	// ExitNotDrained: health mode found a failure but did not drain the
	// node: another party holds it (drain, down, maintenance), or scontrol
	// failed. The log says which.
	ExitNotDrained = 4
)
