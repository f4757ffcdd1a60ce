// Package slurm is vigil's seam to Slurm: the job environment,
// scontrol, drain ownership and job cgroups.
package slurm

import (
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/slurm/hostlist"
	"os"
	"strconv"
	"strings"
)

// Job is the job as the prolog, epilog and a job step see it.
type Job struct {
	ID           string            // SLURM_JOB_ID (or SLURM_JOBID)
	User         string            // SLURM_JOB_USER
	UID          int               // SLURM_JOB_UID
	GID          int               // SLURM_JOB_GID
	NodeList     string            // SLURM_JOB_NODELIST or SLURM_NODELIST, compressed
	Nodes        []string          // NodeList expanded
	NodeName     string            // SLURMD_NODENAME (or the step's node)
	Partition    string            // SLURM_JOB_PARTITION
	GPUs         []int             // SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES when numeric
	RestartCount int               // SLURM_RESTART_COUNT / SLURM_JOB_RESTART_COUNT
	StepID       string            // SLURM_STEP_ID, empty outside a step
	Context      string            // SLURM_SCRIPT_CONTEXT (prolog_slurmd, epilog_slurmd)
	Spank        map[string]string // SPANK_* variables, keyed without the prefix

	// ExitKnown is true when the environment carries the job's exit
	// (the epilog: SLURM_JOB_EXIT_CODE2 or SLURM_JOB_EXIT_CODE).
	ExitKnown bool
	// ExitCode is the job's exit status: the number before ':' in
	// SLURM_JOB_EXIT_CODE2 ("7:0"), else from the wait status in
	// SLURM_JOB_EXIT_CODE (1792 → 7).
	ExitCode int
	// ExitSignal is the signal that ended the job, 0 when none: the number
	// after ':' in SLURM_JOB_EXIT_CODE2, else from SLURM_JOB_EXIT_CODE.
	ExitSignal int
	// Comment is the job's comment as the prolog and epilog see it
	// (SLURM_JOB_COMMENT; a later `scontrol update Comment=` is not
	// reflected).
	Comment string
	// NodeNameSource names the variable NodeName came from (SLURMD_NODENAME,
	// SLURM_TOPOLOGY_ADDR, or "hostname").
	NodeNameSource string
}

// ErrNotInJob is returned by JobFromEnv when SLURM_JOB_ID (and SLURM_JOBID)
// is not set: the program does not run in a Slurm job context.
var ErrNotInJob = errors.New("slurm: not in a Slurm job (SLURM_JOB_ID not set)")

// Context values of SLURM_SCRIPT_CONTEXT.
const (
	ContextProlog = "prolog_slurmd"
	ContextEpilog = "epilog_slurmd"
)

// hostname is os.Hostname, replaceable in tests.
var hostname = os.Hostname

// JobFromEnv reads the job from environment lookups (os.LookupEnv in mains).
//
// SLURM_JOB_ID (or SLURM_JOBID) is required; without it the error is
// ErrNotInJob. Every other variable is optional, but one that is set and
// malformed (a non-numeric UID, a bad hostlist, a GPU index that is not a
// number) is an error naming it. The node name is SLURMD_NODENAME (set in
// the prolog, epilog and steps), else SLURM_TOPOLOGY_ADDR when it holds no
// '.' (a step's own node under the default topology), else the host's short
// name. GPUs come from SLURM_JOB_GPUS, else from CUDA_VISIBLE_DEVICES when it
// is a list of numbers (UUIDs and MIG names are ignored). Empty variables
// count as unset. A lookup function cannot list its names, so the SPANK_*
// variables are those whose names appear in the process environment
// (os.Environ), with values from lookup. UID and GID are -1 when not set.
func JobFromEnv(lookup func(string) (string, bool)) (*Job, error) {
	return jobFromEnv(lookup, envNames(os.Environ()))
}

func jobFromEnv(lookup func(string) (string, bool), names []string) (*Job, error) {
	get := envGetter(lookup)
	j := &Job{}
	var ok bool
	if j.ID, ok = get("SLURM_JOB_ID"); !ok {
		if j.ID, ok = get("SLURM_JOBID"); !ok {
			return nil, ErrNotInJob
		}
	}
	if err := checkJobID(j.ID); err != nil {
		return nil, fmt.Errorf("slurm: SLURM_JOB_ID=%q is not a job id", j.ID)
	}
	j.User, _ = get("SLURM_JOB_USER")
	j.UID, j.GID = -1, -1
	if err := get.int(&j.UID, "SLURM_JOB_UID"); err != nil {
		return nil, err
	}
	if err := get.int(&j.GID, "SLURM_JOB_GID"); err != nil {
		return nil, err
	}
	if err := get.int(&j.RestartCount, "SLURM_RESTART_COUNT", "SLURM_JOB_RESTART_COUNT"); err != nil {
		return nil, err
	}
	if err := j.nodesFromEnv(get); err != nil {
		return nil, err
	}
	j.Partition, _ = get("SLURM_JOB_PARTITION")
	j.StepID, _ = get("SLURM_STEP_ID")
	if j.StepID == "" {
		j.StepID, _ = get("SLURM_STEPID")
	}
	j.Context, _ = get("SLURM_SCRIPT_CONTEXT")
	j.Comment, _ = get("SLURM_JOB_COMMENT")
	if err := j.gpusFromEnv(get); err != nil {
		return nil, err
	}
	if err := j.exitFromEnv(get); err != nil {
		return nil, err
	}
	j.Spank = spankVars(lookup, names)
	return j, nil
}

