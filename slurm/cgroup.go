package slurm

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// ErrNoJobCgroup is returned when no cgroup of the job exists under the root.
var ErrNoJobCgroup = errors.New("slurm: no cgroup for the job")

// JobCgroup is where a job's cgroups live. Slurm's cgroup/v1 plugin makes one
// job directory per controller:
//
//	<root>/<controller>/slurm[_<node>]/uid_<uid>/job_<id>
//
// (the _<node> suffix when slurmd was built for several slurmd per host), and
// the cgroup/v2 plugin one directory in the unified hierarchy:
//
//	<root>/system.slice/[<node>_]slurmstepd.scope/job_<id>
//
// Steps (step_<n>, step_batch, step_extern, step_interactive) are
// directories below the job directory, and tasks below those (see Tasks):
// v1 step_<s>/task_<t> in some controllers (memory, cpuset, devices; not
// freezer), v2 step_<s>/user/task_<t> or step_<s>/user/task_special, with
// the step's slurmstepd in step_<s>/slurm.
type JobCgroup struct {
	// Version is 1 or 2.
	Version int
	// Dir is the v2 job directory; "" for v1.
	Dir string
	// Controllers maps each v1 controller (freezer, cpuacct, memory, cpuset,
	// devices, pids, ... split when comounted as "cpu,cpuacct") to the job
	// directory in its hierarchy; nil for v2.
	Controllers map[string]string
}

// controllerOrder ranks v1 controllers for Dirs: the ones that hold every
// process of the job first (proctrack/cgroup puts all of them in freezer).
var controllerOrder = []string{"freezer", "cpuacct", "memory", "pids", "cpuset", "devices", "cpu"}

