package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
	"github.com/vigil-hpc/vigil/watcher/hangview/pagetest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// The watcher's settings in the e2e test: one sample a second, a six-second
// window, two seconds of grace.
const (
	e2ePeriod = time.Second
	e2eWindow = 6 * time.Second
	e2eGrace  = 2 * time.Second
)

// e2eScript is a batch script that starts the watcher step the way
// docs/watch.md says, runs a "training" loop, and, once the test drops a
// "done" file (or after 90 s), sends the watcher SIGTERM and records its
// exit code. (When a batch script simply ends, Slurm 22.05 kills the
// remaining steps with SIGKILL.) The step's output goes to files that
// slurmstepd writes (srun --output/--error).
// %[1]s: the job's directory; %[2]s: the watcher's command line; %[3]s: the
// training loop.
const e2eScript = `#!/bin/sh
export D=%[1]s
srun --overlap --ntasks-per-node=1 --job-name=vigil-watch --output=$D/watch-%%n.out --error=$D/watch-%%n.err %[2]s &
W=$!
%[3]s
n=0
while [ ! -e $D/done ] && [ $n -lt 90 ]; do sleep 1; n=$((n+1)); done
scancel --signal=TERM $(squeue -h -s -j $SLURM_JOB_ID -o "%%i %%j" | awk '$2 == "vigil-watch" {print $1}')
wait $W
echo "exit $?" > $D/watch.rc
`

// hangingTraining writes 2 MiB a second for about four seconds, notes when
// it stopped, and stays alive doing nothing (the script's wait loop).
const hangingTraining = `dd if=/dev/zero of=$D/data bs=512k count=4 2>/dev/null
for i in 1 2 3; do sleep 1; dd if=/dev/zero of=$D/data bs=512k count=4 2>/dev/null; done
date +%s.%N > $D/stopped`

// collectiveTraining is a training step on every node of the job that
// writes for about four seconds and then waits, as ranks stuck in a
// collective do.
const collectiveTraining = `srun --overlap --ntasks-per-node=1 sh -c '
dd if=/dev/zero of=$D/data-$SLURM_NODEID bs=512k count=4 2>/dev/null
for i in 1 2 3; do sleep 1; dd if=/dev/zero of=$D/data-$SLURM_NODEID bs=512k count=4 2>/dev/null; done
while [ ! -e $D/done ]; do sleep 1; done' &`

// steadyTraining writes 2 MiB a second until the test is done.
const steadyTraining = `while [ ! -e $D/done ]; do dd if=/dev/zero of=$D/data bs=512k count=4 2>/dev/null; sleep 1; done &`

// watchPort is a base --port for a test's watchers' meetings (the job's
// ports are four of port to port+999, picked by a hash of its id): the
// span in 10000 to 11989, below the kernel's ephemeral range (an outgoing connection or an
// srun listener can take a port there), slurmtest's daemon ports (20000 and
// up) and the real-PyTorch e2e's TCPStore ports (12000 to 19999), and
// apart for each test binary (its pid) and each test (salt).
func watchPort(salt int) int {
	return 10000 + (os.Getpid()+salt)%100*10
}

