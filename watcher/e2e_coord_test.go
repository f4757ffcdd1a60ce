package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
	"github.com/vigil-hpc/vigil/watcher/hangview/pagetest"
)

// nodeTraining is a training step on every node of the job that writes for
// about four seconds, then runs %[1]s on the node named %[2]s, and waits
// (as ranks stuck in a collective do) until the test is done.
const nodeTraining = `srun --overlap --ntasks-per-node=1 sh -c '
dd if=/dev/zero of=$D/data-$SLURM_NODEID bs=512k count=4 2>/dev/null
for i in 1 2 3; do sleep 1; dd if=/dev/zero of=$D/data-$SLURM_NODEID bs=512k count=4 2>/dev/null; done
if [ "$SLURMD_NODENAME" = "%[2]s" ]; then %[1]s; fi
while [ ! -e $D/done ]; do sleep 1; done' &`

// TestE2ECoordinatedDigest runs three 3-node jobs whose watchers meet
// (the cluster's private munged, one loopback address per node): a rank
// that exits on one node, an NCCL transport error printed by one node,
// and a job whose coordinator's watcher is killed. Each job gets one
// digest, announced by one webhook from its coordinator.
func TestE2ECoordinatedDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3})
	if c.CgroupPlugin == "" {
		t.Fatalf("the test cluster runs without proctrack/cgroup: vigil-watch finds a job's processes through its cgroup")
	}
	nodes, addrs := meetingAddrs(c)

	hookURL, hooksOf := notifytest.Recorder(t)

	accel := spinningAccelTrace(t)
	port := watchPort(0)
	submit := func(name, training string) (id, dir string) {
		dir = filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		watch := fmt.Sprintf("%s --period %s --window %s --grace %s --accel-trace %s --webhook-url %s/hook --report-dir %s "+
			"--port %d --munge-socket %s --node-addrs %s --record %s/rec-%%j-%%N.jsonl",
			bin, e2ePeriod, e2eWindow, e2eGrace, accel, hookURL, dir, port, c.MungeSocket(), strings.Join(addrs, ","), dir)
		id = c.Sbatch(t, fmt.Sprintf(e2eScript, dir, watch, training), "-w", strings.Join(nodes, ","), "-N", "3", "--job-name", name)
		return id, dir
	}
	ncclLine := `echo "$SLURMD_NODENAME:4100:4177 [0] NCCL WARN NET/IB : Got completion from peer 10.9.9.9<45123> with status=12 opcode=0 len=0 vendor err 129"`
	rankID, rankDir := submit("rank-failed", fmt.Sprintf(nodeTraining, "exit 0", nodes[2]))
	netID, netDir := submit("network", fmt.Sprintf(nodeTraining, ncclLine, nodes[1]))
	takeID, takeDir := submit("takeover", fmt.Sprintf(nodeTraining, "true", "none"))
	dirs := []string{rankDir, netDir, takeDir}
	start := time.Now()
	defer func() {
		for _, d := range dirs {
			os.WriteFile(filepath.Join(d, "done"), nil, 0o644)
		}
		if t.Failed() {
			for _, d := range dirs {
				for i := range 3 {
					b, _ := os.ReadFile(filepath.Join(d, "watch-"+strconv.Itoa(i)+".err"))
					t.Logf("%s/watch-%d.err:\n%s", d, i, b)
				}
			}
		}
	}()

	// Kill the takeover job's coordinator's watcher once the watchers met.
	killed := killWatcher(t, c, bin, takeID, nodes[0], takeDir, 30*time.Second)
	t.Logf("killed the coordinator's watcher of job %s on %s (pid %d) %.1fs after submission", takeID, nodes[0], killed, time.Since(start).Seconds())

	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && (len(hooksOf(rankID)) == 0 || len(hooksOf(netID)) == 0 || len(hooksOf(takeID)) == 0) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(4 * e2ePeriod) // a second notification, if there were one, would come by now
	// What the hung jobs announced, before the test ends their steps: the
	// teardown that follows (every node's processes leaving) is the job's
	// end, not the hang's.
	comments := map[string]string{}
	hung := map[string][]notifytest.Hook{}
	for _, id := range []string{rankID, netID, takeID} {
		comments[id] = c.JobInfo(t, id).Comment
		hung[id] = hooksOf(id)
	}
	reps, _ := filepath.Glob(filepath.Join(rankDir, "vigil-hang-"+rankID+"-*.json"))
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{rankID, netID, takeID} {
		c.WaitJob(t, id, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")
	}
	t.Logf("jobs ran %.1fs", time.Since(start).Seconds())
	for _, id := range []string{rankID, netID, takeID} {
		for _, h := range hooksOf(id) {
			t.Logf("job %s webhook %.1fs after submission from %v: %v", id, h.At.Sub(start).Seconds(), h.Body["host"], h.Body["text"])
		}
		t.Logf("job %s comment: %q", id, comments[id])
	}

	check := func(id, coordinator, cause, culprit, reason string) {
		t.Helper()
		hh := hung[id]
		if len(hh) != 1 {
			t.Errorf("job %s: %d webhooks, want exactly 1: %v", id, len(hh), hh)
			return
		}
		b := hh[0].Body
		dg, _ := b["digest"].(map[string]any)
		if b["host"] != coordinator || dg == nil || dg["cause"] != cause {
			t.Errorf("job %s: webhook from %v with digest %v, want one from %s with cause %s", id, b["host"], dg, coordinator, cause)
			return
		}
		if culprit != "" {
			cs, _ := dg["culprits"].([]any)
			if len(cs) != 1 || cs[0].(map[string]any)["host"] != culprit || cs[0].(map[string]any)["reason"] != reason {
				t.Errorf("job %s: culprits %v, want %s (%s)", id, cs, culprit, reason)
			}
			if want := fmt.Sprintf(", %s: %s (%s)", cause, culprit, reason); !strings.Contains(comments[id], want) {
				t.Errorf("job %s: comment %q lacks %q", id, comments[id], want)
			}
		}
	}
	check(rankID, nodes[0], "rank-failed", nodes[2], "ProcessesGone")
	check(netID, nodes[0], "network", nodes[1], "TransportErrors")
	hh := hung[takeID]
	if len(hh) != 1 || hh[0].Body["host"] != nodes[1] || hh[0].Body["digest"] == nil {
		t.Errorf("job %s (coordinator killed): webhooks %v, want one digest from %s, the new coordinator", takeID, hh, nodes[1])
	}
	errs, _ := os.ReadFile(filepath.Join(takeDir, "watch-1.err"))
	if !bytes.Contains(errs, []byte("the job's coordinator is lost")) || !bytes.Contains(errs, []byte("this watcher coordinates the job's watchers")) {
		t.Errorf("the takeover is not in the new coordinator's log:\n%s", errs)
	}
	// Every node of the rank-failed job recorded the digest in a report
	// that blames the culprit only, for the epilog of each node.
	if len(reps) != 3 {
		t.Errorf("reports of the rank-failed job: %v, want one per node (the digest's)", reps)
	}
	checkLivePage(t, reps, nodes, nodes[2], hung[rankID])
}

