package realjob

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
	"github.com/vigil-hpc/vigil/watcher/sample/nvmlfake"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// xidWithin bounds the time from a fault XID that cannot heal to the
// digest's webhook, at the shipped settings (period 30 s): the watcher
// reads its device library's events every loop.EarlyCheck (2 s) and
// samples at once on one that cannot heal; the coordinator gives the
// digest at its next round.
const xidWithin = 30 * time.Second

// xidWatch is how long after the XID the test waits for the digest: the
// bound and a third of a period of slack.
const xidWatch = xidWithin + 10*time.Second

// xidFault is the row: the job trains with no fault of its own; once it
// trains and node 1's watcher follows its GPU's events, the test stops
// node 1's rank (SIGSTOP, as a rank on a GPU that fell off the bus stops
// making progress) and reports XID 79 on that node's GPU through the fake
// NVML's event set.
//
// The answer: one digest, bad-device, node 1, within xidWithin. (The
// coordinator reads the job's output at the same round as the XID, and
// the progress lines printed just before it, stamped when read, once
// cleared the evidence: watcher/hang's wentOnAfter now keeps evidence that
// cannot heal against lines read within a period of it.)
var xidFault = fault{name: "x-xid79", launch: "srun", per: 1, args: "", window: faultWindow, node: 1,
	want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "bad-device", culprits: []int{1}, within: xidWithin}}

// xidAt is the training step after which the XID is injected: a few
// seconds of progress lines first.
const xidAt = 100

// TestE2ENVMLXIDUnhealable runs a real PyTorch job (gloo, one rank on each
// of 3 nodes) whose watchers, with the shipped [watch] settings, sample
// their node's GPU through a fake libnvidia-ml.so.1 (LD_LIBRARY_PATH of
// the watchers' step): go-nvml loads it as it loads the driver's, and the
// watchers follow its XID events. XID 79 (fallen off the bus: the GPU
// must be reset) on node 1's GPU, with node 1's rank stopped, must give
// one digest, cause bad-device, naming node 1, within 30 s of the XID.
func TestE2ENVMLXIDUnhealable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and a real PyTorch job")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	lib := nvmlfake.Build(t)
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, NodeAddrs: true})
	if c.CgroupPlugin == "" {
		t.Fatalf("the test cluster runs without proctrack/cgroup: vigil-watch finds a job's processes through its cgroup")
	}
	t.Logf("PyTorch %s, Slurm %s, %s", torchVersion(t, c, ""), c.Version, c.CgroupPlugin)
	url, hooksOf := notifytest.Recorder(t)
	var addrs []string
	gpus := map[string]nvmlfake.Dir{}
	for i, n := range c.Nodes {
		addrs = append(addrs, n+"="+c.NodeAddrs[i])
		gpus[n] = nvmlfake.NewDir(t, filepath.Join(jobsDir(t), "nvml", n), 1)
		gpus[n].Util(t, 0, 90)
	}
	watch := fmt.Sprintf(`sh -c '%s=%s/nvml/$SLURMD_NODENAME LD_LIBRARY_PATH=%s exec %s --webhook-url %s --record $D/rec-%%j-%%N.jsonl'`,
		nvmlfake.EnvDir, jobsDir(t), lib, bin, url)
	j := submit(t, c, xidFault, c.Nodes, strings.Join(addrs, ","), watching{step: watchStep(watch)}, false)
	defer c.Command(t, "scancel", j.id)
	start := time.Now()
	at := injectXID(t, c, j, gpus)
	t.Logf("job %s: XID 79 on %s's GPU %.0fs after submission", j.id, j.hosts[j.node], at.Sub(start).Seconds())
	var hooks []notifytest.Hook
	for time.Since(at) < xidWatch && len(hooks) == 0 {
		time.Sleep(500 * time.Millisecond)
		hooks = digests(hooksOf(j.id))
	}
	if len(hooks) > 0 { // and a second one would come within seconds
		time.Sleep(10 * time.Second)
	}
	state := jobState(t, c, j)
	comment := ""
	if j.state == "" {
		comment = c.JobInfo(t, j.id).Comment
	}
	xidRead(t, j, at)
	// Checked before the job is cancelled: its end brings the digest of a
	// failed job, which names the XID too.
	check(t, c, j, state, comment, hooksOf(j.id))
	c.Command(t, "scancel", j.id)
	if j.state == "" {
		c.WaitJob(t, j.id, 60*time.Second, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")
	}
}

