package slurm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// envFile reads a saved environment (NAME=value lines).
func envFile(t *testing.T, name string) []string {
	t.Helper()
	var env []string
	for _, l := range strings.Split(string(readTestdata(t, name)), "\n") {
		if l != "" {
			env = append(env, l)
		}
	}
	return env
}

func lookupOf(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func noHostname(t *testing.T) {
	old := hostname
	hostname = func() (string, error) { return "host1.example.com", nil }
	t.Cleanup(func() { hostname = old })
}

// The environments were saved by a prolog, an epilog and a job step of job
// 7 (`sbatch --gpus=2 --comment="vigil test"` ending with exit 7) on the
// 22.05 cluster.
func TestJobFromEnvironReal(t *testing.T) {
	tests := []struct {
		file string
		want Job
	}{
		{"env-prolog.txt", Job{ID: "7", User: "root", UID: 0, GID: 0, NodeList: "cn2", Nodes: []string{"cn2"},
			NodeName: "cn2", NodeNameSource: "SLURMD_NODENAME", Partition: "debug", GPUs: []int{0, 1},
			Context: ContextProlog, Comment: "vigil test", Spank: map[string]string{}}},
		{"env-epilog.txt", Job{ID: "7", User: "root", UID: 0, GID: 0, NodeList: "cn2", Nodes: []string{"cn2"},
			NodeName: "cn2", NodeNameSource: "SLURMD_NODENAME", Partition: "debug", GPUs: []int{0, 1},
			Context: ContextEpilog, Comment: "vigil test", Spank: map[string]string{},
			ExitKnown: true, ExitCode: 7, ExitSignal: 0}},
		{"env-step.txt", Job{ID: "7", User: "root", UID: 0, GID: 0, NodeList: "cn2", Nodes: []string{"cn2"},
			NodeName: "cn2", NodeNameSource: "SLURMD_NODENAME", Partition: "debug", GPUs: []int{0, 1},
			StepID: "0", Spank: map[string]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			j, err := JobFromEnviron(envFile(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*j, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *j, tt.want)
			}
		})
	}
}

func TestJobFromEnv(t *testing.T) {
	noHostname(t)
	base := map[string]string{"SLURM_JOB_ID": "42"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, j *Job)
		err   string // substring of the error; "" means no error
	}{
		{"minimal", base, func(t *testing.T, j *Job) {
			if j.ID != "42" || j.UID != -1 || j.GID != -1 || j.NodeName != "host1" || j.NodeNameSource != "hostname" || j.GPUs != nil || j.ExitKnown {
				t.Errorf("%+v", j)
			}
		}, ""},
		{"SLURM_JOBID only", map[string]string{"SLURM_JOBID": "43"}, func(t *testing.T, j *Job) {
			if j.ID != "43" {
				t.Errorf("ID %q", j.ID)
			}
		}, ""},
		{"array task id", map[string]string{"SLURM_JOB_ID": "43_2"}, nil, ""},
		{"job nodelist preferred", with("SLURM_JOB_NODELIST", "gpu[01-03]", "SLURM_NODELIST", "x1"), func(t *testing.T, j *Job) {
			if j.NodeList != "gpu[01-03]" || !reflect.DeepEqual(j.Nodes, []string{"gpu01", "gpu02", "gpu03"}) {
				t.Errorf("%q %q", j.NodeList, j.Nodes)
			}
		}, ""},
		{"topology addr", with("SLURM_TOPOLOGY_ADDR", "n7"), func(t *testing.T, j *Job) {
			if j.NodeName != "n7" || j.NodeNameSource != "SLURM_TOPOLOGY_ADDR" {
				t.Errorf("%q %q", j.NodeName, j.NodeNameSource)
			}
		}, ""},
		{"topology addr with switches", with("SLURM_TOPOLOGY_ADDR", "s1.s2.n7"), func(t *testing.T, j *Job) {
			if j.NodeName != "host1" {
				t.Errorf("%q", j.NodeName)
			}
		}, ""},
		{"restart count", with("SLURM_RESTART_COUNT", "2"), func(t *testing.T, j *Job) {
			if j.RestartCount != 2 {
				t.Errorf("%d", j.RestartCount)
			}
		}, ""},
		{"job restart count", with("SLURM_JOB_RESTART_COUNT", "3"), func(t *testing.T, j *Job) {
			if j.RestartCount != 3 {
				t.Errorf("%d", j.RestartCount)
			}
		}, ""},
		{"cuda numeric", with("CUDA_VISIBLE_DEVICES", "2,3"), func(t *testing.T, j *Job) {
			if !reflect.DeepEqual(j.GPUs, []int{2, 3}) {
				t.Errorf("%v", j.GPUs)
			}
		}, ""},
		{"cuda uuids ignored", with("CUDA_VISIBLE_DEVICES", "GPU-8f1e2b3c,MIG-1"), func(t *testing.T, j *Job) {
			if j.GPUs != nil {
				t.Errorf("%v", j.GPUs)
			}
		}, ""},
		{"job gpus win over cuda", with("SLURM_JOB_GPUS", "4,5", "CUDA_VISIBLE_DEVICES", "0,1"), func(t *testing.T, j *Job) {
			if !reflect.DeepEqual(j.GPUs, []int{4, 5}) {
				t.Errorf("%v", j.GPUs)
			}
		}, ""},
		{"exit code from wait status", with("SLURM_JOB_EXIT_CODE", "9"), func(t *testing.T, j *Job) {
			if !j.ExitKnown || j.ExitCode != 0 || j.ExitSignal != 9 {
				t.Errorf("%+v", j)
			}
		}, ""},
		{"exit code2 wins", with("SLURM_JOB_EXIT_CODE", "256", "SLURM_JOB_EXIT_CODE2", "0:15"), func(t *testing.T, j *Job) {
			if !j.ExitKnown || j.ExitCode != 0 || j.ExitSignal != 15 {
				t.Errorf("%+v", j)
			}
		}, ""},
		{"exit code only", with("SLURM_JOB_EXIT_CODE", "256"), func(t *testing.T, j *Job) {
			if j.ExitCode != 1 || j.ExitSignal != 0 {
				t.Errorf("%+v", j)
			}
		}, ""},
		{"step", with("SLURM_STEP_ID", "3", "SLURM_SCRIPT_CONTEXT", ""), func(t *testing.T, j *Job) {
			if j.StepID != "3" || j.Context != "" {
				t.Errorf("%+v", j)
			}
		}, ""},
		{"missing job id", map[string]string{"SLURM_JOB_USER": "x"}, nil, ErrNotInJob.Error()},
		{"empty job id", map[string]string{"SLURM_JOB_ID": ""}, nil, ErrNotInJob.Error()},
		{"bad job id", map[string]string{"SLURM_JOB_ID": "12; rm"}, nil, "SLURM_JOB_ID"},
		{"bad uid", with("SLURM_JOB_UID", "root"), nil, "SLURM_JOB_UID"},
		{"bad gid", with("SLURM_JOB_GID", "-1"), nil, "SLURM_JOB_GID"},
		{"bad restart", with("SLURM_RESTART_COUNT", "x"), nil, "SLURM_RESTART_COUNT"},
		{"bad nodelist", with("SLURM_JOB_NODELIST", "n[1-"), nil, "SLURM_JOB_NODELIST"},
		{"bad gpus", with("SLURM_JOB_GPUS", "0,x"), nil, "SLURM_JOB_GPUS"},
		{"bad exit code2", with("SLURM_JOB_EXIT_CODE2", "7"), nil, "SLURM_JOB_EXIT_CODE2"},
		{"bad exit code", with("SLURM_JOB_EXIT_CODE", "x"), nil, "SLURM_JOB_EXIT_CODE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := JobFromEnv(lookupOf(tt.env))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one naming %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, j)
			}
		})
	}
	if _, err := JobFromEnv(lookupOf(nil)); !errors.Is(err, ErrNotInJob) {
		t.Errorf("want ErrNotInJob, got %v", err)
	}
}