// meetingAddrs are c's nodes in name order and the --node-addrs entries
// that give each its own loopback address (127.0.1.1, ...).
func meetingAddrs(c *slurmtest.Cluster) (nodes, addrs []string) {
	nodes = slices.Clone(c.Nodes)
	slices.Sort(nodes)
	for i, n := range nodes {
		addrs = append(addrs, fmt.Sprintf("%s=127.0.1.%d", n, i+1))
	}
	return nodes, addrs
}

// checkLivePage checks the HTML pages of a coordinated job's hang reports:
// each report names its page, next to it; the coordinator's page (the
// webhook names it) renders in headless chromium with one chart per node
// of the job, each with its readings, and the culprit highlighted.
func checkLivePage(t *testing.T, reps, nodes []string, culprit string, hooks []notifytest.Hook) {
	t.Helper()
	var coordPage string
	for _, path := range reps {
		r, err := hangreport.ReadReport(path)
		if err != nil {
			t.Errorf("report %s: %v", path, err)
			continue
		}
		if want := strings.TrimSuffix(path, ".json") + ".html"; r.HTML != want {
			t.Errorf("report %s names the page %q, want %q", path, r.HTML, want)
			continue
		}
		if _, err := os.Stat(r.HTML); err != nil {
			t.Errorf("report %s: its page: %v", path, err)
		}
		if r.Host == nodes[0] {
			coordPage = r.HTML
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(reps[0]), ".*.tmp*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
	if len(hooks) != 1 || coordPage == "" || hooks[0].Body["html"] != coordPage {
		t.Fatalf("the coordinator's page %q; webhooks %v: want one naming it", coordPage, hooks)
	}
	dom := pagetest.DOM(t, coordPage)
	if got := pagetest.Charts(dom); !slices.Equal(got, nodes) {
		t.Errorf("the coordinator's page (in chromium) charts %v, want one per node %v", got, nodes)
	}
	for _, n := range nodes {
		if lines := pagetest.Series(dom)[n]; lines < 2 {
			t.Errorf("the coordinator's page draws %d lines for %s, want its readings", lines, n)
		}
	}
	if got := pagetest.Culprits(dom); !slices.Equal(got, []string{culprit}) {
		t.Errorf("the coordinator's page highlights %v, want %s", got, culprit)
	}
	if !strings.Contains(dom, "rank-failed") || !strings.Contains(dom, "vigil hang report") {
		t.Errorf("the coordinator's page lacks the digest or its title:\n%.2000s", dom)
	}
}

// killWatcher kills with SIGKILL the watcher of job on node once the
// job's other watchers have joined its meeting (their logs in dir say so)
// and sent a few summaries. The watcher is the step's task: a process
// running bin whose parent is slurmstepd and whose environment names job
// and node (a child the watcher forks to run scontrol shares both for an
// instant, and is not it).
func killWatcher(t *testing.T, c *slurmtest.Cluster, bin, job, node, dir string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	joined := func() bool {
		for _, i := range []string{"1", "2"} {
			b, _ := os.ReadFile(filepath.Join(dir, "watch-"+i+".err"))
			if !bytes.Contains(b, []byte("this watcher reports to the job's coordinator")) {
				return false
			}
		}
		return true
	}
	for time.Now().Before(deadline) {
		if pid := findWatcher(bin, job, node); pid != 0 && joined() {
			time.Sleep(2 * e2ePeriod) // a few summaries reach the coordinator
			if findWatcher(bin, job, node) != pid {
				t.Fatalf("the watcher of job %s on %s (pid %d) ended before it was killed; job state %s:\n%s",
					job, node, pid, c.JobInfo(t, job).State, c.Dump(job))
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill %d: %v", pid, err)
			}
			return pid
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no watcher of job %s on %s whose peers joined it within %v:\n%s", job, node, within, c.Dump(job))
	return 0
}

// findWatcher returns the pid of the watcher task of job on node, or 0:
// the process running bin (its exe or, from a Debian root, its argv[0])
// whose parent is slurmstepd and whose environment names job and node.
func findWatcher(bin, job, node string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// A cluster run from a Debian root (slurmtest.Options.Root) runs
		// the watcher in its own mount namespace and chroot, where exe
		// does not read as bin: its argv[0] does.
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); exe != bin && argv0 != bin {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		vars := strings.Split(string(env), "\x00")
		if !slices.Contains(vars, "SLURM_JOB_ID="+job) || !slices.Contains(vars, "SLURMD_NODENAME="+node) {
			continue
		}
		if parent(pid) != "slurmstepd" {
			continue
		}
		return pid
	}
	return 0
}

// parent returns the command name of pid's parent ("" when unknown).
func parent(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return ""
	}
	comm, _ := os.ReadFile(filepath.Join("/proc", f[1], "comm"))
	return strings.TrimSpace(string(comm))
}
