package slurm

import (
	"reflect"
	"testing"
)

func TestParseProcCgroup(t *testing.T) {
	b := []byte("6:freezer:/slurm_n1/uid_1000/job_42/step_0\n0::/system.slice/n1_slurmstepd.scope/job_43/step_0/user/task_0\n" +
		"1:name=systemd:/a:b/job_x/job_/job_0044\nnot a line\n")
	got := ParseProcCgroup(b)
	if len(got) != 3 || got[0].Controllers != "freezer" || got[1].Controllers != "" || got[2].Path != "/a:b/job_x/job_/job_0044" {
		t.Fatalf("ParseProcCgroup = %+v", got)
	}
	if ids := JobIDs(got); !reflect.DeepEqual(ids, map[string]bool{"42": true, "43": true, "0044": true}) {
		t.Errorf("JobIDs = %v, want 42, 43 and 0044 (job_x and job_ are no ids)", ids)
	}
}