func TestJobFromEnvironSpank(t *testing.T) {
	env := []string{"SLURM_JOB_ID=5", "SLURMD_NODENAME=n1", "SPANK_VIGIL_POLICY=strict", "SPANK_=x", "SPANK_EMPTY=", "NOTSPANK_X=1"}
	j, err := JobFromEnviron(env)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"VIGIL_POLICY": "strict", "EMPTY": ""}; !reflect.DeepEqual(j.Spank, want) {
		t.Errorf("spank %q, want %q", j.Spank, want)
	}
}

func TestJobFromEnvSpankFromProcess(t *testing.T) {
	t.Setenv("SPANK_VIGIL_TEST", "from-env")
	m := map[string]string{"SLURM_JOB_ID": "5", "SLURMD_NODENAME": "n1", "SPANK_VIGIL_TEST": "from-lookup"}
	j, err := JobFromEnv(lookupOf(m))
	if err != nil {
		t.Fatal(err)
	}
	if j.Spank["VIGIL_TEST"] != "from-lookup" {
		t.Errorf("spank %q", j.Spank)
	}
}

// JobFromEnviron reads the job from a list of NAME=value entries
// (os.Environ(), or an environment saved by a test). Later entries win.
// It is JobFromEnv with a lookup over environ; SPANK_* variables are
// enumerated from environ itself.
func JobFromEnviron(environ []string) (*Job, error) {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	lookup := func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	return jobFromEnv(lookup, envNames(environ))
}
