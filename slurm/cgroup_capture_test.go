package slurm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// capturedFiles are the files of each cgroup directory a fixture keeps
// (when the kernel has them there): enough to show the layout, which
// controllers Slurm enabled, and that there is no io.stat.
var capturedFiles = []string{"cgroup.procs", "cgroup.controllers", "cgroup.subtree_control", "cgroup.type", "cpu.stat", "io.stat", "memory.current"}

// captureCgroupTree copies the cluster's system.slice (every node's
// <node>_slurmstepd.scope) to dir, replacing it: directories as they are,
// with node names replaced by n1, n2, ... (in c.Nodes order) and each PID by
// a stable stand-in (1000 and up, in the order first seen), so that the
// fixture is the same shape at every capture. The job id is kept.
func captureCgroupTree(t *testing.T, c *slurmtest.Cluster, id, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(c.CgroupRoot, "system.slice")
	rename := func(p string) string {
		for i, n := range c.Nodes {
			p = strings.ReplaceAll(p, n+"_slurmstepd.scope", fmt.Sprintf("n%d_slurmstepd.scope", i+1))
		}
		return p
	}
	pids := map[string]string{}
	var paths []string
	_ = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	for _, p := range paths {
		rel, _ := filepath.Rel(c.CgroupRoot, p)
		out := filepath.Join(dir, rename(rel))
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range capturedFiles {
			b, err := os.ReadFile(filepath.Join(p, f))
			if err != nil {
				continue
			}
			if f == "cgroup.procs" {
				b = renumber(b, pids)
			}
			if err := os.WriteFile(filepath.Join(out, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("captured %d cgroup directories of job %s into %s", len(paths), id, dir)
}

// renumber replaces each PID line by its stand-in.
func renumber(b []byte, pids map[string]string) []byte {
	var out []string
	for _, l := range strings.Fields(string(b)) {
		if _, ok := pids[l]; !ok {
			pids[l] = strconv.Itoa(1000 + len(pids))
		}
		out = append(out, pids[l])
	}
	if len(out) == 0 {
		return nil
	}
	return []byte(strings.Join(out, "\n") + "\n")
}