// spinningAccelTrace writes an accelerator trace of one device stuck at
// 100% utilisation and 80 W, as in a spinning collective, and returns its
// path (vigil-watch --accel-trace).
func spinningAccelTrace(t *testing.T) string {
	t.Helper()
	accel := filepath.Join(t.TempDir(), "accel.jsonl")
	var tr bytes.Buffer
	w := trace.NewWriter(&tr)
	for i := range 5 {
		if err := w.Write(trace.Sample{Time: time.Date(2026, 11, 29, 10, 0, i, 0, time.UTC), Host: "gpu01",
			Accel: []trace.Accel{{ID: "0", Util: 100, MemUsedMiB: 30000, PowerW: 80}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(accel, tr.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return accel
}

func TestE2EHangReported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testE2EHangReported)
}

func testE2EHangReported(t *testing.T, f slurmtest.Flavour) {
	bin := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 5, Root: f.Root})
	if c.CgroupPlugin == "" {
		t.Fatalf("the test cluster runs without proctrack/cgroup (no cgroup v1 freezer hierarchy at /sys/fs/cgroup/freezer): vigil-watch finds a job's processes through its cgroup")
	}

	hookURL, hooksOf := notifytest.Recorder(t)

	accel := spinningAccelTrace(t)

	submit := func(name, node, training, extra string) (id, dir string) {
		dir = filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// --port 0: each watcher acts for its own node (TestE2ECoordinatedDigest has the watchers meet).
		watch := fmt.Sprintf("%s --period %s --window %s --grace %s --accel-trace %s --webhook-url %s/hook --mail --report-dir %s --record %s/rec-%%j-%%N.jsonl --port 0 %s",
			bin, e2ePeriod, e2eWindow, e2eGrace, accel, hookURL, dir, dir, extra)
		nodes := strings.Count(node, ",") + 1
		id = c.Sbatch(t, fmt.Sprintf(e2eScript, dir, watch, training), "-w", node, "-N", strconv.Itoa(nodes), "--job-name", name)
		return id, dir
	}
	hungID, hungDir := submit("hanging", c.Nodes[0], hangingTraining, "")
	steadyID, steadyDir := submit("steady", c.Nodes[1], steadyTraining, "")
	// The same hang with the opt-in action: the watcher cancels the job.
	cancelID, _ := submit("cancelled", c.Nodes[2], hangingTraining, "--action cancel")
	// A hang of a two-node job: both nodes hang at once.
	collID, collDir := submit("collective", c.Nodes[3]+","+c.Nodes[4], collectiveTraining, "")
	start := time.Now()

	// Wait for the hang's webhook, and for the steady job's watcher to have
	// judged more than two whole windows after its grace.
	needSamples := int((e2eGrace+2*e2eWindow)/e2ePeriod) + 2
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		if len(hooksOf(hungID)) > 0 && len(hooksOf(collID)) > 0 && countLines(filepath.Join(steadyDir, "rec-"+steadyID+"-"+c.Nodes[1]+".jsonl")) >= needSamples {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	hungComment := c.JobInfo(t, hungID).Comment
	steadyComment := c.JobInfo(t, steadyID).Comment
	time.Sleep(2 * e2ePeriod) // the collective job's second node decides too
	collComment := c.JobInfo(t, collID).Comment
	for _, d := range []string{hungDir, steadyDir, collDir} {
		if err := os.WriteFile(filepath.Join(d, "done"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]string{hungID: "COMPLETED", steadyID: "COMPLETED", cancelID: "CANCELLED", collID: "COMPLETED"} {
		if st := c.WaitJob(t, id, 30*time.Second, "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"); st != want {
			t.Errorf("job %s ended %s, want %s\n%s", id, st, want, c.Dump(id))
		}
	}
	if ch := hooksOf(cancelID); len(ch) != 1 || !strings.Contains(fmt.Sprint(ch[0].Body["actions"]), "cancel") {
		t.Errorf("webhooks for the cancelled job: %v", ch)
	}
	t.Logf("jobs ran %.1fs", time.Since(start).Seconds())
	defer func() {
		if t.Failed() {
			for _, d := range []string{hungDir, steadyDir, collDir} {
				for _, f := range []string{"watch-0.err", "watch-0.out", "watch-1.err", "watch-1.out", "watch.rc"} {
					b, _ := os.ReadFile(filepath.Join(d, f))
					t.Logf("%s:\n%s", filepath.Join(d, f), b)
				}
			}
		}
	}()

	// The hanging job: reported hung once, within window + two periods of
	// its last write (and not before a window had passed).
	hh := hooksOf(hungID)
	if len(hh) != 1 {
		t.Fatalf("webhooks for the hanging job %s: %d, want 1: %v", hungID, len(hh), hh)
	}
	b := hh[0].Body
	if b["event"] != "hung" || b["host"] != c.Nodes[0] || !strings.Contains(fmt.Sprint(b["text"]), "job "+hungID) || !strings.Contains(fmt.Sprint(b["text"]), "is hung on "+c.Nodes[0]) {
		t.Errorf("webhook body = %v", b)
	}
	stopped := readUnixTime(t, filepath.Join(hungDir, "stopped"))
	evTime, err := time.Parse(time.RFC3339Nano, fmt.Sprint(b["time"]))
	if err != nil {
		t.Fatalf("webhook time %v: %v", b["time"], err)
	}
	lag := evTime.Sub(stopped)
	t.Logf("hung reported %.2fs after the last write (window %v, period %v)", lag.Seconds(), e2eWindow, e2ePeriod)
	if lag > e2eWindow+2*e2ePeriod {
		t.Errorf("hung reported %v after the last write, want at most window + two periods (%v)", lag, e2eWindow+2*e2ePeriod)
	}
	if lag < e2eWindow-2*e2ePeriod {
		t.Errorf("hung reported %v after the last write, well before a whole window (%v) without progress", lag, e2eWindow)
	}
	if !strings.Contains(hungComment, "vigil: hung since ") || !strings.HasSuffix(hungComment, " on "+c.Nodes[0]) {
		t.Errorf("hanging job's comment = %q, want vigil's hang note", hungComment)
	}
	reps, _ := filepath.Glob(filepath.Join(hungDir, "vigil-hang-"+hungID+"-*.json"))
	if len(reps) != 1 {
		t.Errorf("hang reports %v, want one", reps)
	} else {
		var rep map[string]any
		data, _ := os.ReadFile(reps[0])
		if err := json.Unmarshal(data, &rep); err != nil || rep["event"] != "hung" || !strings.Contains(fmt.Sprint(rep["flat"]), "accel:0") {
			t.Errorf("report %s: %v\n%s", reps[0], err, data)
		}
		// The lone watcher's page: its node's readings and verdict.
		page := strings.TrimSuffix(reps[0], ".json") + ".html"
		html, err := os.ReadFile(page)
		if rep["html"] != page || err != nil || b["html"] != page {
			t.Errorf("report names the page %v, webhook %v; reading %s: %v", rep["html"], b["html"], page, err)
		} else if got := pagetest.Charts(string(html)); len(got) != 1 || got[0] != c.Nodes[0] || pagetest.Series(string(html))[c.Nodes[0]] < 2 {
			t.Errorf("the page charts %v with %v lines, want %s's readings", got, pagetest.Series(string(html)), c.Nodes[0])
		}
	}
	// Mail through the cluster's MailProg (found with scontrol show config),
	// called as slurmctld calls it: -s SUBJECT USER, body on stdin.
	mails, _ := os.ReadFile(c.MailLog)
	if want := "-s vigil: job " + hungID + " hung on " + c.Nodes[0] + " root | vigil: job " + hungID + " (root) is hung"; !strings.Contains(string(mails), want) {
		t.Errorf("mail log %s lacks %q:\n%s", c.MailLog, want, mails)
	}
	if strings.Contains(string(mails), "job "+steadyID+" ") {
		t.Errorf("the steady job was mailed about:\n%s", mails)
	}
	out, _ := os.ReadFile(filepath.Join(hungDir, "watch-0.out"))
	if !strings.Contains(string(out), `"event":"hung"`) {
		t.Errorf("the watcher printed no hung event:\n%s", out)
	}

	// The steady job: never reported.
	if sh := hooksOf(steadyID); len(sh) != 0 {
		t.Errorf("the steady job was reported: %v", sh)
	}
	if strings.Contains(steadyComment, "vigil:") {
		t.Errorf("steady job's comment = %q", steadyComment)
	}
	if reps, _ := filepath.Glob(filepath.Join(steadyDir, "vigil-hang-*")); len(reps) != 0 {
		t.Errorf("the steady job has hang reports: %v", reps)
	}
	out, _ = os.ReadFile(filepath.Join(steadyDir, "watch-0.out"))
	if strings.Contains(string(out), `"event":"hung"`) || strings.Contains(string(out), `"event":"suspect"`) {
		t.Errorf("the steady job's watcher printed events:\n%s", out)
	}
	if n := countLines(filepath.Join(steadyDir, "rec-"+steadyID+"-"+c.Nodes[1]+".jsonl")); n < needSamples {
		t.Errorf("the steady job's watcher took %d samples, want at least %d (two windows after grace)", n, needSamples)
	}

	// The two-node job: each node's watcher says its node hung and writes
	// its report; the comment names both nodes; the node that decides first
	// notifies, the other finds its note and does not.
	for i := range 2 {
		out, _ := os.ReadFile(filepath.Join(collDir, fmt.Sprintf("watch-%d.out", i)))
		if !strings.Contains(string(out), `"event":"hung"`) {
			t.Errorf("the collective job's watcher %d printed no hung event:\n%s", i, out)
		}
	}
	if reps, _ := filepath.Glob(filepath.Join(collDir, "vigil-hang-"+collID+"-*.json")); len(reps) != 2 {
		t.Errorf("collective job's reports %v, want one per node", reps)
	}
	if want := " on " + c.Nodes[3] + "," + c.Nodes[4]; !strings.Contains(collComment, "vigil: hung since ") || !strings.HasSuffix(collComment, want) {
		t.Errorf("collective job's comment = %q, want the hang note ending %q", collComment, want)
	}
	if ch := hooksOf(collID); len(ch) != 1 || (ch[0].Body["host"] != c.Nodes[3] && ch[0].Body["host"] != c.Nodes[4]) {
		t.Errorf("webhooks for the collective job: %v, want one, from either node", ch)
	}

	// Every watcher stopped cleanly on SIGTERM.
	for _, d := range []string{hungDir, steadyDir, collDir} {
		rc, _ := os.ReadFile(filepath.Join(d, "watch.rc"))
		errs, _ := os.ReadFile(filepath.Join(d, "watch-0.err"))
		if strings.TrimSpace(string(rc)) != "exit 0" || !bytes.Contains(errs, []byte("vigil-watch stopping: signalled")) || !bytes.Contains(errs, []byte("vigil-watch stopped")) {
			t.Errorf("%s: the watcher did not stop cleanly on SIGTERM (%q); its log:\n%s", d, rc, errs)
		}
		if i := bytes.Index(errs, []byte("max_rss_kib=")); i >= 0 {
			t.Logf("%s watcher: %s", filepath.Base(d), strings.Fields(string(errs[i:]))[0])
		}
	}
}

func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

func readUnixTime(t *testing.T, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the hanging job never stopped writing: %v", err)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9))
}
