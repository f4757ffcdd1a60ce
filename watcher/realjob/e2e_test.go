package realjob

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

var recordTo = flag.String("record", "", "copy each job's output, events and traces to DIR/FAULT (refresh testdata/fixtures/VERSION)")

// jobScript starts the watcher the way docs/watch.md tells users (its own
// step, --overlap, one task per node, VIGIL_HANG_DETECT_TIME for the
// window), finds the master's address as Slurm scripts do, and launches
// the training. USE_LIBUV=0: Debian 13's PyTorch 2.6 is built without
// libuv, which its TCPStore asks for by default ("use_libuv was requested
// but PyTorch was build without libuv support"); 1.13 ignores it.
// %[1]s: the job's directory; %[2]s: the window; %[3]s: the nodes' gloo
// addresses; %[4]d: the master port; %[5]s: the line that starts the
// watchers (watchStep; none where the SPANK plugin starts them); %[6]s:
// the training's launch.
const jobScript = `#!/bin/sh
export D=%[1]s FAULT_DIR=%[1]s
export VIGIL_HANG_DETECT_TIME=%[2]s
export GLOO_NODE_ADDRS=%[3]s MASTER_PORT=%[4]d
export USE_LIBUV=0
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR=$(scontrol show node -o "$first" | sed 's/.* NodeAddr=\([^ ]*\).*/\1/')
%[5]s
%[6]s
rc=$?
echo "training exit $rc"
exit $rc
`

// watchStep is the batch script's line that starts the watchers, one task
// per node in a step of their own, as docs/watch.md tells users.
func watchStep(watch string) string {
	return "srun --overlap --ntasks-per-node=1 --output=$D/watch-%n.out --error=$D/watch-%n.err " + watch + " &"
}

// launch is the training's command line: srun with one task per rank, or
// srun with one torchrun per node (torchrun: its command, torchrunCmd).
func (f fault) command(dir, torchrun string) string {
	train := fmt.Sprintf("%s/train.py --data %s/data --ckpt %s/ckpt.pt --fault-rank %d %s", dir, dir, dir, f.rankOn(), f.args)
	if f.launch == "srun" {
		return fmt.Sprintf("srun --ntasks-per-node=%d %s %s", f.per, python, train)
	}
	return fmt.Sprintf(`srun --ntasks-per-node=1 sh -c 'exec %s --nnodes=$SLURM_JOB_NUM_NODES --nproc_per_node=%d `+
		`--node_rank=$SLURM_NODEID --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT --redirects 1 --tee 1 --log_dir %s/torchrun %s'`, torchrun, f.per, dir, train)
}

// torchrunCmd is torchrun's command for a job whose directory is dir:
// Debian 12's /usr/bin/torchrun, or, where PyTorch is built without
// libuv (Debian 13), torchrun through testdata/nolibuv.py, which gives
// its stores the backend the build has (the same torch.distributed.run).
func torchrunCmd(dir string, noLibuv bool) string {
	if noLibuv {
		return python + " " + dir + "/nolibuv.py"
	}
	return "/usr/bin/torchrun"
}

// copyTestdata copies testdata's files names into dir.
func copyTestdata(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		src, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), src, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

type job struct {
	fault
	id, dir string
	hosts   []string // the job's nodes in Slurm's order (SLURM_NODEID)
	logs    string   // the SPANK plugin's watchers' logs (a glob), beside the job's output
	blocked bool     // the fault injected from outside (block, freeze) is in
	undo    func()
	state   string    // the job's state once it ended (Slurm forgets ended jobs after MinJobAge)
	ended   time.Time // when it ended, Slurm's EndTime (to the second); zero when not read
}

// jobState is the job's state, remembered once it has ended.
func jobState(t *testing.T, c *slurmtest.Cluster, j *job) string {
	if j.state != "" {
		return j.state
	}
	return j.observe(c.JobInfo(t, j.id))
}

// observe returns the job's state in info, remembering it once it has ended.
func (j *job) observe(info slurm.JobInfo) string {
	st := info.State
	switch st {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY":
		j.state = st
		j.ended, _ = time.ParseInLocation("2006-01-02T15:04:05", info.Fields["EndTime"], time.Local)
	}
	return st
}

