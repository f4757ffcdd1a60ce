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
	"github.com/vigil-hpc/vigil/slurm/hostlist"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// requeueScript is a requeueable batch job that starts the watchers' step
// and, on its first run, a coupled training on every node that writes for
// about four seconds and then waits (ranks in a collective); restarted
// (SLURM_RESTART_COUNT), it trains healthily, writing every second on
// every node, until the test drops "done". Each run notes its nodes in
// runs; the watchers' output goes to watch-%n.* (first run) and
// watch-rN-%n.* (restart N).
// %[1]s: the job's directory; %[2]s: the watcher's command line.
const requeueScript = `#!/bin/sh
export D=%[1]s
R=${SLURM_RESTART_COUNT:-0}
echo "run $R on $SLURM_JOB_NODELIST" >> $D/runs
W=watch
[ "$R" = 0 ] || W=watch-r$R
srun --overlap --ntasks-per-node=1 --job-name=vigil-watch --output=$D/$W-%%n.out --error=$D/$W-%%n.err %[2]s &
P=$!
if [ "$R" = 0 ]; then
srun --overlap --ntasks-per-node=1 sh -c '
dd if=/dev/zero of=$D/data-$SLURM_NODEID bs=512k count=4 2>/dev/null
for i in 1 2 3; do sleep 1; dd if=/dev/zero of=$D/data-$SLURM_NODEID bs=512k count=4 2>/dev/null; done
while [ ! -e $D/done ]; do sleep 1; done' &
else
srun --overlap --ntasks-per-node=1 sh -c '
while [ ! -e $D/done ]; do dd if=/dev/zero of=$D/data-$SLURM_NODEID bs=512k count=4 2>/dev/null; sleep 1; done' &
fi
n=0
while [ ! -e $D/done ] && [ $n -lt 120 ]; do sleep 1; n=$((n+1)); done
scancel --signal=TERM $(squeue -h -s -j $SLURM_JOB_ID -o "%%i %%j" | awk '$2 == "vigil-watch" {print $1}')
wait $P
echo "exit $?" > $D/$W.rc
`

// TestE2ERequeueExclude: a 4-node job of a 5-node cluster, submitted with
// --requeue, its watchers run with --action requeue-exclude. On one node
// (not the coordinator's) the job's share goes dead: its watcher is killed
// while the training's ranks everywhere wait, as when a node dies. The
// coordinator's digest blames that node (rank-failed, StaleSamples: the
// cluster's), and the job is requeued without it: it runs again, restart
// 1, on four nodes that do not include it, its ExcNodeList names it, and
// the comment, the webhook and the report say "requeued without" it. The
// restarted run trains healthily and is not requeued again.
func TestE2ERequeueExclude(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testE2ERequeueExclude)
}