// injectXID waits until j trains past step xidAt and the watcher of its
// fault node follows that node's GPU's events, then stops the node's rank
// and reports XID 79 on its GPU; it returns when, noted as the job's
// fault time.
func injectXID(t *testing.T, c *slurmtest.Cluster, j *job, gpus map[string]nvmlfake.Dir) time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for ; time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if j.hosts == nil {
			if nl := c.JobInfo(t, j.id).NodeList; nl != "" {
				out, _ := c.Command(t, "scontrol", "show", "hostnames", nl)
				j.hosts = strings.Fields(out)
			}
			continue
		}
		if st := jobState(t, c, j); j.state != "" {
			dump(t, c, j)
			t.Fatalf("job %s ended (%s) before its fault", j.id, st)
		}
		log, _ := os.ReadFile(filepath.Join(j.dir, fmt.Sprintf("watch-%d.err", j.node)))
		pid, ok := rankPID(j.dir, j.rankOn())
		if !ok || !strings.Contains(c.JobOutput(j.id), fmt.Sprintf("step %d/", xidAt)) ||
			!strings.Contains(string(log), "following NVML's XID and ECC events") {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping rank %d (pid %d): %v", j.rankOn(), pid, err)
		}
		at := time.Now()
		gpus[j.hosts[j.node]].XID(t, 0, 79)
		writeFaultTime(t, j.dir, at)
		return at
	}
	dump(t, c, j)
	t.Fatalf("job %s: no step %d, or node %d's watcher does not follow NVML's events, within 3 minutes", j.id, xidAt, j.node)
	return time.Time{}
}

// xidEarly bounds the time from the XID to the fault node's record of it:
// the watcher asks NVML every loop.EarlyCheck (2 s), and slack for a
// loaded 2-core machine.
const xidEarly = 5 * time.Second

// xidRead asserts that the fault node's watcher recorded the XID as a
// device event of its GPU (from NVML's event set, through the fake
// library) within xidEarly of the injection at, and logs when.
func xidRead(t *testing.T, j *job, at time.Time) {
	t.Helper()
	host := j.hosts[j.node]
	f, err := os.Open(filepath.Join(j.dir, fmt.Sprintf("rec-%s-%s.jsonl", j.id, host)))
	if err != nil {
		t.Fatalf("the fault node's trace: %v", err)
	}
	defer f.Close()
	var got []time.Time
	err = trace.ReadParallel(f, 1, func(batch []trace.Sample) error {
		for _, s := range batch {
			if s.Log == nil || s.Log.Stream != trace.StreamDevice {
				continue
			}
			if e, ok := trace.ParseDeviceEvent(s.Log.Line); ok && e.Source == trace.DeviceNVML && e.Kind == trace.DeviceXID &&
				e.XID == 79 && e.Device == "0" && e.PCI == "0000:18:00" {
				got = append(got, s.Time)
			}
		}
		return nil
	})
	switch {
	case err != nil:
		t.Errorf("the fault node's trace: %v", err)
	case len(got) != 1:
		t.Errorf("%s's trace holds %d records of XID 79 on its GPU 0 (0000:18:00) from NVML, want 1", host, len(got))
	case got[0].Sub(at) > xidEarly:
		t.Errorf("%s's watcher recorded the XID %.1fs after it, want within %v", host, got[0].Sub(at).Seconds(), xidEarly)
	default:
		t.Logf("MEASURED x-xid79: XID→%s's record of it %.1fs", host, got[0].Sub(at).Seconds())
	}
}

// digests are the hooks that carry a digest.
func digests(hooks []notifytest.Hook) []notifytest.Hook {
	var out []notifytest.Hook
	for _, h := range hooks {
		if h.Body["digest"] != nil {
			out = append(out, h)
		}
	}
	return out
}
