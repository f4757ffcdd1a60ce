package slurm

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// The v2real-* trees are captured from real Slurm clusters under cgroup/v2
// (testdata/cgroup/README.md): job 2 with a batch step and an extern step
// on n1 and a two-task step 0 over n1 and n3.

func TestRealV2FindJobCgroup(t *testing.T) {
	for _, v := range []string{"22.05", "24.11"} {
		t.Run(v, func(t *testing.T) {
			root := filepath.Join(cgroupFixtures, "v2real-"+v)
			for _, node := range []string{"n1", "n3"} {
				j, err := FindJobCgroup(root, "2", 0, node)
				want := JobCgroup{Version: 2, Dir: filepath.Join(root, "system.slice", node+"_slurmstepd.scope", "job_2")}
				if err != nil || !reflect.DeepEqual(j, want) {
					t.Errorf("%s: FindJobCgroup = %+v, %v; want %+v", node, j, err, want)
				}
			}
			// n2 has a scope (slurmd/, system/) but no job.
			if _, err := FindJobCgroup(root, "2", 0, "n2"); !errors.Is(err, ErrNoJobCgroup) {
				t.Errorf("n2: err = %v, want ErrNoJobCgroup", err)
			}
		})
	}
}

func TestRealV2Tasks(t *testing.T) {
	type task struct {
		step, dir string
		id        int
		special   bool
	}
	n1 := []task{{"0", "step_0/user/task_0", 0, false}, {"batch", "step_batch/user/task_0", 0, false},
		{"extern", "step_extern/user/task_special", -1, true}}
	tests := []struct {
		version, node string
		want          []task
	}{
		{"22.05", "n1", n1},
		{"24.11", "n1", n1},
		// The second node's one task: its local id under 22.05, its global id (rank 1) under 24.11.
		{"22.05", "n3", []task{{"0", "step_0/user/task_0", 0, false}, {"extern", "step_extern/user/task_special", -1, true}}},
		{"24.11", "n3", []task{{"0", "step_0/user/task_1", 1, false}, {"extern", "step_extern/user/task_special", -1, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.version+"/"+tc.node, func(t *testing.T) {
			j, err := FindJobCgroup(filepath.Join(cgroupFixtures, "v2real-"+tc.version), "2", 0, tc.node)
			if err != nil {
				t.Fatal(err)
			}
			got, err := j.Tasks()
			if err != nil {
				t.Fatal(err)
			}
			var want []TaskCgroup
			for _, w := range tc.want {
				want = append(want, TaskCgroup{Step: w.step, Dir: filepath.Join(j.Dir, w.dir), ID: w.id, Special: w.special})
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Tasks =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// TestRealV2SlurmstepdBesideTasks: under v2 each step's slurmstepd sits in
// step_<s>/slurm, so the job directory's PIDs include them; the task
// directories hold the job's own processes only.
func TestRealV2SlurmstepdBesideTasks(t *testing.T) {
	j, err := FindJobCgroup(filepath.Join(cgroupFixtures, "v2real-24.11"), "2", 0, "n1")
	if err != nil {
		t.Fatal(err)
	}
	all, err := CgroupPIDs(j.Dirs())
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := j.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, tk := range tasks {
		dirs = append(dirs, tk.Dir)
	}
	own, err := CgroupPIDs(dirs)
	if err != nil {
		t.Fatal(err)
	}
	// Stand-ins: 1000, 1002, 1006 are the slurmstepds of step 0, batch, extern.
	if want := []int{1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007}; !slices.Equal(all, want) {
		t.Errorf("job PIDs = %v, want %v", all, want)
	}
	if want := []int{1001, 1003, 1004, 1005, 1007}; !slices.Equal(own, want) {
		t.Errorf("task PIDs = %v, want %v", own, want)
	}
}

// TestRealV2NoIOStat: Slurm up to 24.11 enables no io controller below its
// scope (and this machine's cgroup2 has none to give): no io.stat anywhere in
// the captured trees, and Controller says so.
func TestRealV2NoIOStat(t *testing.T) {
	for _, v := range []string{"22.05", "24.11"} {
		root := filepath.Join(cgroupFixtures, "v2real-"+v)
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "io.stat" {
				t.Errorf("%s: io.stat at %s", v, p)
			}
			return nil
		})
		j, err := FindJobCgroup(root, "2", 0, "n1")
		if err != nil {
			t.Fatal(err)
		}
		for _, ctl := range []string{"io", "memory"} {
			if d, ok := j.Controller(ctl); ok {
				t.Errorf("%s: Controller(%q) = %q, true; the job cgroup has no such controller", v, ctl, d)
			}
		}
	}
}

func TestRealV1TasksFirstController(t *testing.T) {
	// 22.05's v1 numbers the second node's task task_1 in cpuacct (global)
	// and task_0 in devices (local): Tasks lists cpuacct's only.
	j := JobCgroup{Version: 1, Controllers: map[string]string{
		"cpuacct": filepath.Join(cgroupFixtures, "v1tasks", "cpuacct", "job_2"),
		"devices": filepath.Join(cgroupFixtures, "v1tasks", "devices", "job_2"),
	}}
	got, err := j.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	want := []TaskCgroup{{Step: "0", Dir: filepath.Join(j.Controllers["cpuacct"], "step_0", "task_1"), ID: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tasks = %+v, want %+v", got, want)
	}
}

func TestParseTaskDir(t *testing.T) {
	for _, tc := range []struct {
		name        string
		id          int
		special, ok bool
	}{
		{"task_0", 0, false, true}, {"task_17", 17, false, true}, {"task_special", -1, true, true},
		{"task_", 0, false, false}, {"task_-1", 0, false, false}, {"task_01", 0, false, false},
		{"slurm", 0, false, false}, {"user", 0, false, false},
	} {
		id, special, ok := parseTaskDir(tc.name)
		if id != tc.id || special != tc.special || ok != tc.ok {
			t.Errorf("parseTaskDir(%q) = %d, %v, %v", tc.name, id, special, ok)
		}
	}
}