func testE2ERequeueExclude(t *testing.T, f slurmtest.Flavour) {
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	// A requeued job may start again once cred_expire has passed (120 s by
	// default); the scheduler looks every second.
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 5, Root: f.Root, CredExpire: 10,
		ExtraConf: []string{"SchedulerParameters=batch_sched_delay=0,sched_interval=1,bf_interval=1"}})
	if c.CgroupPlugin == "" {
		t.Fatalf("the test cluster runs without proctrack/cgroup: vigil-watch finds a job's processes through its cgroup")
	}
	nodes, addrs := meetingAddrs(c)
	hookURL, hooksOf := notifytest.Recorder(t)
	dir := filepath.Join(t.TempDir(), "job")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	watch := fmt.Sprintf("%s --action requeue-exclude --period %s --window %s --grace %s --accel-trace %s --webhook-url %s/hook --report-dir %s "+
		"--port %d --munge-socket %s --node-addrs %s --record %s/rec-%%j-%%N.jsonl",
		bin, e2ePeriod, e2eWindow, e2eGrace, spinningAccelTrace(t), hookURL, dir, watchPort(27), c.MungeSocket(), strings.Join(addrs, ","), dir)
	start := time.Now()
	id := c.Sbatch(t, fmt.Sprintf(requeueScript, dir, watch), "-N", "4", "--requeue", "--job-name", "requeue-exclude")
	defer func() {
		os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(dir, "watch*.err"))
			for _, f := range logs {
				b, _ := os.ReadFile(f)
				t.Logf("%s:\n%s", filepath.Base(f), tail(string(b), 4000))
			}
			runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
			t.Logf("runs:\n%s", runs)
			t.Logf("cluster:\n%s", c.Dump(id))
		}
	}()
	c.WaitJob(t, id, 20*time.Second, "RUNNING")
	first := c.JobInfo(t, id)
	ran, err := hostlist.Expand(first.NodeList)
	if err != nil || len(ran) != 4 || ran[0] != nodes[0] {
		t.Fatalf("the job runs on %q (%v), want four nodes from %s", first.NodeList, err, nodes[0])
	}
	culprit := ran[2] // not the coordinator (the first node)

	// The culprit's share of the job goes dead: its watcher falls silent.
	pid := killWatcher(t, c, bin, id, culprit, dir, 30*time.Second)
	t.Logf("killed the watcher of job %s on %s (pid %d) %.1fs after submission", id, culprit, pid, time.Since(start).Seconds())

	// The coordinator's digest, then the job running again, restart 1.
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) && len(hooksOf(id)) == 0 {
		time.Sleep(200 * time.Millisecond)
	}
	hooks := hooksOf(id)
	if len(hooks) == 0 {
		t.Fatalf("no webhook for job %s within 45s", id)
	}
	hungAt := hooks[0].At
	t.Logf("webhook %.1fs after submission from %v: %v", hungAt.Sub(start).Seconds(), hooks[0].Body["host"], hooks[0].Body["text"])
	var again slurm.JobInfo
	deadline = time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		again = c.JobInfo(t, id)
		if again.State == "RUNNING" && again.Restarts > 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if again.State != "RUNNING" || again.Restarts == 0 {
		t.Fatalf("job %s is %s (restarts %d, reason %s) 60s after the hang's webhook, want running again", id, again.State, again.Restarts, again.Reason)
	}
	t.Logf("running again %.1fs after the hang's webhook on %s (ExcNodeList=%s)", time.Since(hungAt).Seconds(), again.NodeList, again.Fields["ExcNodeList"])

	// The restart trains healthily: judged for more than a window after
	// its grace, it is neither reported nor requeued again.
	time.Sleep(e2eGrace + e2eWindow + 3*e2ePeriod)
	later := c.JobInfo(t, id)
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := c.WaitJob(t, id, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"); st != "COMPLETED" {
		t.Errorf("job %s ended %s, want COMPLETED", id, st)
	}
	t.Logf("the test's job ran %.1fs", time.Since(start).Seconds())

	now, err := hostlist.Expand(again.NodeList)
	if err != nil || len(now) != 4 || slices.Contains(now, culprit) {
		t.Errorf("restarted on %q (%v), want four nodes without %s", again.NodeList, err, culprit)
	}
	if exc, err := again.ExcludedNodes(); err != nil || !slices.Equal(exc, []string{culprit}) {
		t.Errorf("ExcNodeList %q (%v), want %s", again.Fields["ExcNodeList"], err, culprit)
	}
	if again.Restarts != 1 || later.Restarts != 1 || later.State != "RUNNING" {
		t.Errorf("restarts %d, then %d (%s); want 1, and the restart left running", again.Restarts, later.Restarts, later.State)
	}
	if want := "— requeued without " + culprit; !strings.Contains(again.Comment, want) || !strings.Contains(again.Comment, "rank-failed: "+culprit+" (StaleSamples)") {
		t.Errorf("comment %q, want the digest naming %s (StaleSamples) and %q", again.Comment, culprit, want)
	}
	hooks = hooksOf(id)
	if len(hooks) != 1 {
		t.Errorf("webhooks %v, want exactly one: the restart is healthy", hooks)
	}
	b := hooks[0].Body
	dg, _ := b["digest"].(map[string]any)
	cs, _ := dg["culprits"].([]any)
	if b["host"] != nodes[0] || dg["cause"] != "rank-failed" || dg["origin"] != "cluster" || len(cs) != 1 || cs[0].(map[string]any)["host"] != culprit {
		t.Errorf("webhook from %v with digest %v, want rank-failed, the cluster's, blaming %s, from %s", b["host"], dg, culprit, nodes[0])
	}
	if text := fmt.Sprint(b["text"]); !strings.HasSuffix(text, " Requeued without "+culprit+".") {
		t.Errorf("webhook text %q does not say the job is requeued without %s", text, culprit)
	}
	if acts := fmt.Sprint(b["actions"]); !strings.Contains(acts, "requeue-exclude: requeued without "+culprit) {
		t.Errorf("webhook actions %s", acts)
	}
	// The first run's reports (the epilog's evidence) outlive the requeue:
	// one per watcher still alive, each blaming the culprit only.
	reps, _ := hangreport.FindReports(dir, id)
	var hosts []string
	for _, p := range reps {
		r, err := hangreport.ReadReport(p)
		if err != nil || !r.Blames(culprit) || slices.ContainsFunc(nodes, func(n string) bool { return n != culprit && r.Blames(n) }) {
			t.Errorf("report %s: %+v, %v; want one blaming %s only", p, r, err, culprit)
		}
		hosts = append(hosts, r.Host)
	}
	slices.Sort(hosts)
	if want := slices.DeleteFunc(slices.Clone(ran), func(n string) bool { return n == culprit }); !slices.Equal(hosts, want) {
		t.Errorf("reports from %v, want one from each watcher of the first run still alive %v", hosts, want)
	}
	// The coordinator ran the three steps to the end, its step being
	// signalled by the first.
	coord, _ := os.ReadFile(filepath.Join(dir, "watch-0.err"))
	for _, l := range strings.Split(string(coord), "\n") {
		if strings.Contains(l, `msg="requeueing`) || strings.Contains(l, "is requeued") {
			t.Logf("coordinator: %s", l)
		}
	}
	if !strings.Contains(string(coord), "the hung job is requeued without "+culprit) {
		t.Errorf("the coordinator's log does not say the job is requeued without %s", culprit)
	}
	runs, _ := os.ReadFile(filepath.Join(dir, "runs"))
	if lines := strings.Split(strings.TrimSpace(string(runs)), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "run 1 on ") {
		t.Errorf("runs:\n%s\nwant the first and one restart", runs)
	}
}
