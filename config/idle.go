package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Idle is the [idle] section: the deep suite that runs on idle nodes in
// vigil's own validation jobs. `vigil-prolog idle-sweep` (from cron, a
// systemd timer or scrontab) submits one job per node that is due to the
// partition, QOS or reservation named here, which users' jobs preempt; the
// job runs `vigil-prolog validate` on its node, which runs the checks named
// here and drains or resumes like health mode. See docs/operations.md.
type Idle struct {
	// Partition is the partition the validation jobs go to (sbatch
	// --partition), one whose jobs users' jobs preempt
	// (PreemptType=preempt/partition_prio, a lower PriorityTier); only its
	// nodes are validated. "" submits to the default partition and
	// considers every node.
	Partition string `toml:"partition"`
	// QOS is the jobs' QOS (sbatch --qos): one that users' QOS may preempt
	// under PreemptType=preempt/qos; "" for none.
	QOS string `toml:"qos"`
	// Reservation is the reservation the jobs run in (sbatch
	// --reservation); only its nodes are validated. "" for none.
	Reservation string `toml:"reservation"`
	// Account is the jobs' account (sbatch --account); "" for the
	// submitter's default.
	Account string `toml:"account"`
	// Interval is how long a node's validation stands: a node is
	// validated again once its last validation (or submission) is this
	// old ("7d"; days, or Go durations such as "36h").
	Interval Days `toml:"interval"`
	// Checks names the deep suite; empty means every check that is on by
	// default, health facts and performance probes alike (the node's
	// vendors choose, as for the prolog). [checks.NAME] sets each one's
	// sizes and thresholds as usual.
	Checks []string `toml:"checks"`
	// Skip names checks the deep suite leaves out.
	Skip []string `toml:"skip"`
	// MaxNodesPerRun is how many validation jobs one sweep submits at
	// most: the nodes longest without a validation first.
	MaxNodesPerRun int `toml:"max_nodes_per_run"`
	// TimeLimit is each validation job's time limit (sbatch --time).
	TimeLimit time.Duration `toml:"time_limit"`
	// Budget is the validation run's deadline, like [prolog] budget; it
	// ends at least a minute before TimeLimit.
	Budget time.Duration `toml:"budget"`
	// CheckTimeout is each check's deadline in the validation run (a
	// longer [prolog.timeouts] entry for a check wins).
	CheckTimeout time.Duration `toml:"check_timeout"`
	// JobName starts the name of every validation job (JobName-NODE): the
	// sweep finds its own jobs by it and submits none for a node that has
	// one pending or running.
	JobName string `toml:"job_name"`
	// StateDir holds what the sweep knows of each node: the validation
	// runs write their outcome there (nodes/NODE.json) and the sweep its
	// submissions (sweep.json). Shared between the nodes and the host that
	// runs the sweep, a node's result counts from the moment it is
	// written; otherwise a node counts as validated when its job was
	// submitted.
	StateDir string `toml:"state_dir"`
	// Program is vigil-prolog on the nodes, as the job runs it; "" means
	// the path of the vigil-prolog that runs the sweep.
	Program string `toml:"program"`
	// Output is the jobs' output file (sbatch --output; %j is the job id,
	// %N the node).
	Output string `toml:"output"`
}

// DefaultIdle returns the shipped [idle] settings: nothing is submitted
// until partition or qos is set and the sweep runs.
func DefaultIdle() Idle {
	return Idle{
		Interval:       Days(7 * 24 * time.Hour),
		MaxNodesPerRun: 10,
		TimeLimit:      2 * time.Hour,
		Budget:         90 * time.Minute,
		CheckTimeout:   30 * time.Minute,
		JobName:        "vigil-idle",
		StateDir:       "/var/lib/vigil/idle",
		Output:         "/dev/null",
	}
}

// Configured reports whether the sweep has somewhere to submit to that
// users' jobs preempt: a partition or a QOS.
func (i Idle) Configured() bool { return i.Partition != "" || i.QOS != "" }