// Dirs lists the job's cgroup directories, each once: for v2 the job
// directory; for v1 the job directory of each controller, freezer first
// (proctrack/cgroup tracks every process of the job there), then cpuacct,
// memory, pids, cpuset, devices, cpu, then the rest by name.
func (j JobCgroup) Dirs() []string {
	if j.Version == 2 {
		if j.Dir == "" {
			return nil
		}
		return []string{j.Dir}
	}
	names := make([]string, 0, len(j.Controllers))
	for n := range j.Controllers {
		names = append(names, n)
	}
	rank := func(n string) int {
		if i := slices.Index(controllerOrder, n); i >= 0 {
			return i
		}
		return len(controllerOrder)
	}
	sort.Slice(names, func(a, b int) bool {
		ra, rb := rank(names[a]), rank(names[b])
		if ra != rb {
			return ra < rb
		}
		return names[a] < names[b]
	})
	var dirs []string
	seen := map[string]bool{}
	for _, n := range names {
		d := j.Controllers[n]
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// ProcsDir is the directory whose subtree holds every process of the job:
// the v2 job directory, or for v1 the freezer job directory (else the first
// of Dirs).
func (j JobCgroup) ProcsDir() string {
	if d := j.Dirs(); len(d) > 0 {
		return d[0]
	}
	return ""
}

// FindJobCgroup finds the job's cgroups under root (normally /sys/fs/cgroup;
// tests pass a fixture tree). node is the slurmd's NodeName: directories
// with the node suffix (slurm_<node>, <node>_slurmstepd.scope) are preferred,
// those without it are used otherwise; "" looks only for the latter. A
// negative uid matches any uid_* directory (v1). The v2 hierarchy is looked
// for at root and at root/unified (hybrid mounts). It returns an error
// wrapping ErrNoJobCgroup when the job has no cgroup.
func FindJobCgroup(root, jobID string, uid int, node string) (JobCgroup, error) {
	if jobID == "" || strings.ContainsAny(jobID, "/*?[") {
		return JobCgroup{}, fmt.Errorf("slurm: job cgroup: bad job id %q", jobID)
	}
	if strings.ContainsAny(node, "/*?[") {
		return JobCgroup{}, fmt.Errorf("slurm: job cgroup: bad node name %q", node)
	}
	job := "job_" + jobID
	var slurmDirs []string // v1 per-controller parents, in preference order
	if node != "" {
		slurmDirs = append(slurmDirs, "slurm_"+node)
	}
	slurmDirs = append(slurmDirs, "slurm")
	uidDir := "uid_" + strconv.Itoa(uid)

	// cgroup v1: one hierarchy per directory under root.
	entries, err := os.ReadDir(root)
	if err != nil {
		return JobCgroup{}, fmt.Errorf("slurm: job cgroup: %w", err)
	}
	v1 := map[string]string{}
	for _, sd := range slurmDirs {
		for _, e := range entries {
			// Symlinks (cpu -> cpu,cpuacct) repeat a real hierarchy.
			if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 || e.Name() == "unified" || e.Name() == "system.slice" {
				continue
			}
			base := filepath.Join(root, e.Name(), sd)
			var dir string
			if uid < 0 {
				m, _ := filepath.Glob(filepath.Join(base, "uid_*", job))
				if len(m) > 0 {
					dir = m[0]
				}
			} else if isDir(filepath.Join(base, uidDir, job)) {
				dir = filepath.Join(base, uidDir, job)
			}
			if dir == "" {
				continue
			}
			for _, ctl := range strings.Split(e.Name(), ",") {
				if _, dup := v1[ctl]; !dup {
					v1[ctl] = dir
				}
			}
		}
		if len(v1) > 0 {
			return JobCgroup{Version: 1, Controllers: v1}, nil
		}
	}

	// cgroup v2.
	var scopes []string
	if node != "" {
		scopes = append(scopes, node+"_slurmstepd.scope")
	}
	scopes = append(scopes, "slurmstepd.scope")
	for _, scope := range scopes {
		for _, r := range []string{root, filepath.Join(root, "unified")} {
			d := filepath.Join(r, "system.slice", scope, job)
			if isDir(d) {
				return JobCgroup{Version: 2, Dir: d}, nil
			}
		}
	}
	return JobCgroup{}, fmt.Errorf("%w: job %s uid %d node %q under %s", ErrNoJobCgroup, jobID, uid, node, root)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// JobCgroups finds the job's cgroup directories under root (normally
// /sys/fs/cgroup) for cgroup v1 and v2 layouts; node is the slurmd name for
// hosts that run several slurmd. It returns FindJobCgroup(...).Dirs(): for
// v2 the one job directory, for v1 the job directory of each controller with
// freezer first. The error wraps ErrNoJobCgroup when there is none.
func JobCgroups(root, jobID string, uid int, node string) ([]string, error) {
	j, err := FindJobCgroup(root, jobID, uid, node)
	if err != nil {
		return nil, err
	}
	return j.Dirs(), nil
}

// CgroupPIDs lists every PID in the cgroup subtrees of dirs, deduplicated and
// sorted. cgroup.procs lists only a directory's own processes, so every
// directory below each of dirs is read. Directories and files that vanish
// during the walk (a step or the job ending) are skipped; a dir of dirs that
// does not exist at all is an error wrapping fs.ErrNotExist.
func CgroupPIDs(dirs []string) ([]int, error) {
	seen := map[int]struct{}{}
	var buf []byte
	for _, top := range dirs {
		fi, err := os.Stat(top)
		if err != nil {
			return nil, fmt.Errorf("slurm: cgroup pids: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("slurm: cgroup pids: %s is not a directory", top)
		}
		if buf, err = walkPIDs(top, buf, seen); err != nil {
			return nil, fmt.Errorf("slurm: cgroup pids: %w", err)
		}
	}
	pids := make([]int, 0, len(seen))
	for pid := range seen {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids, nil
}

// walkPIDs adds the PIDs of dir and every directory below it to seen. It
// reads directories unsorted (order does not matter, sorting costs) and
// skips what vanishes meanwhile. buf is reused for reading cgroup.procs.
func walkPIDs(dir string, buf []byte, seen map[int]struct{}) ([]byte, error) {
	var err error
	buf, err = readInto(buf, filepath.Join(dir, "cgroup.procs"))
	switch {
	case err == nil:
		if err := parsePIDs(buf, dir, seen); err != nil {
			return buf, err
		}
	case !vanished(err):
		return buf, err
	}
	f, err := os.Open(dir)
	if err != nil {
		if vanished(err) {
			return buf, nil
		}
		return buf, err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil && !vanished(err) {
		return buf, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if buf, err = walkPIDs(filepath.Join(dir, e.Name()), buf, seen); err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// vanished reports whether err means the cgroup went away (removed directory
// or file; ENODEV from a cgroup file of a removed cgroup).
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV)
}

// readInto reads a whole file into buf, reusing its storage.
func readInto(buf []byte, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	b := bytes.NewBuffer(buf[:0])
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}

func parsePIDs(b []byte, dir string, seen map[int]struct{}) error {
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		pid, err := strconv.Atoi(string(line))
		if err != nil || pid <= 0 {
			return fmt.Errorf("%s: bad pid %q", filepath.Join(dir, "cgroup.procs"), line)
		}
		seen[pid] = struct{}{}
	}
	return nil
}
