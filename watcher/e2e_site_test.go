package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// secondWatcher starts another watcher step on every node, as a user who
// follows docs/watch.md on a site that also starts one per job (watch=auto),
// once the first has started, and records its exit code.
// %[1]s: the watcher's command line.
const secondWatcher = `(sleep 2
srun --overlap --ntasks-per-node=1 --output=$D/second-%%n.out --error=$D/second-%%n.err %[1]s
echo "exit $?" > $D/second.rc) &
`

// TestE2EWatchersAsInstalled runs watchers as a site installs them, on a
// cluster whose node names do not resolve (each node has its own
// NodeAddr): the watchers are given neither --node-addrs nor
// --munge-socket, and still meet (at Slurm's NodeAddr, through the munged
// of slurm.conf's AuthInfo) and announce one digest; a second watcher of
// the same job on each node says who watches and exits 0, so one hang
// gives one webhook; and a watcher whose settings are invalid tells the
// job's user in the job's comment and output.
func TestE2EWatchersAsInstalled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, NodeAddrs: true})
	if c.CgroupPlugin == "" {
		t.Fatalf("the test cluster runs without proctrack/cgroup: vigil-watch finds a job's processes through its cgroup")
	}
	nodes := slices.Clone(c.Nodes)
	slices.Sort(nodes)
	hookURL, hooksOf := notifytest.Recorder(t)
	accel := spinningAccelTrace(t)
	port := watchPort(7)

	dir := filepath.Join(t.TempDir(), "doubled")
	bad := filepath.Join(t.TempDir(), "invalid")
	for _, d := range []string{dir, bad} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	watch := fmt.Sprintf("%s --period %s --window %s --grace %s --accel-trace %s --webhook-url %s/hook --report-dir %s --port %d",
		bin, e2ePeriod, e2eWindow, e2eGrace, accel, hookURL, dir, port)
	training := fmt.Sprintf(secondWatcher, watch) + fmt.Sprintf(nodeTraining, "true", "none")
	id := c.Sbatch(t, fmt.Sprintf(e2eScript, dir, watch, training), "-w", strings.Join(nodes, ","), "-N", "3", "--job-name", "doubled")

	// The job asks for a 2-minute window; the site's config is invalid.
	conf := writeConfig(t, "[watch]\nwindow = \"20m\"\nperiods = \"30s\"\n")
	badScript := fmt.Sprintf("#!/bin/sh\nexport VIGIL_HANG_DETECT_TIME=2\nsrun --overlap --ntasks-per-node=1 %s --config %s\necho \"exit $?\" > %s/watch.rc\n",
		bin, conf, bad)
	badID := c.Sbatch(t, badScript, "-w", nodes[0], "-N", "1", "--job-name", "invalid", "--output", filepath.Join(bad, "job.out"))
	defer func() {
		os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
		if t.Failed() {
			for _, f := range []string{"watch-0.err", "watch-1.err", "watch-2.err", "second-0.err", "second.rc"} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				t.Logf("%s:\n%s", f, b)
			}
		}
	}()

	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) && len(hooksOf(id)) == 0 {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(4 * e2ePeriod) // a second notification, if there were one, would come by now
	if err := os.WriteFile(filepath.Join(dir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c.WaitJob(t, id, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")
	c.WaitJob(t, badID, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT")

	// The watchers met at the nodes' addresses: one digest, from the
	// coordinator, the first node in order.
	hh := hooksOf(id)
	if len(hh) != 1 || hh[0].Body["host"] != nodes[0] || hh[0].Body["digest"] == nil {
		t.Errorf("job %s: webhooks %v, want exactly one digest from %s", id, hh, nodes[0])
	}
	errs, _ := os.ReadFile(filepath.Join(dir, "watch-0.err"))
	if !bytes.Contains(errs, []byte("this watcher coordinates the job's watchers")) {
		t.Errorf("the coordinator's log does not say it coordinates:\n%s", errs)
	}
	// No watcher warns about the meeting, nor, stopped with the job, about
	// its own closed connections.
	for i := range 3 {
		errs, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("watch-%d.err", i)))
		for _, l := range strings.Split(string(errs), "\n") {
			if strings.Contains(l, "level=warning") && (strings.Contains(l, "meet") || strings.Contains(l, "rendezvous") ||
				strings.Contains(l, "closed network connection") || strings.Contains(l, "coordinator")) {
				t.Errorf("watcher %d warns: %s", i, l)
			}
		}
	}
	// The second watcher on each node said who watches, and exited 0.
	if rc, _ := os.ReadFile(filepath.Join(dir, "second.rc")); strings.TrimSpace(string(rc)) != "exit 0" {
		t.Errorf("the second watcher step ended %q, want exit 0", rc)
	}
	for i := range 3 {
		second, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("second-%d.err", i)))
		if !bytes.Contains(second, []byte("vigil-watch already watches job "+id+" on ")) {
			t.Errorf("second watcher %d does not say who watches:\n%s", i, second)
		}
	}

	// The invalid config: the watcher exits 2, and the job's comment and
	// output say why.
	if rc, _ := os.ReadFile(filepath.Join(bad, "watch.rc")); strings.TrimSpace(string(rc)) != "exit 2" {
		t.Errorf("the watcher with an invalid config ended %q, want exit 2", rc)
	}
	if cm := c.JobInfo(t, badID).Comment; !strings.HasPrefix(cm, "vigil: not watching: ") || !strings.Contains(cm, "watch.periods") {
		t.Errorf("job %s's comment = %q, want vigil's note naming the invalid key", badID, cm)
	}
	if out, _ := os.ReadFile(filepath.Join(bad, "job.out")); !bytes.Contains(out, []byte("vigil-watch: not watching this job: ")) {
		t.Errorf("job %s's output does not say it runs unwatched:\n%s", badID, out)
	}
}