// Validate checks i's values, naming the key and line of each bad one in f.
func (i Idle) Validate(f *File) error {
	var errs []error
	if i.Partition != "" && !plainName(i.Partition, ",") {
		errs = append(errs, f.Errorf("idle.partition", "%q: want a partition name, or names separated by commas (letters, digits, '-', '_', '.')", i.Partition))
	}
	for _, k := range []struct{ key, v string }{{"qos", i.QOS}, {"reservation", i.Reservation}, {"account", i.Account}} {
		if k.v != "" && !plainName(k.v, "") {
			errs = append(errs, f.Errorf("idle."+k.key, "%q: want one Slurm name (letters, digits, '-', '_', '.')", k.v))
		}
	}
	if !plainName(i.JobName, "") || len(i.JobName) > 64 {
		errs = append(errs, f.Errorf("idle.job_name", "%q: want 1 to 64 letters, digits, '-', '_' or '.'", i.JobName))
	}
	if time.Duration(i.Interval) < time.Hour {
		errs = append(errs, f.Errorf("idle.interval", "%v: want at least 1h (\"7d\", \"36h\")", i.Interval))
	}
	if i.MaxNodesPerRun < 1 || i.MaxNodesPerRun > 10000 {
		errs = append(errs, f.Errorf("idle.max_nodes_per_run", "%d: want 1 to 10000", i.MaxNodesPerRun))
	}
	if i.TimeLimit < 2*time.Minute {
		errs = append(errs, f.Errorf("idle.time_limit", "%v: want at least 2m (write durations as strings: \"2h\")", i.TimeLimit))
	}
	if i.Budget < MinBudget || i.Budget > i.TimeLimit-time.Minute {
		errs = append(errs, f.Errorf("idle.budget", "%v: want at least %v and a minute less than time_limit %v, so that the run drains and records before Slurm ends the job", i.Budget, MinBudget, i.TimeLimit))
	}
	if i.CheckTimeout < MinCheckTimeout {
		errs = append(errs, f.Errorf("idle.check_timeout", "%v: want at least %v (write durations as strings: \"30m\")", i.CheckTimeout, MinCheckTimeout))
	}
	if !filepath.IsAbs(i.StateDir) {
		errs = append(errs, f.Errorf("idle.state_dir", "%q: want an absolute path", i.StateDir))
	}
	if i.Program != "" && !filepath.IsAbs(i.Program) {
		errs = append(errs, f.Errorf("idle.program", "%q: want an absolute path, or \"\" for the vigil-prolog that runs the sweep", i.Program))
	}
	if !filepath.IsAbs(i.Output) {
		errs = append(errs, f.Errorf("idle.output", "%q: want an absolute path (\"/dev/null\", \"/var/log/vigil/idle-%%N-%%j.out\")", i.Output))
	}
	return errors.Join(errs...)
}

// plainName reports whether s is a non-empty name of letters, digits,
// '-', '_', '.' and the runes of extra, not starting with '-'.
func plainName(s, extra string) bool {
	if s == "" || strings.HasPrefix(s, "-") {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '-' || r == '_' || r == '.' || strings.ContainsRune(extra, r)
		if !ok {
			return false
		}
	}
	return true
}

// Days is a duration written in days as well as Go's units: "7d", "1d12h",
// "36h", "90m". It reads and prints as such a string.
type Days time.Duration

// day is 24 hours: the unit of Days (no calendar, no DST).
const day = 24 * time.Hour

// ParseDays reads a Days string: an optional whole number of days ("7d")
// followed by an optional Go duration ("12h", "90m").
func ParseDays(s string) (Days, error) {
	rest := strings.TrimSpace(s)
	var d time.Duration
	if i := strings.IndexByte(rest, 'd'); i > 0 {
		n, err := strconv.Atoi(rest[:i])
		if err != nil || n < 0 || n > 3650 {
			return 0, fmt.Errorf("%q: want a number of days (\"7d\") and/or a duration (\"36h\")", s)
		}
		d, rest = time.Duration(n)*day, rest[i+1:]
	}
	if rest != "" {
		g, err := time.ParseDuration(rest)
		if err != nil || g < 0 {
			return 0, fmt.Errorf("%q: want a number of days (\"7d\") and/or a duration (\"36h\")", s)
		}
		d += g
	} else if d == 0 {
		return 0, fmt.Errorf("%q: want a number of days (\"7d\") and/or a duration (\"36h\")", s)
	}
	return Days(d), nil
}

// UnmarshalText reads "7d", "36h" and the like.
func (d *Days) UnmarshalText(b []byte) error {
	v, err := ParseDays(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalText writes whole days as "7d" and the rest in Go's form
// ("1d12h0m0s", "36m0s").
func (d Days) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// String is the form MarshalText writes.
func (d Days) String() string {
	v := time.Duration(d)
	days, rest := v/day, v%day
	switch {
	case days == 0:
		return rest.String()
	case rest == 0:
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%v", days, rest)
}