func TestE2ERealPyTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and real PyTorch jobs")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	// Two runs at a time on a 2-core machine (-parallel): three clusters
	// of training jobs at once starve them of CPU and memory until jobs
	// stay pending and a straggler looks hung (measured). The second run
	// starts its cluster once the first run's jobs train (or 5 minutes
	// at most): both clusters' 30 slurmds and 30 PyTorch ranks starting
	// at once kept a slurmctld from answering scontrol within 30 s, and
	// the prolog tests beside them waited a minute for a healthy job.
	first := make(chan struct{})
	var once sync.Once
	started := func() { once.Do(func() { close(first) }) }
	for i, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			if i > 0 {
				select {
				case <-first:
				case <-time.After(5 * time.Minute):
				}
			} else {
				defer started()
			}
			fs := r.faults()
			runFaults(t, bin, r, slurmtest.Options{Nodes: 3 * len(fs), NodeAddrs: true, Cgroup: r.cgroup, Root: r.root()}, fs, started)
		})
	}
}

// A run is one cluster the table runs on; the two runs go side by side.
// Both are the deployed path (auto): the SPANK plugin starts the watchers
// (watch=auto) with the shipped [watch] settings, the jobs ask for their
// webhook and window with sbatch's --vigil-webhook and --vigil-hang-time,
// and they train at a pace that gives the shipped pulse its beats (5 polls
// at 30 s) before the faults (autoStepSleep). Between them they cover
// both Slurms, both cgroup versions and both PyTorches: Debian 12's
// PyTorch 1.13 on its Slurm 22.05 under cgroup v2, and Debian 13's PyTorch
// 2.6 on its Slurm 24.11 (the Slurm root, whose headers the plugin is
// built against) under cgroup v1. Debian 13's PyTorch is built without
// libuv, which torchrun's stores ask for whatever USE_LIBUV says: that
// run's torchrun goes through testdata/nolibuv.py (noLibuv).
//
// A run with auto false starts its watchers in the batch script
// (watchStep) with a 10 s period and a 30 s pulse floor (watchConfig), as
// docs/watch.md tells sites without the plugin; TestE2ETorchrunRankMap and
// TestE2ENVMLXIDUnhealable run that way.
type run struct {
	name    string
	cgroup  slurmtest.CgroupMode
	inRoot  bool
	noLibuv bool
	auto    bool
}

var runs = []run{{"cgroup-v2-watch-auto", slurmtest.CgroupV2, false, false, true},
	{"slurm24.11-cgroup-v1-watch-auto", slurmtest.CgroupV1, true, true, true}}

// batchRuns start their watchers in the batch script: PyTorch 1.13 on
// Slurm 22.05 (cgroup v1), 2.6 on 24.11 (cgroup v2).
var batchRuns = []run{{"cgroup-v1", slurmtest.CgroupV1, false, false, false},
	{"slurm24.11-cgroup-v2", slurmtest.CgroupV2, true, true, false}}

// faults are the run's rows: every row, but row i (a node cut off
// entirely) only where the plugin starts the watchers.
func (r run) faults() []fault {
	return slices.DeleteFunc(slices.Clone(faults), func(f fault) bool { return f.cutOff && !r.auto })
}

// include is where the Slurm that loads the SPANK plugin keeps its
// headers: the root's for Slurm 24.11.
func (r run) include() string {
	return filepath.Join("/", r.root(), "usr", "include")
}

func (r run) root() string {
	if r.inRoot {
		return slurmtest.SlurmRoot()
	}
	return ""
}

