package benchmarks

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

// Default limits of a run.
const (
	// DefaultCheckTimeout is each check's deadline unless configured.
	DefaultCheckTimeout = 6 * time.Minute
	// DefaultBudget is the whole run's deadline unless configured.
	DefaultBudget = 30 * time.Minute
	// DefaultRetries is how many more times a failed performance probe runs.
	DefaultRetries = 2
)

// CheckRunner runs a list of checks one after the other, each with its own
// deadline, inside a total budget. Isolated checks run in a child process
// (a re-exec of Exe with ChildArg) in their own process group, killed with
// everything they started at the deadline.
type CheckRunner struct {
	// Exe is the program re-executed for isolated checks; "" means
	// os.Executable(). It must dispatch ChildArg to ChildMain.
	Exe string
	// ConfigPath is the config file to load when Config is nil; "" means
	// defaults. It is read once, by the runner: in-process checks and
	// checker children decode their settings from that one parse.
	ConfigPath string
	// ChildEnv is extra environment (KEY=VALUE) for child processes.
	ChildEnv []string
	// Env is what checks get; its Settings is replaced per check by one
	// over Config when Config is set.
	Env *Env
	// Config is the parsed config file checks decode their [checks.NAME]
	// settings from; nil means ConfigPath, or defaults. Checker children
	// get its document on stdin and never read a file of their own.
	Config *config.File
	// Timeout returns a check's deadline; nil means DefaultCheckTimeout.
	Timeout func(name string) time.Duration
	// Budget is the deadline of the whole run; 0 means DefaultBudget.
	Budget time.Duration
	// Retries is how many more times a failed KindPerf check runs before
	// its failure counts. Health facts are never retried.
	Retries int
	// InProcess runs isolated checks in this process too (tests, and
	// programs that cannot re-exec themselves). Hangs are still bounded,
	// crashes are not.
	InProcess bool
	// Now is the clock used for durations; nil means time.Now.
	Now func() time.Time
	// OnStart is called before each check runs (progress display); may be nil.
	OnStart func(name string, attempt int)
	// OnDone is called with each check's final result; may be nil.
	OnDone func(Result)

	maxRSS  int64
	loaded  *config.File // ConfigPath, once loaded
	loadErr error        // why ConfigPath did not load
}

// Outcome is what a run found.
type Outcome struct {
	// Results has one entry per check, in run order.
	Results []Result
	// BudgetExpired is set when the budget ran out before every check finished.
	BudgetExpired bool
	// Elapsed is the wall time of the whole run.
	Elapsed time.Duration
	// ChildMaxRSSKiB is the largest peak resident set of the checker
	// children, in KiB (0 when none ran).
	ChildMaxRSSKiB int64
}