// envGet looks up a variable of the job's environment, trimmed; ok is
// false when it is unset or blank.
type envGet func(name string) (v string, ok bool)

// envGetter is the envGet over lookup.
func envGetter(lookup func(string) (string, bool)) envGet {
	return func(name string) (string, bool) {
		v, ok := lookup(name)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
}

// int sets *dst from the first of names that is set, which must be a
// non-negative integer; with none set *dst is left alone.
func (get envGet) int(dst *int, names ...string) error {
	for _, name := range names {
		v, ok := get(name)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("slurm: %s=%q is not a non-negative integer", name, v)
		}
		*dst = n
		return nil
	}
	return nil
}

// nodesFromEnv sets the job's node list and this node's name: the name
// from SLURMD_NODENAME, else a SLURM_TOPOLOGY_ADDR without dots, else the
// short host name.
func (j *Job) nodesFromEnv(get envGet) error {
	for _, name := range []string{"SLURM_JOB_NODELIST", "SLURM_NODELIST"} {
		v, ok := get(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		nodes, err := hostlist.Expand(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		j.NodeList, j.Nodes = v, nodes
		break
	}
	if v, ok := get("SLURMD_NODENAME"); ok {
		j.NodeName, j.NodeNameSource = v, "SLURMD_NODENAME"
	} else if v, ok := get("SLURM_TOPOLOGY_ADDR"); ok && !strings.Contains(v, ".") {
		j.NodeName, j.NodeNameSource = v, "SLURM_TOPOLOGY_ADDR"
	} else {
		h, err := hostname()
		if err != nil {
			return fmt.Errorf("slurm: SLURMD_NODENAME not set and no hostname: %w", err)
		}
		j.NodeName, _, _ = strings.Cut(h, ".")
		j.NodeNameSource = "hostname"
	}
	return nil
}

// gpusFromEnv sets the job's GPUs from SLURM_JOB_GPUS (an error when
// malformed), else from CUDA_VISIBLE_DEVICES when it holds indices.
func (j *Job) gpusFromEnv(get envGet) error {
	if v, ok := get("SLURM_JOB_GPUS"); ok {
		gpus, err := parseIndexList(v)
		if err != nil {
			return fmt.Errorf("slurm: SLURM_JOB_GPUS=%q: %w", v, err)
		}
		j.GPUs = gpus
	} else if v, ok := get("CUDA_VISIBLE_DEVICES"); ok {
		if gpus, err := parseIndexList(v); err == nil {
			j.GPUs = gpus
		}
	}
	return nil
}

// exitFromEnv sets the job's exit from SLURM_JOB_EXIT_CODE2
// ("STATUS:SIGNAL"), else from SLURM_JOB_EXIT_CODE (a wait status).
func (j *Job) exitFromEnv(get envGet) error {
	if v, ok := get("SLURM_JOB_EXIT_CODE2"); ok {
		ec, sig, found := strings.Cut(v, ":")
		a, err1 := strconv.Atoi(ec)
		b, err2 := strconv.Atoi(sig)
		if !found || err1 != nil || err2 != nil || a < 0 || b < 0 {
			return fmt.Errorf("slurm: SLURM_JOB_EXIT_CODE2=%q is not STATUS:SIGNAL", v)
		}
		j.ExitCode, j.ExitSignal, j.ExitKnown = a, b, true
	} else if v, ok := get("SLURM_JOB_EXIT_CODE"); ok {
		st, err := strconv.Atoi(v)
		if err != nil || st < 0 {
			return fmt.Errorf("slurm: SLURM_JOB_EXIT_CODE=%q is not a wait status", v)
		}
		// A wait(2) status: signal in the low 7 bits, exit status above.
		j.ExitCode, j.ExitSignal, j.ExitKnown = (st>>8)&0xff, st&0x7f, true
	}
	return nil
}

// parseIndexList parses "0,1,3" (ranges "0-3" are accepted too).
func parseIndexList(s string) ([]int, error) {
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q is not a device index", item)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 4096 {
				return nil, fmt.Errorf("%q is not a device index range", item)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// spankVars returns the SPANK_* variables among names that lookup knows,
// keyed without the prefix.
func spankVars(lookup func(string) (string, bool), names []string) map[string]string {
	m := make(map[string]string)
	for _, k := range names {
		if !strings.HasPrefix(k, "SPANK_") || k == "SPANK_" {
			continue
		}
		if v, ok := lookup(k); ok {
			m[strings.TrimPrefix(k, "SPANK_")] = v
		}
	}
	return m
}

// envNames returns the names in a list of NAME=value entries.
func envNames(environ []string) []string {
	names := make([]string, 0, len(environ))
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok {
			names = append(names, k)
		}
	}
	return names
}
