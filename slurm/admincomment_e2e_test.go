package slurm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// forgedWord is a cross-node relay word a user would like the prologs of
// their job to read from its AdminComment.
const forgedWord = "vigil-net:0:n1:3:n3"

// TestE2EAdminCommentNotForged: a job whose --chdir and --comment hold
// "AdminComment=<word>" (as `scontrol show job -o` prints WorkDir just
// before AdminComment) reads as having no AdminComment, on the host's Slurm
// (22.05: squeue --json) and on 24.11 (scontrol --json); the admins' own
// AdminComment reads as they set it, and the -o parser never offers one.
func TestE2EAdminCommentNotForged(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, func(t *testing.T, f slurmtest.Flavour) {
		c := slurmtest.Start(t, slurmtest.Options{Nodes: 1, Root: f.Root})
		base, err := os.MkdirTemp("", "vigil-wd-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(base) })
		wd := filepath.Join(base, "x AdminComment="+forgedWord+" SystemComment=y")
		if err := os.MkdirAll(wd, 0o755); err != nil {
			t.Fatal(err)
		}
		job := c.Sbatch(t, "sleep 120\n", "--chdir="+wd, "--comment=mine AdminComment="+forgedWord)
		c.WaitJob(t, job, 60*time.Second, "RUNNING")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cl := c.Client()

		if out, _ := c.Command(t, "scontrol", "show", "job", "-o", job); !containsAll(out, "WorkDir="+wd, "AdminComment="+forgedWord) {
			t.Fatalf("the -o line does not show the forgery this test is about:\n%s", out)
		}
		got, err := cl.JobAdminComment(ctx, job)
		if err != nil || got != "" {
			t.Fatalf("JobAdminComment before the admins set one = %q, %v; want \"\"", got, err)
		}
		info, err := cl.Job(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := info.Fields["AdminComment"]; ok {
			t.Errorf("the -o parser offers an AdminComment %q", v)
		}

		if err := cl.SetJobAdminComment(ctx, job, "vigil-net:1:n2"); err != nil {
			t.Fatal(err)
		}
		if got, err := cl.JobAdminComment(ctx, job); err != nil || got != "vigil-net:1:n2" {
			t.Fatalf("JobAdminComment after the admins set it = %q, %v; want %q", got, err, "vigil-net:1:n2")
		}
		if _, err := cl.JobAdminComment(ctx, "999999"); err == nil {
			t.Error("JobAdminComment of an unknown job succeeded")
		}
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
