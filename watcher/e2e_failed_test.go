package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// failingJob starts the watchers' step, waits until they met, then runs a
// step on every node that fails: the node named %[3]s prints an NCCL
// transport error and exits 1 at once, the others exit 1 a second later
// (as ranks do whose peer went away), and the job ends FAILED.
// %[1]s: the job's directory; %[2]s: the watcher's command line.
const failingJob = `#!/bin/sh
export D=%[1]s
srun --overlap --ntasks-per-node=1 --job-name=vigil-watch --output=$D/watch-%%n.out --error=$D/watch-%%n.err %[2]s &
n=0
until [ $(cat $D/watch-*.err 2>/dev/null | grep -c "vigil-watch started") -ge 3 ] || [ $n -ge 30 ]; do sleep 1; n=$((n+1)); done
sleep 2
srun --ntasks-per-node=1 sh -c '
if [ "$SLURMD_NODENAME" = "%[3]s" ]; then
  echo "$SLURMD_NODENAME:4100:4177 [0] NCCL WARN NET/IB : Got completion from peer 10.9.9.9<45123> with status=12 opcode=0 len=0 vendor err 129"
  exit 1
fi
sleep 1; exit 1'
exit $?
`

// TestE2EFailedJobRecheck: a 3-node job that fails within a second of an
// NCCL transport error on one node, on the real cluster with vigil-epilog
// as its Epilog. The watchers, stopped by Slurm as the job ends, give one
// digest of the failed job (network, that node, the cluster's), one
// webhook from the coordinator and a report on every node. The hang
// report is the job's user's file, so that node's epilog notes it and runs
// the health facts, as every node's does: the disk check, which would fail
// there, is not run, and no node is drained (docs/security.md).
func TestE2EFailedJobRecheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	epilog := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/epilog")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	watchDir := filepath.Join(dir, "watch")
	if err := os.MkdirAll(watchDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "vigil.toml")
	wrapper := filepath.Join(dir, "vigil-epilog.sh")
	script := fmt.Sprintf("#!/bin/sh\nexport VIGIL_STATE_DIR=%s\nexec %s --config %s \"$@\"\n", filepath.Join(dir, "state"), epilog, conf)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, Epilog: wrapper})
	// The epilog reads its config when it runs: written once the cluster
	// says where its scontrol is.
	body := fmt.Sprintf(`[prolog]
checks = ["fault-inject", "disk"]
retries = 0
budget = "30s"
report_dir = %q
run_dir = %q
slurm_bin_dir = %q
[checks.fault-inject]
mode = "pass"
[checks.disk]
path = %q
[watch]
report_dir = %q
# The job fails within a second of the transport error, but Slurm may take
# seconds more to end it on a loaded machine: the evidence rule (a transport
# error, a host without processes) must not call it hung before it ends.
confirm_periods = 30
`, filepath.Join(dir, "reports"), filepath.Join(dir, "run"), c.Client().BinDir, filepath.Join(dir, "no-such-scratch"), watchDir)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	nodes, addrs := meetingAddrs(c)
	hookURL, hooksOf := notifytest.Recorder(t)
	culprit := nodes[1]
	watch := fmt.Sprintf("%s --config %s --period %s --window %s --grace %s --accel-trace %s --webhook-url %s/hook "+
		"--port %d --munge-socket %s --node-addrs %s --record %s/rec-%%j-%%N.jsonl",
		bin, conf, e2ePeriod, e2eWindow, e2eGrace, spinningAccelTrace(t), hookURL, watchPort(13), c.MungeSocket(), strings.Join(addrs, ","), dir)
	jobDir := filepath.Join(dir, "job")
	if err := os.MkdirAll(jobDir, 0o755); err != nil {
		t.Fatal(err)
	}
	id := c.Sbatch(t, fmt.Sprintf(failingJob, jobDir, watch, culprit), "-w", strings.Join(nodes, ","), "-N", "3", "--job-name", "failing")
	defer func() {
		if t.Failed() {
			for i := range 3 {
				b, _ := os.ReadFile(filepath.Join(jobDir, fmt.Sprintf("watch-%d.err", i)))
				t.Logf("watch-%d.err:\n%s", i, b)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "rec-"+id+"-"+nodes[0]+".jsonl"))
			t.Logf("the coordinator's trace:\n%s", tail(string(b), 3000))
			t.Logf("the job's output:\n%s", c.JobOutput(id))
			t.Logf("cluster:\n%s", c.Dump(id))
		}
	}()
	c.WaitJob(t, id, 90*time.Second, "FAILED")
	noted := false
	deadline := time.Now().Add(60 * time.Second)
	for !noted && time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(dir, "reports", "*epilog*"+culprit+"*.json"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			noted = noted || strings.Contains(string(b), "named as culprit by vigil-watch")
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !noted {
		t.Errorf("%s's epilog report does not note the hang report naming it", culprit)
	}
	for _, node := range nodes {
		if n := c.WaitNode(t, node, 10*time.Second, func(n slurm.Node) bool { return !n.Drained() }); n.Drained() {
			t.Errorf("%s drained (%q): a hang report must not widen the epilog's checks", node, n.Reason)
		}
	}
	hooks := hooksOf(id)
	if len(hooks) != 1 || hooks[0].Body["event"] != hangreport.EventFailed || hooks[0].Body["host"] != nodes[0] {
		t.Fatalf("webhooks %v, want one of a failed job from the coordinator %s", hooks, nodes[0])
	}
	dg, _ := hooks[0].Body["digest"].(map[string]any)
	cs, _ := dg["culprits"].([]any)
	if dg["cause"] != "network" || dg["origin"] != "cluster" || len(cs) != 1 || cs[0].(map[string]any)["host"] != culprit {
		t.Errorf("digest %v, want network, the cluster's, naming %s", dg, culprit)
	}
	t.Logf("webhook: %v", hooks[0].Body["text"])
	reps, _ := hangreport.FindReports(watchDir, id)
	var hosts []string
	for _, p := range reps {
		r, err := hangreport.ReadReport(p)
		if err != nil || r.Event != hangreport.EventFailed || !r.Blames(culprit) {
			t.Errorf("report %s: %+v, %v; want a failed job's, blaming %s", p, r, err, culprit)
		}
		hosts = append(hosts, r.Host)
	}
	if slices.Sort(hosts); !slices.Equal(hosts, nodes) {
		t.Errorf("reports from %v, want one per node %v (the members have the coordinator's digest too)", hosts, nodes)
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
