package realjob

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// autoJob is a batch script for a site that starts the watchers itself
// (the SPANK plugin's watch=auto): no watcher line, the training only.
// %[1]s: the job's directory; %[2]s: the nodes' gloo addresses; %[3]d:
// the master port; %[4]s: the training's launch; %[5]s: what the script
// does after it (its exit).
const autoJob = `#!/bin/sh
export D=%[1]s FAULT_DIR=%[1]s
export GLOO_NODE_ADDRS=%[2]s MASTER_PORT=%[3]d
export USE_LIBUV=0
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR=$(scontrol show node -o "$first" | sed 's/.* NodeAddr=\([^ ]*\).*/\1/')
%[4]s
rc=$?
echo "training exit $rc"
%[5]s
`

// TestE2EAutoWatchFailedJobs runs real PyTorch jobs (gloo, one rank per
// node) on a cluster whose SPANK plugin starts vigil-watch on every node
// (watch=auto), with the shipped [watch] settings and Slurm's default
// KillWait of 30 s: a job whose rank is killed with SIGKILL, and one
// whose batch script exits 0 after its srun failed, each give one
// digest of a failed job, naming the killed rank's host, sent while the
// job ends, well inside KillWait.
func TestE2EAutoWatchFailedJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and real PyTorch jobs")
	}
	watcher := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	dir := jobsDir(t)
	so := buildSpank(t, dir, "/usr/include")
	url, hooksOf := notifytest.Recorder(t)
	reports := filepath.Join(dir, "reports")
	if err := os.MkdirAll(reports, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "vigil.toml")
	// The shipped [watch] settings but where the reports go; the webhook is
	// the job's own (--vigil-webhook, within [policy] webhooks): vigil.toml
	// names none.
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[watch]\nreport_dir = %q\n[policy]\nnotify = [\"webhook\"]\nwebhooks = [%q]\n",
		reports, url+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	plugstack := fmt.Sprintf("required %s config=%s watcher=%s watch=auto state_dir=%s\n",
		so, cfg, watcher, filepath.Join(dir, "state"))
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 5, NodeAddrs: true, PrologFlags: "Alloc,Contain", PlugStack: plugstack,
		ExtraConf: []string{"KillWait=30"}})
	c.Restart(t) // slurmd runs slurm_spank_job_prolog only after a restart that loaded the plugin
	if c.CgroupPlugin == "" {
		t.Fatalf("the test cluster runs without proctrack/cgroup: vigil-watch finds a job's processes through its cgroup")
	}
	var addrs []string
	for i, n := range c.Nodes {
		addrs = append(addrs, n+"="+c.NodeAddrs[i])
	}

	type autoCase struct {
		name, launch, after string
		nodes               []string
		culprit             string // the host the digest must name; "" any
	}
	killDir := jobDir(t, dir, "kill")
	jobDir(t, dir, "srun-failed")
	cases := []autoCase{
		{name: "kill", nodes: c.Nodes[0:3], culprit: c.Nodes[2],
			launch: fmt.Sprintf("srun --ntasks-per-node=1 %s %s/train.py --data %s/data --ckpt %s/ckpt.pt --fault kill --fault-rank 2 --fault-step 40",
				python, killDir, killDir, killDir),
			after: "exit $rc"},
		{name: "srun-failed", nodes: c.Nodes[3:5],
			launch: "srun --ntasks-per-node=1 sh -c 'sleep 3; exit 3'",
			after:  "exit 0"},
	}
	ids := map[string]string{}

	for _, k := range cases {
		d := filepath.Join(dir, k.name)
		script := fmt.Sprintf(autoJob, d, strings.Join(addrs, ","), slurmtest.FreePort(t, slurmtest.JobPorts), k.launch, k.after)
		ids[k.name] = c.Sbatch(t, script, "--vigil-webhook="+url+"/hook", "--chdir="+d, "-N", fmt.Sprint(len(k.nodes)), "--ntasks-per-node=1",
			"--mem=1500", "-w", strings.Join(k.nodes, ","), "--job-name", k.name, "--output", filepath.Join(d, "job.out"))
	}

	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			id := ids[k.name]
			d := filepath.Join(dir, k.name)
			c.WaitJob(t, id, 90*time.Second, "COMPLETED", "FAILED")
			ended := time.Now()
			for time.Since(ended) < 35*time.Second && len(hooksOf(id)) == 0 {
				time.Sleep(200 * time.Millisecond)
			}
			hooks := hooksOf(id)
			logs, _ := filepath.Glob(filepath.Join(d, "vigil-watch-"+id+"-*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, tail(string(b), 4000))
			}
			b, _ := os.ReadFile(filepath.Join(d, "job.out"))
			t.Logf("job output:\n%s", tail(string(b), 2000))
			var failed []notifytest.Hook
			for _, h := range hooks {
				if h.Body["event"] == "failed" {
					failed = append(failed, h)
				}
			}
			if len(failed) != 1 {
				t.Fatalf("job %s: webhooks %v, want one digest of a failed job", id, hooks)
			}
			h := failed[0]
			// WaitJob polls: the job ended at most a poll before it saw so.
			took := h.At.Sub(ended)
			t.Logf("webhook %.1fs after the job was seen ended: %v", took.Seconds(), h.Body["text"])
			if took > 15*time.Second {
				t.Errorf("the digest came %.1fs after the job ended: want it well inside KillWait (30 s)", took.Seconds())
			}
			if k.culprit != "" {
				dg, _ := h.Body["digest"].(map[string]any)
				cs, _ := dg["culprits"].([]any)
				if len(cs) != 1 || cs[0].(map[string]any)["host"] != k.culprit {
					t.Errorf("digest %v, want it to name %s, the killed rank's host", dg, k.culprit)
				}
			}
		})
	}
}

// jobDir makes the job's directory with the training script.
func jobDir(t *testing.T, dir, name string) string {
	t.Helper()
	d := filepath.Join(dir, name)
	for _, x := range []string{d, filepath.Join(d, "data")} {
		if err := os.MkdirAll(x, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	copyTestdata(t, d, "train.py", "nolibuv.py")
	return d
}

// buildSpank builds the SPANK plugin (slurm/spank) into dir against the
// <slurm/spank.h> under include.
func buildSpank(t *testing.T, dir, include string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "slurm", "spank")
	so := filepath.Join(dir, "vigil_spank.so")
	out, err := exec.Command("make", "-C", src, "OUT="+so, "SLURM_INCLUDE="+include).CombinedOutput()
	if err != nil {
		t.Fatalf("building the SPANK plugin (gcc, make and libslurm-dev): %v\n%s", err, out)
	}
	return so
}
