package rendezvous

import (
	"reflect"
	"testing"

	"github.com/vigil-hpc/vigil/slurm"
)

func TestForJob(t *testing.T) {
	env := map[string]string{"SLURM_JOB_ID": "77", "SLURMD_NODENAME": "gpu03",
		"SLURM_JOB_NODELIST": "gpu[03-04],gpu01", "SLURM_JOB_RESTART_COUNT": "2"}
	job, err := slurm.JobFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	c, err := ForJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if c.Job != "77" || c.Restart != 2 || c.Self != "gpu03" || !reflect.DeepEqual(c.Nodes, []string{"gpu03", "gpu04", "gpu01"}) {
		t.Errorf("ForJob = %+v", c)
	}
	if Coordinator(c.Nodes) != "gpu01" {
		t.Errorf("coordinator %q, want gpu01", Coordinator(c.Nodes))
	}
	if _, err := ForJob(&slurm.Job{ID: "77", NodeName: "gpu03", NodeList: "gpu[03-"}); err == nil {
		t.Error("a bad hostlist was accepted")
	}
	if _, err := ForJob(&slurm.Job{ID: "77", NodeList: "gpu03"}); err == nil {
		t.Error("a job without a node name was accepted")
	}
}
