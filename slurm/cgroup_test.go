package slurm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

const cgroupFixtures = "testdata/cgroup"

func TestFindJobCgroup(t *testing.T) {
	v1 := func(tree, slurmDir, uidJob string, ctls ...string) map[string]string {
		m := map[string]string{}
		for _, c := range ctls {
			dir := c
			if c == "cpu" || c == "cpuacct" {
				dir = "cpu,cpuacct"
			}
			m[c] = filepath.Join(cgroupFixtures, tree, dir, slurmDir, uidJob)
		}
		return m
	}
	tests := []struct {
		name        string
		tree, job   string
		uid         int
		node        string
		want        JobCgroup
		wantDirs    []string
		wantProcs   string
		wantNoCgrp  bool
		wantOtherEr bool
	}{
		{
			name: "v1 node suffix", tree: "v1node", job: "42", uid: 1000, node: "n1",
			want: JobCgroup{Version: 1, Controllers: v1("v1node", "slurm_n1", "uid_1000/job_42",
				"freezer", "memory", "cpu", "cpuacct", "cpuset", "devices")},
			wantDirs: []string{
				cgroupFixtures + "/v1node/freezer/slurm_n1/uid_1000/job_42",
				cgroupFixtures + "/v1node/cpu,cpuacct/slurm_n1/uid_1000/job_42",
				cgroupFixtures + "/v1node/memory/slurm_n1/uid_1000/job_42",
				cgroupFixtures + "/v1node/cpuset/slurm_n1/uid_1000/job_42",
				cgroupFixtures + "/v1node/devices/slurm_n1/uid_1000/job_42",
			},
			wantProcs: cgroupFixtures + "/v1node/freezer/slurm_n1/uid_1000/job_42",
		},
		{
			name: "v1 other node same job id", tree: "v1node", job: "42", uid: 1000, node: "n2",
			want: JobCgroup{Version: 1, Controllers: v1("v1node", "slurm_n2", "uid_1000/job_42",
				"freezer", "memory", "cpu", "cpuacct", "cpuset", "devices")},
			wantProcs: cgroupFixtures + "/v1node/freezer/slurm_n2/uid_1000/job_42",
		},
		{name: "v1 node suffix but no node given", tree: "v1node", job: "42", uid: 1000, wantNoCgrp: true},
		{name: "v1 wrong uid", tree: "v1node", job: "42", uid: 0, node: "n1", wantNoCgrp: true},
		{name: "v1 unknown job", tree: "v1node", job: "44", uid: 1000, node: "n1", wantNoCgrp: true},
		{
			name: "v1 plain", tree: "v1plain", job: "7", uid: 0, node: "n1",
			want: JobCgroup{Version: 1, Controllers: map[string]string{
				"freezer": cgroupFixtures + "/v1plain/freezer/slurm/uid_0/job_7",
				"memory":  cgroupFixtures + "/v1plain/memory/slurm/uid_0/job_7",
				"cpuacct": cgroupFixtures + "/v1plain/cpuacct/slurm/uid_0/job_7",
				"pids":    cgroupFixtures + "/v1plain/pids/slurm/uid_0/job_7",
			}},
			wantDirs: []string{
				cgroupFixtures + "/v1plain/freezer/slurm/uid_0/job_7",
				cgroupFixtures + "/v1plain/cpuacct/slurm/uid_0/job_7",
				cgroupFixtures + "/v1plain/memory/slurm/uid_0/job_7",
				cgroupFixtures + "/v1plain/pids/slurm/uid_0/job_7",
			},
		},
		{
			name: "v1 plain any uid", tree: "v1plain", job: "8", uid: -1,
			want: JobCgroup{Version: 1, Controllers: map[string]string{
				"freezer": cgroupFixtures + "/v1plain/freezer/slurm/uid_1000/job_8",
				"memory":  cgroupFixtures + "/v1plain/memory/slurm/uid_1000/job_8",
				"cpuacct": cgroupFixtures + "/v1plain/cpuacct/slurm/uid_1000/job_8",
				"pids":    cgroupFixtures + "/v1plain/pids/slurm/uid_1000/job_8",
			}},
		},
		{
			name: "v2 node prefix", tree: "v2node", job: "42", uid: 1000, node: "n1",
			want:      JobCgroup{Version: 2, Dir: cgroupFixtures + "/v2node/system.slice/n1_slurmstepd.scope/job_42"},
			wantDirs:  []string{cgroupFixtures + "/v2node/system.slice/n1_slurmstepd.scope/job_42"},
			wantProcs: cgroupFixtures + "/v2node/system.slice/n1_slurmstepd.scope/job_42",
		},
		{
			name: "v2 other node", tree: "v2node", job: "42", uid: 1000, node: "n2",
			want: JobCgroup{Version: 2, Dir: cgroupFixtures + "/v2node/system.slice/n2_slurmstepd.scope/job_42"},
		},
		{name: "v2 node prefix but no node given", tree: "v2node", job: "42", uid: 1000, wantNoCgrp: true},
		{
			name: "v2 plain with node given", tree: "v2plain", job: "9", uid: 5, node: "n7",
			want: JobCgroup{Version: 2, Dir: cgroupFixtures + "/v2plain/system.slice/slurmstepd.scope/job_9"},
		},
		{
			name: "hybrid unified", tree: "hybrid", job: "5", uid: 0,
			want: JobCgroup{Version: 2, Dir: cgroupFixtures + "/hybrid/unified/system.slice/slurmstepd.scope/job_5"},
		},
		{name: "missing root", tree: "nonexistent", job: "1", uid: 0, wantOtherEr: true},
		{name: "bad job id", tree: "v1plain", job: "../7", uid: 0, wantOtherEr: true},
		{name: "empty job id", tree: "v1plain", job: "", uid: 0, wantOtherEr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(cgroupFixtures, tc.tree)
			got, err := FindJobCgroup(root, tc.job, tc.uid, tc.node)
			switch {
			case tc.wantNoCgrp:
				if !errors.Is(err, ErrNoJobCgroup) {
					t.Fatalf("err = %v, want ErrNoJobCgroup (got %+v)", err, got)
				}
				if _, err := JobCgroups(root, tc.job, tc.uid, tc.node); !errors.Is(err, ErrNoJobCgroup) {
					t.Errorf("JobCgroups err = %v, want ErrNoJobCgroup", err)
				}
				return
			case tc.wantOtherEr:
				if err == nil || errors.Is(err, ErrNoJobCgroup) {
					t.Fatalf("err = %v, want another error", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("FindJobCgroup =\n%+v\nwant\n%+v", got, tc.want)
			}
			dirs, err := JobCgroups(root, tc.job, tc.uid, tc.node)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(dirs, got.Dirs()) {
				t.Errorf("JobCgroups = %v, Dirs = %v", dirs, got.Dirs())
			}
			if tc.wantDirs != nil && !reflect.DeepEqual(dirs, tc.wantDirs) {
				t.Errorf("Dirs =\n%q\nwant\n%q", dirs, tc.wantDirs)
			}
			if tc.wantProcs != "" && got.ProcsDir() != tc.wantProcs {
				t.Errorf("ProcsDir = %q, want %q", got.ProcsDir(), tc.wantProcs)
			}
		})
	}
}

func TestJobCgroupController(t *testing.T) {
	j, err := FindJobCgroup(filepath.Join(cgroupFixtures, "v1node"), "42", 1000, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := j.Controller("cpuacct"); !ok || d != cgroupFixtures+"/v1node/cpu,cpuacct/slurm_n1/uid_1000/job_42" {
		t.Errorf("cpuacct = %q %v", d, ok)
	}
	if d, ok := j.Controller("blkio"); ok {
		t.Errorf("blkio = %q, want none", d)
	}
	j2, err := FindJobCgroup(filepath.Join(cgroupFixtures, "v2plain"), "9", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := j2.Controller("memory"); !ok || d != j2.Dir {
		t.Errorf("v2 memory = %q %v", d, ok)
	}
}

func TestCgroupPIDs(t *testing.T) {
	f := func(p string) string { return filepath.Join(cgroupFixtures, p) }
	tests := []struct {
		name string
		dirs []string
		want []int
	}{
		{"v1 freezer walks steps", []string{f("v1node/freezer/slurm_n1/uid_1000/job_42")}, []int{100, 101, 103, 104, 105}},
		{"v1 memory walks tasks", []string{f("v1node/memory/slurm_n1/uid_1000/job_42")}, []int{100, 101, 103, 104, 105}},
		{"v1 all controllers dedup", []string{
			f("v1node/freezer/slurm_n1/uid_1000/job_42"),
			f("v1node/cpu,cpuacct/slurm_n1/uid_1000/job_42"),
			f("v1node/memory/slurm_n1/uid_1000/job_42"),
		}, []int{100, 101, 103, 104, 105}},
		{"v1 plain", []string{f("v1plain/freezer/slurm/uid_0/job_7")}, []int{11, 12, 13}},
		{"v2 nested user/task", []string{f("v2node/system.slice/n1_slurmstepd.scope/job_42")}, []int{91, 92, 93, 94, 95}},
		{"v2 one step", []string{f("v2node/system.slice/n1_slurmstepd.scope/job_42/step_0")}, []int{92, 94, 95}},
		{"nothing", nil, []int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CgroupPIDs(tc.dirs)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("CgroupPIDs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCgroupPIDsFromFindJobCgroup(t *testing.T) {
	dirs, err := JobCgroups(filepath.Join(cgroupFixtures, "v1node"), "42", 1000, "n2")
	if err != nil {
		t.Fatal(err)
	}
	got, err := CgroupPIDs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []int{301}) {
		t.Errorf("pids = %v, want [301]", got)
	}
}

func TestCgroupPIDsErrors(t *testing.T) {
	_, err := CgroupPIDs([]string{filepath.Join(cgroupFixtures, "v2plain/system.slice/slurmstepd.scope/job_404")})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: err = %v, want fs.ErrNotExist", err)
	}
	_, err = CgroupPIDs([]string{filepath.Join(cgroupFixtures, "bad")})
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("bad pid: err = %v, want a parse error", err)
	}
	_, err = CgroupPIDs([]string{filepath.Join(cgroupFixtures, "v2plain/cgroup.procs")})
	if err == nil {
		t.Error("file instead of dir: no error")
	}
}

// TestCgroupPIDsVanishing removes directories while CgroupPIDs walks them,
// as happens when steps end: that is never an error.
func TestCgroupPIDsVanishing(t *testing.T) {
	root := t.TempDir()
	makeTree(t, root, 20, 20, 3)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := 19; s >= 0; s-- {
			_ = os.RemoveAll(filepath.Join(root, fmt.Sprintf("step_%d", s)))
		}
	}()
	for i := 0; i < 50; i++ {
		pids, err := CgroupPIDs([]string{root})
		if err != nil {
			t.Fatalf("walk %d: %v", i, err)
		}
		for j := 1; j < len(pids); j++ {
			if pids[j] <= pids[j-1] {
				t.Fatalf("not sorted/deduplicated: %v", pids)
			}
		}
	}
	<-done
	pids, err := CgroupPIDs([]string{root})
	if err != nil || len(pids) != 1 || pids[0] != 1 {
		t.Errorf("after removal: %v %v, want [1]", pids, err)
	}
}

// makeTree writes a job directory (PID 1 in its own cgroup.procs) with
// steps step directories of tasks task directories (step_S/user/task_T, the
// v2 layout) holding procs PIDs each. Each step's cgroup.procs also lists
// its tasks' PIDs, so every PID appears twice and deduplication is
// exercised. It returns the number of distinct PIDs.
func makeTree(tb testing.TB, root string, steps, tasks, procs int) int {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte("1\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	pid := 100
	for s := 0; s < steps; s++ {
		step := filepath.Join(root, fmt.Sprintf("step_%d", s))
		var all []byte
		for k := 0; k < tasks; k++ {
			task := filepath.Join(step, "user", fmt.Sprintf("task_%d", k))
			if err := os.MkdirAll(task, 0o755); err != nil {
				tb.Fatal(err)
			}
			var b []byte
			for p := 0; p < procs; p++ {
				b = fmt.Appendf(b, "%d\n", pid)
				pid++
			}
			all = append(all, b...)
			if err := os.WriteFile(filepath.Join(task, "cgroup.procs"), b, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(step, "cgroup.procs"), all, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return pid - 100 + 1
}

// BenchmarkCgroupPIDs walks a large job: 64 steps × 16 tasks × 8 PIDs
// (8193 distinct PIDs in 1,000+ directories).
func BenchmarkCgroupPIDs(b *testing.B) {
	root := b.TempDir()
	n := makeTree(b, root, 64, 16, 8)
	b.ResetTimer()
	for b.Loop() {
		pids, err := CgroupPIDs([]string{root})
		if err != nil {
			b.Fatal(err)
		}
		if len(pids) != n {
			b.Fatalf("%d pids, want %d", len(pids), n)
		}
	}
}