// runFaults runs the table's faults on one cluster; started is called once
// every job trains (its output shows a step).
func runFaults(t *testing.T, bin string, r run, o slurmtest.Options, faults []fault, started func()) {
	url, hooksOf := notifytest.Recorder(t)
	cfg := filepath.Join(jobsDir(t), "vigil.toml")
	conf := watchConfig
	if r.auto {
		// [watch]: the shipped settings, and a trace of each watcher in the
		// job's directory (record, relative to the job's working directory).
		conf = fmt.Sprintf("[watch]\nrecord = \"rec-%%j-%%N.jsonl\"\n[policy]\nnotify = [\"webhook\"]\nwebhooks = [%q]\n", url+"/")
		o.PrologFlags = "Alloc,Contain"
		o.PlugStack = fmt.Sprintf("required %s config=%s watcher=%s watch=auto state_dir=%s\n",
			buildSpank(t, jobsDir(t), r.include()), cfg, bin, filepath.Join(jobsDir(t), "state"))
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, o)
	if r.auto {
		c.Restart(t) // slurmd runs slurm_spank_job_prolog only after a restart that loaded the plugin
	}
	if c.CgroupPlugin == "" {
		t.Fatalf("the test cluster runs without proctrack/cgroup: vigil-watch finds a job's processes through its cgroup")
	}
	version := torchVersion(t, c, o.Root)
	t.Logf("PyTorch %s, Slurm %s, %s", version, c.Version, c.CgroupPlugin)
	var addrs []string
	for i, n := range c.Nodes {
		addrs = append(addrs, n+"="+c.NodeAddrs[i])
	}
	jobs := make([]*job, len(faults))
	for i, f := range faults {
		w := watching{step: watchStep(bin + " --config " + cfg + " --period " + watchPeriod + " --webhook-url " + url + " --record $D/rec-%j-%N.jsonl")}
		if r.auto {
			f = f.atShippedSettings()
			w = watching{sbatch: []string{"--vigil-webhook=" + url + "/hook"}}
			if f.window != faultWindow {
				w.sbatch = append(w.sbatch, "--vigil-hang-time="+f.window)
			}
		}
		jobs[i] = submit(t, c, f, c.Nodes[3*i:3*i+3], strings.Join(addrs, ","), w, r.noLibuv)
	}
	start := time.Now()
	defer func() {
		for _, j := range jobs {
			if j.undo != nil {
				j.undo()
			}
			c.Command(t, "scancel", j.id)
		}
	}()
	waitAll(t, c, jobs, hooksOf, r.auto, started)
	t.Logf("all jobs settled %.0fs after submission", time.Since(start).Seconds())
	states := map[string]string{}
	undone := map[string][]notifytest.Hook{} // a job's webhooks before its fault was undone (a thawed job recovers)
	for _, j := range jobs {
		states[j.id] = jobState(t, c, j)
		if j.state == "" {
			states[j.id+"/comment"] = c.JobInfo(t, j.id).Comment
		}
		if j.undo != nil {
			undone[j.id] = hooksOf(j.id)
		}
	}
	for _, j := range jobs {
		c.Command(t, "scancel", j.id)
		if j.undo != nil { // then thawed: a frozen step does not end
			j.undo()
		}
	}
	for _, j := range jobs {
		if j.state == "" {
			c.WaitJob(t, j.id, 60*time.Second, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")
		}
	}
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			hooks := hooksOf(j.id)
			if j.undo != nil {
				hooks = undone[j.id]
			}
			check(t, c, j, states[j.id], states[j.id+"/comment"], hooks)
			if *recordTo != "" {
				run := "torch" + version + "-slurm" + c.Version + "-" + strings.TrimPrefix(c.CgroupPlugin, "cgroup/")
				if r.auto {
					run += "-watch-auto"
				}
				record(t, c, j, filepath.Join(*recordTo, run, j.name), version)
			}
		})
	}
}

// watching is how a job's watchers start: a line of the batch script
// (step), or the SPANK plugin, with the job's own options (sbatch).
type watching struct {
	step   string
	sbatch []string
}

