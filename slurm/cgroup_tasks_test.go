package slurm

// What the tests read of a job's cgroup tree beyond what vigil itself
// reads: one controller's directory and the task directories, as measured
// on real clusters (docs/testing.md). Package slurm_test's end-to-end tests
// use them too.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Controller returns the v1 job directory of controller (e.g. "cpuacct",
// "memory"), or the v2 job directory when the controller is enabled there,
// and whether there is one. Under v2 that is when the job directory's
// cgroup.controllers lists name (a tree without that file, as some
// fixtures, counts as having them all): Slurm up to 24.11 enables only
// cpuset, memory and cpu below its scope, so real v2 job cgroups have no io
// controller (no io.stat), and on a machine whose cgroup2 mount lacks a
// controller none at all. cpu.stat's usage_usec is a core file, there
// without the cpu controller.
func (j JobCgroup) Controller(name string) (string, bool) {
	if j.Version == 2 {
		if j.Dir == "" {
			return "", false
		}
		b, err := os.ReadFile(filepath.Join(j.Dir, "cgroup.controllers"))
		if err != nil {
			return j.Dir, errors.Is(err, fs.ErrNotExist)
		}
		return j.Dir, slices.Contains(strings.Fields(string(b)), name)
	}
	d, ok := j.Controllers[name]
	return d, ok
}

// TaskCgroup is one task directory of a job step.
type TaskCgroup struct {
	// Step is the step's name without "step_": "0", "batch", "extern", ...
	Step string
	// Dir is the task's directory: v2 <job>/step_<s>/user/task_<t>, v1
	// <job>/step_<s>/task_<t> in the first controller (in Dirs' order)
	// that has it.
	Dir string
	// ID is the number in the directory's name, -1 for task_special. Which
	// number it is depends on the Slurm version: measured on real clusters,
	// 22.05's cgroup/v2 names a task by its node-local id (every node's
	// first task is task_0), 24.11 (v1 and v2) by its global id (the rank,
	// SLURM_PROCID: the second node's one task is task_1); 22.05's v1
	// differs per controller (see Tasks). Never read a rank from it without
	// knowing the version and plugin.
	ID int
	// Special marks v2's user/task_special: the step's processes that are
	// in no task (the extern step's adopted processes, and every task's
	// when task/cgroup confines nothing).
	Special bool
}

// Tasks lists the task directories of every step of the job, sorted by
// step and ID (task_special last). They hold the job's own processes only:
// under v2 each step's slurmstepd sits beside them in step_<s>/slurm (so
// CgroupPIDs of a v2 job or step directory includes slurmstepd). Under v1 a
// step's tasks come from the first controller in Dirs' order that has task
// directories for it: Slurm 22.05 numbers them differently per controller
// (cpuacct and memory, made by jobacct_gather/cgroup, by global id; devices,
// made by task/cgroup, by local id). A step or task that vanishes meanwhile
// is skipped; a missing job directory is an error wrapping fs.ErrNotExist.
func (j JobCgroup) Tasks() ([]TaskCgroup, error) {
	var out []TaskCgroup
	seen := map[string]bool{} // steps listed from an earlier v1 controller
	for _, jd := range j.Dirs() {
		steps, err := os.ReadDir(jd)
		if err != nil {
			return nil, fmt.Errorf("slurm: job tasks: %w", err)
		}
		for _, st := range steps {
			step, ok := strings.CutPrefix(st.Name(), "step_")
			if !st.IsDir() || !ok {
				continue
			}
			dir := filepath.Join(jd, st.Name())
			if j.Version == 2 {
				dir = filepath.Join(dir, "user")
			}
			if seen[step] {
				continue
			}
			ents, _ := os.ReadDir(dir) // gone, or no tasks in this controller
			for _, e := range ents {
				if id, special, ok := parseTaskDir(e.Name()); ok && e.IsDir() {
					seen[step] = true
					out = append(out, TaskCgroup{Step: step, Dir: filepath.Join(dir, e.Name()), ID: id, Special: special})
				}
			}
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Step != out[b].Step {
			return out[a].Step < out[b].Step
		}
		return uint(out[a].ID) < uint(out[b].ID) // -1 (special) last
	})
	return out, nil
}

// parseTaskDir reads a task directory's name: task_<n> or task_special.
func parseTaskDir(name string) (id int, special, ok bool) {
	rest, ok := strings.CutPrefix(name, "task_")
	if !ok {
		return 0, false, false
	}
	if rest == "special" {
		return -1, true, true
	}
	id, err := strconv.Atoi(rest)
	if err != nil || id < 0 || strconv.Itoa(id) != rest {
		return 0, false, false
	}
	return id, false, true
}
