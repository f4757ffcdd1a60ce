package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/lifecycle/record"
)

// TestE2EWorkdirResultNotWrittenAsRoot: with result_dir = "workdir", a
// job of uid 65534 submitted with --chdir naming a root-owned directory
// gets no file there from the prologs (which run as root): the result is
// written with the user's own credentials and the kernel refuses it, and
// each node's report says so. The same user's own directory gets one file
// per node, owned by the user.
func TestE2EWorkdirResultNotWrittenAsRoot(t *testing.T) {
	c, s, _ := statusSetup(t)
	top := filepath.Join(c.Dir, "workdirs")
	rootDir, own := filepath.Join(top, "root-owned"), filepath.Join(top, "nobody")
	for _, d := range []string{top, rootDir, own} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(own, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	nobody := []string{"-N", "2", "--uid=65534", "--gid=65534"}

	job := c.Sbatch(t, "true\n", append(nobody, "--chdir="+rootDir)...)
	c.WaitJob(t, job, 60*time.Second, "COMPLETED", "FAILED")
	if ents, _ := os.ReadDir(rootDir); len(ents) != 0 {
		t.Fatalf("the prologs wrote into the root-owned %s: %v", rootDir, ents)
	}
	refused := 0
	for _, r := range nodeReports(t, s) {
		if r.Job == job && strings.Contains(strings.Join(r.Notes, "\n"), "the job's user (uid 65534) may not write there") {
			refused++
		}
	}
	if refused != len(c.Nodes) {
		t.Errorf("%d of %d reports of job %s say the result file was refused", refused, len(c.Nodes), job)
		for _, r := range nodeReports(t, s) {
			t.Logf("report of %s job %s: notes %q", r.Node, r.Job, r.Notes)
		}
	}

	job = c.Sbatch(t, "true\n", append(nobody, "--chdir="+own)...)
	c.WaitJob(t, job, 60*time.Second, "COMPLETED")
	for _, n := range c.Nodes {
		fi, err := os.Lstat(filepath.Join(own, record.JobResultName(job, n)))
		if err != nil {
			t.Errorf("no result file of %s in the user's directory: %v", n, err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 || !fi.Mode().IsRegular() {
			t.Errorf("result file of %s: %v %d:%d, want the user's", n, fi.Mode(), st.Uid, st.Gid)
		}
	}
}