func submit(t *testing.T, c *slurmtest.Cluster, f fault, nodes []string, addrs string, w watching, noLibuv bool) *job {
	t.Helper()
	dir := filepath.Join(jobsDir(t), f.name)
	for _, d := range []string{dir, filepath.Join(dir, "data")} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	copyTestdata(t, dir, "train.py", "nolibuv.py")
	if strings.Contains(f.args, "--fault data") { // the input shard of the fault rank's epoch dataEpoch
		if err := syscall.Mkfifo(filepath.Join(dir, "data", fmt.Sprintf("shard-%d-%d", f.rankOn(), dataEpoch)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(jobScript, dir, f.window, addrs, slurmtest.FreePort(t, slurmtest.JobPorts), w.step, f.command(dir, torchrunCmd(dir, noLibuv)))
	tasks := f.per
	if f.launch == "torchrun" {
		tasks = 1
	}
	id := c.Sbatch(t, script, append([]string{"--chdir=" + dir, "-N", "3", "--mem=2000", fmt.Sprintf("--ntasks-per-node=%d", tasks),
		"-w", strings.Join(nodes, ","), "--job-name", f.name}, w.sbatch...)...)
	j := &job{fault: f, id: id, dir: dir}
	if f.auto {
		j.logs = filepath.Join(c.Dir, "jobs", "vigil-watch-"+id+"-*.log") // watch_log's default, %o/vigil-watch-%j-%n.log
	}
	return j
}

// waitAll polls the jobs until each has settled: ended, or given its
// digest, or past its fault by settle(); the network fault is injected
// here once its job trains.
func waitAll(t *testing.T, c *slurmtest.Cluster, jobs []*job, hooksOf func(string) []notifytest.Hook, auto bool, started func()) {
	limit := 9 * time.Minute
	if auto {
		limit = 15 * time.Minute
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		done := 0
		infos := c.Jobs(t) // one scontrol a round, not one per job
		for _, j := range jobs {
			info, ok := infos[j.id]
			if j.state == "" {
				if !ok {
					info = c.JobInfo(t, j.id)
				}
				j.observe(info)
			}
			if j.hosts == nil && info.NodeList != "" {
				out, _ := c.Command(t, "scontrol", "show", "hostnames", info.NodeList)
				j.hosts = strings.Fields(out)
			}
			if j.block && !j.blocked && j.hosts != nil && strings.Contains(c.JobOutput(j.id), fmt.Sprintf("step %d/", blockAt)) {
				i := slices.Index(c.Nodes, j.hosts[j.node])
				if j.cutOff {
					j.undo = blockNode(t, c.NodeAddrs[i], 0, nil) // every port
				} else {
					j.undo = blockNode(t, c.NodeAddrs[i], c.NodePorts[i], watchcfg.Default().JobPorts(j.id)) // vigil-watch's default ports
				}
				j.blocked = true
				writeFaultTime(t, j.dir, time.Now())
				t.Logf("job %s: blocked %s (%s)", j.id, j.hosts[j.node], c.NodeAddrs[i])
			}
			if j.freeze && !j.blocked && j.hosts != nil && strings.Contains(c.JobOutput(j.id), fmt.Sprintf("step %d/", blockAt)) {
				if pid, ok := rankPID(j.dir, j.rankOn()); ok {
					j.undo = freezeStep(t, pid)
					j.blocked = true
					writeFaultTime(t, j.dir, time.Now())
					t.Logf("job %s: froze rank %d's step on %s", j.id, j.rankOn(), j.hosts[j.node])
				}
			}
			if settled(j, hooksOf) {
				done++
			}
		}
		if trains(c, jobs) {
			started()
		}
		if done == len(jobs) {
			return
		}
		time.Sleep(time.Second)
	}
	var left []string
	for _, j := range jobs {
		if !settled(j, hooksOf) {
			left = append(left, j.name)
		}
	}
	t.Errorf("the jobs did not settle within %v: %v", limit, left)
}

// settled reports whether the job ended (as last observed), or its fault
// has had its digest or its time.
func settled(j *job, hooksOf func(string) []notifytest.Hook) bool {
	if j.state != "" {
		return true
	}
	at, ok := faultTime(j.dir)
	if !ok {
		return false
	}
	for _, h := range hooksOf(j.id) {
		if h.Body["digest"] != nil && time.Since(h.At) > 20*time.Second {
			return true // and a second one would have come by now
		}
	}
	return time.Since(at) > j.settle()
}

// trains reports whether every job's output shows a step (PyTorch is up).
func trains(c *slurmtest.Cluster, jobs []*job) bool {
	for _, j := range jobs {
		if !strings.Contains(c.JobOutput(j.id), " step ") {
			return false
		}
	}
	return true
}

// jobsDir holds the jobs' directories; it is kept, and named, when the
// test fails.
func jobsDir(t *testing.T) string {
	t.Helper()
	jobsMu.Lock()
	defer jobsMu.Unlock()
	if d, ok := jobsDirs[t.Name()]; ok {
		return d
	}
	d, err := os.MkdirTemp("/tmp", "vrj-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o755)
	jobsDirs[t.Name()] = d
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the jobs' directories are kept in %s", d)
			return
		}
		os.RemoveAll(d)
	})
	return d
}

var (
	jobsMu   sync.Mutex
	jobsDirs = map[string]string{}
)
