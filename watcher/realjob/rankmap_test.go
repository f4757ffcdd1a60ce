package realjob

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// raiseScript is a gloo job launched by torchrun, two ranks per node: its
// ranks all_reduce every step, and rank 3 (node 1's second) raises in its
// training step once the job has trained 25 s. Lines carry "[rankN]:" in
// PyTorch 2's own form (PyTorch 1.13 tags nothing itself), the traceback
// included; torchrun tees the ranks' stderr with its "[defaultL]:" (only
// stderr: 1.13's torchrun on Python 3.11 reads "3", both streams, as none).
const raiseScript = `import os, sys, time, traceback
import torch, torch.distributed as dist
import nolibuv  # torchrun's stores where PyTorch lacks libuv
rank = int(os.environ["RANK"])
torch.set_num_threads(1)
dist.init_process_group("gloo")
print("[rank%d]: initialised, world %d, local rank %s" % (rank, dist.get_world_size(), os.environ["LOCAL_RANK"]), flush=True)
x, t0 = torch.ones(4), time.time()
step = 0
while True:
    step += 1
    try:
        dist.all_reduce(x)
        x.fill_(1)
        if rank == 3 and time.time() - t0 > 25:
            raise RuntimeError("bad batch at step %d" % step)
    except RuntimeError:
        for l in traceback.format_exc().splitlines():
            print("[rank%d]: %s" % (rank, l), file=sys.stderr, flush=True)
        sys.exit(1)
    if step % 50 == 0:
        print("[rank%d]: step %d loss 1.0" % (rank, step), flush=True)
    time.sleep(0.05)
`

// TestE2ETorchrunRankMap runs a real torchrun job (one srun task per node,
// two ranks each) on a real Slurm: the watchers read each node's ranks
// from their processes' environment, the layout record of the trace holds
// the whole rank map, and rank 3's exception is placed on its node through
// it, not on the srun task of the same number (there is none).
func TestE2ETorchrunRankMap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster and a real PyTorch job")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	for _, r := range batchRuns { // PyTorch 1.13 on Slurm 22.05, 2.6 on 24.11
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			torchrunRankMap(t, bin, r)
		})
	}
}

func torchrunRankMap(t *testing.T, bin string, r run) {
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, NodeAddrs: true, Cgroup: r.cgroup, Root: r.root()})
	t.Logf("PyTorch %s, Slurm %s", torchVersion(t, c, r.root()), c.Version)
	dir := jobsDir(t)
	if err := os.WriteFile(filepath.Join(dir, "raise.py"), []byte(raiseScript), 0o755); err != nil {
		t.Fatal(err)
	}
	copyTestdata(t, dir, "nolibuv.py")
	script := fmt.Sprintf(`#!/bin/sh
export D=%[1]s USE_LIBUV=0 MASTER_PORT=%[2]d
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_ADDR=$(scontrol show node -o "$first" | sed 's/.* NodeAddr=\([^ ]*\).*/\1/')
srun --overlap --ntasks-per-node=1 --output=$D/watch-%%n.out --error=$D/watch-%%n.err %[3]s --period 3s --record $D/rec-%%j-%%N.jsonl &
srun --ntasks-per-node=1 sh -c 'exec %[4]s --nnodes=$SLURM_JOB_NUM_NODES --nproc_per_node=2 --node_rank=$SLURM_NODEID --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT --redirects 2 --tee 2 --log_dir %[1]s/torchrun %[1]s/raise.py'
rc=$?
echo "training exit $rc"
exit $rc
`, dir, slurmtest.FreePort(t, slurmtest.JobPorts), bin, torchrunCmd(dir, r.noLibuv))
	id := c.Sbatch(t, script, "--chdir="+dir, "-N", "2", "--mem=1500", "--ntasks-per-node=1", "--job-name", "rankmap")
	t0 := time.Now()
	state := c.WaitJob(t, id, 3*time.Minute, "FAILED", "COMPLETED", "CANCELLED", "TIMEOUT")
	t.Logf("job %s %s %.0fs after submission", id, state, time.Since(t0).Seconds())
	out, _ := c.Command(t, "scontrol", "show", "hostnames", c.JobInfo(t, id).NodeList)
	hosts := strings.Fields(out)
	if state != "FAILED" || len(hosts) != 2 {
		t.Fatalf("job %s: %s on %v, want FAILED on two nodes\n%s", id, state, hosts, c.JobOutput(id))
	}
	want := map[int]string{0: hosts[0], 1: hosts[0], 2: hosts[1], 3: hosts[1]}
	layout, lines := recorded(t, dir, id, 20*time.Second, func(l joblog.Layout) bool { return maps.Equal(l.Ranks, want) })
	if !maps.Equal(layout.Ranks, want) {
		t.Fatalf("the trace's last layout record is %+v, want ranks %v\njob output:\n%s", layout, want, c.JobOutput(id))
	}
	placed := 0
	for _, l := range lines {
		if !strings.Contains(l, "[rank3]:") || !strings.Contains(l, "RuntimeError") {
			continue
		}
		src := joblog.Attribute(l, layout)
		if src.Host != hosts[1] || src.By != joblog.ByRank {
			t.Errorf("%q placed %+v, want on %s by its rank", l, src, hosts[1])
		}
		placed++
	}
	if placed == 0 {
		t.Errorf("no recorded line of rank 3's exception; the job printed:\n%s", c.JobOutput(id))
	}
}

// recorded reads the watchers' traces of job id under dir, waiting up to
// wait for a layout record that done accepts (the watchers end a moment
// after the job): the last layout record and the recorded output lines.
func recorded(t *testing.T, dir, id string, wait time.Duration, done func(joblog.Layout) bool) (joblog.Layout, []string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var layout joblog.Layout
		var lines []string
		files, _ := filepath.Glob(filepath.Join(dir, "rec-"+id+"-*.jsonl"))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(fh)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var s trace.Sample
				if json.Unmarshal(sc.Bytes(), &s) != nil || !s.IsLog() {
					continue
				}
				switch s.Log.Stream {
				case trace.StreamLayout:
					layout = joblog.Layout{}
					if err := json.Unmarshal([]byte(s.Log.Line), &layout); err != nil {
						t.Fatalf("%s: layout record %q: %v", f, s.Log.Line, err)
					}
				case trace.StreamStdout, trace.StreamStderr:
					lines = append(lines, s.Log.Line)
				}
			}
			fh.Close()
		}
		if done(layout) || time.Now().After(deadline) {
			return layout, lines
		}
		time.Sleep(time.Second)
	}
}