func (r *CheckRunner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Run runs checks in order and always returns by the budget (plus the
// moment it takes to kill a child). It never panics on a check's behalf.
func (r *CheckRunner) Run(ctx context.Context, checks []Check) Outcome {
	start := time.Now()
	budget := r.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	r.loadConfig()
	var out Outcome
	for i := 0; i < len(checks); {
		c := checks[i]
		if bctx.Err() != nil {
			res := notRun(ctx, c.Spec().Name)
			out.BudgetExpired = out.BudgetExpired || ctx.Err() == nil
			out.Results = append(out.Results, res)
			r.done(res)
			i++
			continue
		}
		if !c.Spec().Isolated || r.InProcess {
			res := r.runWithRetries(ctx, bctx, c, nil)
			out.BudgetExpired = out.BudgetExpired || res.Reason == ReasonBudgetExpired
			out.Results = append(out.Results, res)
			r.done(res)
			i++
			continue
		}
		// Consecutive isolated checks share one child process.
		j := i
		for j < len(checks) && checks[j].Spec().Isolated {
			j++
		}
		batch := checks[i:j]
		for k, res := range r.runBatch(ctx, bctx, batch) {
			res.Attempts = 1
			if retryable(batch[k], res) && r.Retries > 0 {
				first := res
				res = r.runWithRetries(ctx, bctx, batch[k], &first)
			}
			out.BudgetExpired = out.BudgetExpired || res.Reason == ReasonBudgetExpired
			out.Results = append(out.Results, res)
			r.done(res)
		}
		i = j
	}
	out.Elapsed = time.Since(start)
	out.ChildMaxRSSKiB = r.maxRSS
	return out
}

// retryable reports whether a result of c is worth another try: a failed
// performance probe that did not hang.
func retryable(c Check, res Result) bool {
	return c.Spec().Kind == KindPerf && res.Status == StatusFail && res.Reason != ReasonTimedOut && res.Reason != ReasonBudgetExpired
}

func (r *CheckRunner) done(res Result) {
	if r.OnDone != nil {
		r.OnDone(res)
	}
}

func (r *CheckRunner) timeout(name string) time.Duration {
	if r.Timeout != nil {
		if d := r.Timeout(name); d > 0 {
			return d
		}
	}
	return DefaultCheckTimeout
}

// runWithRetries runs c until it passes or its tries are spent; first is
// the result of a first attempt made elsewhere (nil when none).
func (r *CheckRunner) runWithRetries(parent, bctx context.Context, c Check, first *Result) Result {
	tries := 1
	if c.Spec().Kind == KindPerf {
		tries += r.Retries
	}
	var res Result
	attempt := 1
	if first != nil {
		res = *first
		attempt = 2
	}
	for ; attempt <= tries; attempt++ {
		if attempt > 1 && bctx.Err() != nil {
			break // keep the last real failure
		}
		res = r.runOnce(parent, bctx, c, attempt)
		res.Attempts = attempt
		if !retryable(c, res) {
			break
		}
	}
	return res
}

// runOnce runs one attempt under the check's deadline, capped by the budget.
func (r *CheckRunner) runOnce(parent, bctx context.Context, c Check, attempt int) Result {
	if c.Spec().Isolated && !r.InProcess {
		if attempt > 1 && r.OnStart != nil {
			// The child reports attempt 1 for every start; say it is a retry.
			start := r.OnStart
			r.OnStart = func(n string, _ int) { start(n, attempt) }
			defer func() { r.OnStart = start }()
		}
		return r.runBatch(parent, bctx, []Check{c})[0]
	}
	if r.OnStart != nil {
		r.OnStart(c.Spec().Name, attempt)
	}
	timeout := r.timeout(c.Spec().Name)
	cctx, cancel := context.WithTimeout(bctx, timeout)
	defer cancel()
	t0 := r.now()
	res := r.runInProcess(cctx, c)
	res.Duration = r.now().Sub(t0)
	if res.Status == StatusFail && res.Reason == ReasonTimedOut {
		// Tell a check's own deadline from the budget's and from a cancel.
		switch {
		case parent.Err() != nil:
			res.Status, res.Reason, res.Message = StatusUnknown, ReasonCanceled, "canceled while running"
		case bctx.Err() != nil && budgetFirst(bctx, timeout, t0):
			res.Status, res.Reason = StatusUnknown, ReasonBudgetExpired
			res.Message = fmt.Sprintf("killed when the run's budget ran out after %v", res.Duration.Round(time.Millisecond))
		}
	}
	return res
}

// budgetFirst reports whether the budget's deadline came before the
// check's own one.
func budgetFirst(bctx context.Context, timeout time.Duration, t0 time.Time) bool {
	d, ok := bctx.Deadline()
	return ok && d.Before(t0.Add(timeout))
}

func timedOut(name string, d time.Duration) Result {
	return Result{Check: name, Status: StatusFail, Reason: ReasonTimedOut, Duration: d,
		Message: fmt.Sprintf("no result after %v: killed", d.Round(time.Millisecond))}
}

// runInProcess runs c in a goroutine; a check that ignores its context is
// abandoned at the deadline (its goroutine leaks until it returns).
func (r *CheckRunner) runInProcess(ctx context.Context, c Check) Result {
	ch := make(chan Result, 1)
	t0 := time.Now()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- Result{Check: c.Spec().Name, Status: StatusUnknown, Reason: ReasonPanicked, Message: fmt.Sprint("check panicked: ", p)}
			}
		}()
		ch <- c.Run(ctx, r.checkEnv(c.Spec().Name))
	}()
	select {
	case res := <-ch:
		return normalize(c.Spec().Name, res)
	case <-ctx.Done():
		return timedOut(c.Spec().Name, time.Since(t0))
	}
}

func (r *CheckRunner) env() *Env {
	if r.Env != nil {
		return r.Env
	}
	return &Env{}
}

// loadConfig loads ConfigPath once when there is no Config.
func (r *CheckRunner) loadConfig() {
	if r.Config != nil || r.ConfigPath == "" || r.loaded != nil || r.loadErr != nil {
		return
	}
	r.loaded, r.loadErr = config.Load(r.ConfigPath)
}

// config is the config file checks decode their settings from: Config, or
// ConfigPath as loaded, or nil (defaults). The error is ConfigPath's.
func (r *CheckRunner) config() (*config.File, error) {
	if r.Config != nil {
		return r.Config, nil
	}
	return r.loaded, r.loadErr
}

// checkEnv is the Env of one check: Settings decodes [checks.NAME],
// Libraries its vendor's [vendor.NAME].
func (r *CheckRunner) checkEnv(name string) *Env {
	e := *r.env()
	f, err := r.config()
	if err != nil {
		e.Settings = func(any) error { return err }
		e.Libraries = e.Settings
		return &e
	}
	if f != nil || e.Settings == nil {
		if f == nil {
			f = config.Empty("defaults")
		}
		e.Settings = SettingsFrom(f, name)
		e.Libraries = LibrariesFrom(f, name)
	}
	return &e
}

// normalize makes a check's own result well-formed.
func normalize(name string, res Result) Result {
	res.Check = name
	switch res.Status {
	case StatusPass, StatusFail, StatusUnknown:
	default:
		return Result{Check: name, Status: StatusUnknown, Reason: ReasonBadResult,
			Message: fmt.Sprintf("check returned status %q", res.Status), Values: res.Values}
	}
	if res.Status == StatusFail && res.Reason == "" {
		res.Reason = ReasonFailed
	}
	return res
}

func (r *CheckRunner) exe() (string, error) {
	if r.Exe != "" {
		return r.Exe, nil
	}
	return os.Executable()
}
