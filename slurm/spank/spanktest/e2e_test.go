// Package spanktest tests vigil's SPANK plugin (slurm/spank/vigil_spank.c) on a
// real local Slurm cluster: the options on sbatch, the submit-time policy
// check, the values reaching vigil-prolog and the job's steps, and the
// watcher the plugin starts on every node from the job's extern step.
package spanktest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// spankDir is slurm/spank, where the plugin's source and Makefile live.
func spankDir(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source")
	}
	return filepath.Dir(filepath.Dir(file))
}

// buildPlugin builds vigil_spank.so with slurm/spank/Makefile into dir,
// against the <slurm/spank.h> under include (the Slurm that will load it:
// slurmtest.Flavour.Include). It fails, naming the Debian package, when
// gcc, make or libslurm-dev is missing.
func buildPlugin(t *testing.T, dir, include string) string {
	t.Helper()
	for _, tool := range []struct{ bin, pkg string }{{"gcc", "gcc"}, {"make", "make"}} {
		if _, err := exec.LookPath(tool.bin); err != nil {
			t.Fatalf("%s not found: the SPANK plugin needs it (apt-get install %s)", tool.bin, tool.pkg)
		}
	}
	if _, err := os.Stat(filepath.Join(include, "slurm", "spank.h")); err != nil {
		t.Fatalf("%s/slurm/spank.h not found: the SPANK plugin needs it (apt-get install libslurm-dev, in the root too: .ci/slurm-root)", include)
	}
	so := filepath.Join(dir, "vigil_spank.so")
	out, err := exec.Command("make", "-C", spankDir(t), "OUT="+so, "SLURM_INCLUDE="+include).CombinedOutput()
	if err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	return so
}

// sharedDir makes a directory under /tmp that slurmd, the job's user and
// the watcher can all read (t.TempDir's parent is 0700).
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "vigil-spank-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("VIGIL_KEEP_CLUSTER") == "" {
			os.RemoveAll(dir)
		}
	})
	return dir
}

// watcherProc is a running vigil-watch as /proc shows it.
type watcherProc struct {
	pid  int
	node string // SLURMD_NODENAME
	uid  string // the process's real uid
}

// watchers lists the running processes of bin that belong to job id on
// one of nodes (the other Slurm flavour's cluster may run a job of the
// same id at the same time).
func watchers(bin, id string, nodes []string) []watcherProc {
	var out []watcherProc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.HasPrefix(string(cmd), bin+"\x00") {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		vars := strings.Split(string(env), "\x00")
		if !slices.Contains(vars, "SLURM_JOB_ID="+id) {
			continue
		}
		w := watcherProc{pid: pid}
		for _, v := range vars {
			if n, ok := strings.CutPrefix(v, "SLURMD_NODENAME="); ok {
				w.node = n
			}
		}
		if !slices.Contains(nodes, w.node) { // another cluster's job of the same id
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status")); err == nil {
			for _, l := range strings.Split(string(st), "\n") {
				if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
					w.uid = f[1]
				}
			}
		}
		out = append(out, w)
	}
	return out
}

// waitFor polls cond every 100 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// prologRun is what one node's prolog report says about a job.
type prologRun struct {
	checks  []string // the checks that ran
	skipped string   // why nothing ran, if so
}

// prologReports returns each node's prolog report for job id.
func prologReports(t *testing.T, reportDir, id string) map[string]prologRun {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(reportDir, "*.json"))
	out := map[string]prologRun{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Mode    string `json:"mode"`
			Node    string `json:"node"`
			Job     string `json:"job"`
			Skipped string `json:"skipped"`
			Results []struct {
				Check string `json:"check"`
			} `json:"results"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if r.Mode != "prolog" || r.Job != id {
			continue
		}
		run := prologRun{checks: []string{}, skipped: r.Skipped}
		for _, res := range r.Results {
			run.checks = append(run.checks, res.Check)
		}
		out[r.Node] = run
	}
	return out
}

// TestE2ESpank runs the plugin in plugstack.conf of a three-node cluster
// with vigil-prolog as the Prolog and automatic watching on.
func TestE2ESpank(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurm(t, testE2ESpank)
}

func testE2ESpank(t *testing.T, f slurmtest.Flavour) {
	dir := sharedDir(t)
	so := buildPlugin(t, dir, f.Include())
	prolog := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	watcher := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")

	reports := filepath.Join(dir, "reports")
	cfg := filepath.Join(dir, "vigil.toml")
	conf := fmt.Sprintf(`[prolog]
checks = ["disk", "xid"]
report_dir = %q
textfile = %q
run_dir = %q
slurm_bin_dir = %q

[policy]
max_hang_time = "1h"
hang_actions = ["notify", "cancel"]
`, reports, filepath.Join(dir, "vigil.prom"), filepath.Join(dir, "run"), slurmBinDir(t))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "prolog.sh")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nexport VIGIL_STATE_DIR=%s\nexec %s --config %s \"$@\"\n", filepath.Join(dir, "state"), prolog, cfg)), 0o755); err != nil {
		t.Fatal(err)
	}
	plugstack := fmt.Sprintf("required %s config=%s prolog=%s watcher=%s watch=auto state_dir=%s\n",
		so, cfg, prolog, watcher, filepath.Join(dir, "state"))
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 3, Prolog: wrapper, PrologFlags: "Alloc,Contain", PlugStack: plugstack, Root: f.Root})
	c.Restart(t) // slurmd runs slurm_spank_job_prolog only after a restart that loaded the plugin

	// Refusals come first: they need no node.
	for _, tc := range []struct{ name, client, opt, want string }{
		{"unknown check", "sbatch", "--vigil-checks=disk,nosuch", `vigil: --vigil-checks=disk,nosuch: unknown check "nosuch"`},
		{"syntax", "sbatch", "--vigil-hang-time=2x", `vigil: --vigil-hang-time=2x: want minutes ("30"), a duration ("90s", "2h") or "off"`},
		{"beyond the bound", "sbatch", "--vigil-hang-time=2h", "vigil: --vigil-hang-time=2h: hang time 2h0m0s is longer than the longest allowed, 1h0m0s ([policy] max_hang_time)"},
		{"action not allowed", "sbatch", "--vigil-hang-action=requeue", "vigil: --vigil-hang-action=requeue: hang action requeue is not allowed on this cluster (allowed: notify, cancel)"},
		{"skipping not allowed", "sbatch", "--vigil-checks=none", "vigil: --vigil-checks=none: skipping the checks is not allowed on this cluster ([policy] allow_skip = false)"},
		{"salloc", "salloc", "--vigil-checks=nosuch", `vigil: --vigil-checks=nosuch: unknown check "nosuch"`},
		{"srun", "srun", "--vigil-timing=later", `vigil: --vigil-timing=later: want "before" or "after-requeue"`},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			args := []string{tc.opt, "true"}
			if tc.client == "sbatch" {
				args = []string{tc.opt, "--wrap=true"}
			}
			out, err := c.Command(t, tc.client, args...)
			if err == nil {
				t.Fatalf("%s %s was accepted: %s", tc.client, tc.opt, out)
			}
			if !strings.Contains(out, tc.want) {
				t.Fatalf("%s %s said:\n%s\nwant it to contain %q", tc.client, tc.opt, out, tc.want)
			}
			t.Logf("%s %s:\n%s", tc.client, tc.opt, out)
		})
	}

	// Jobs run side by side: 3 nodes of 4 CPUs.
	nobody := []string{"--uid=65534", "--gid=65534"}
	checksJob := c.Sbatch(t, "true\n", "--vigil-checks=disk")
	plainJob := c.Sbatch(t, "true\n")
	timingJob := c.Sbatch(t, "true\n", "--vigil-timing=after-requeue")
	hangJob := c.Sbatch(t, "echo \"T=$VIGIL_HANG_DETECT_TIME A=$VIGIL_HANG_ACTION\"\nsleep 6\n",
		append([]string{"--vigil-hang-time=2m", "--vigil-hang-action=cancel"}, nobody...)...)
	multiJob := c.Sbatch(t, "sleep 12\n", "-N", "3")
	offJob := c.Sbatch(t, "sleep 2\n", "--vigil-hang-time=off")
	outDir := filepath.Join(c.Dir, "jobs", "logs")
	if err := os.MkdirAll(outDir, 0o777); err != nil {
		t.Fatal(err)
	}
	outJob := c.Sbatch(t, "sleep 4\n", "--output="+filepath.Join(outDir, "train-%j.out"))

	// Without vigil-prolog on the submit host nothing is parsed there;
	// the node's watcher clamps a window beyond the bound. (Clients read
	// plugstack.conf at each call; the nodes use only its other arguments.)
	noProlog := strings.Replace(plugstack, "prolog="+prolog, "prolog="+filepath.Join(dir, "absent"), 1)
	if err := os.WriteFile(c.PlugStackConf, []byte(noProlog), 0o644); err != nil {
		t.Fatal(err)
	}
	clampJob := c.Sbatch(t, "sleep 4\n", "--vigil-hang-time=2h")
	if err := os.WriteFile(c.PlugStackConf, []byte(plugstack), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("one watcher per node without srun", func(t *testing.T) {
		// A watcher that starts scontrol is, between fork and exec, two
		// processes with its command line: wait for one per node.
		var ws []watcherProc
		var nodes []string
		ok := waitFor(20*time.Second, func() bool {
			ws = watchers(watcher, multiJob, c.Nodes)
			nodes = nodes[:0]
			for _, w := range ws {
				nodes = append(nodes, w.node)
			}
			slices.Sort(nodes)
			return slices.Equal(nodes, c.Nodes)
		})
		if !ok {
			t.Fatalf("watchers of job %s on %v, want one on each of %v\n%s", multiJob, nodes, c.Nodes, c.Dump(multiJob))
		}
		for _, w := range ws {
			if w.uid != "0" { // the job runs as root, so its watcher does too
				t.Errorf("watcher %d runs as uid %s, want the job's uid 0", w.pid, w.uid)
			}
		}
		c.WaitJob(t, multiJob, 30*time.Second, "COMPLETED")
		if !waitFor(10*time.Second, func() bool { return len(watchers(watcher, multiJob, c.Nodes)) == 0 }) {
			t.Fatalf("watchers left after job %s ended: %+v", multiJob, watchers(watcher, multiJob, c.Nodes))
		}
	})

	t.Run("the watcher's log goes with the job's output, not into the working directory", func(t *testing.T) {
		if !waitFor(20*time.Second, func() bool {
			m, _ := filepath.Glob(filepath.Join(outDir, "vigil-watch-"+outJob+"-*.log"))
			return len(m) == 1
		}) {
			m, _ := filepath.Glob(filepath.Join(c.Dir, "jobs", "vigil-watch-"+outJob+"-*.log"))
			t.Fatalf("no vigil-watch-%s-NODE.log beside the job's output in %s (in the working directory: %v)", outJob, outDir, m)
		}
	})

	t.Run("--vigil-hang-time=2m gives a two-minute window, as the job's user", func(t *testing.T) {
		log := watcherLog(t, c, hangJob, "vigil-watch started")
		for _, want := range []string{"window=2m0s", "action=cancel"} {
			if !strings.Contains(log, want) {
				t.Errorf("watcher log lacks %q:\n%s", want, log)
			}
		}
		// The watcher opens its log after dropping to the job's user.
		m, _ := filepath.Glob(filepath.Join(c.Dir, "jobs", "vigil-watch-"+hangJob+"-*.log"))
		if st, err := os.Stat(m[0]); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
			t.Errorf("watcher log %s: %v, %+v; want it owned by the job's uid 65534", m[0], err, st)
		}
		c.WaitJob(t, hangJob, 30*time.Second, "COMPLETED")
		if out := c.JobOutput(hangJob); !strings.Contains(out, "T=2m A=cancel") {
			t.Errorf("the job's step saw %q, want VIGIL_HANG_DETECT_TIME=2m and VIGIL_HANG_ACTION=cancel", out)
		}
		if !waitFor(10*time.Second, func() bool { return len(watchers(watcher, hangJob, c.Nodes)) == 0 }) {
			t.Errorf("watcher left after job %s ended", hangJob)
		}
	})

	t.Run("a window beyond the bound is clamped on the node", func(t *testing.T) {
		log := watcherLog(t, c, clampJob, "vigil-watch started")
		for _, want := range []string{"hang time 2h0m0s lowered to the longest allowed, 1h0m0s ([policy] max_hang_time)", "window=1h0m0s"} {
			if !strings.Contains(log, want) {
				t.Errorf("watcher log lacks %q:\n%s", want, log)
			}
		}
		c.WaitJob(t, clampJob, 30*time.Second, "COMPLETED")
	})

	t.Run("--vigil-checks=disk runs only disk", func(t *testing.T) {
		c.WaitJob(t, checksJob, 30*time.Second, "COMPLETED")
		c.WaitJob(t, plainJob, 30*time.Second, "COMPLETED")
		got := prologReports(t, reports, checksJob)
		plain := prologReports(t, reports, plainJob)
		if len(got) != 1 || len(plain) != 1 {
			t.Fatalf("prolog reports: job %s %v, job %s %v; want one each", checksJob, got, plainJob, plain)
		}
		for node, r := range got {
			if !slices.Equal(r.checks, []string{"disk"}) {
				t.Errorf("job %s on %s ran %v, want only disk", checksJob, node, r.checks)
			}
		}
		for node, r := range plain {
			if !slices.Equal(r.checks, []string{"disk", "xid"}) {
				t.Errorf("job %s without options on %s ran %v, want the configured disk, xid", plainJob, node, r.checks)
			}
		}
	})

	t.Run("--vigil-timing=after-requeue skips a first start", func(t *testing.T) {
		c.WaitJob(t, timingJob, 30*time.Second, "COMPLETED")
		got := prologReports(t, reports, timingJob)
		for node, r := range got {
			if len(r.checks) != 0 || !strings.Contains(r.skipped, "after-requeue") {
				t.Errorf("job %s on %s: ran %v, skipped %q; want nothing run, skipped for after-requeue", timingJob, node, r.checks, r.skipped)
			}
		}
		if len(got) != 1 {
			t.Errorf("prolog reports of job %s: %v, want one", timingJob, got)
		}
	})

	t.Run("--vigil-hang-time=off opts out", func(t *testing.T) {
		c.WaitJob(t, offJob, 30*time.Second, "COMPLETED")
		log := watcherLog(t, c, offJob, "not watching")
		if !strings.Contains(log, "the job opted out of hang detection (--vigil-hang-time=off)") || strings.Contains(log, "vigil-watch started") {
			t.Errorf("watcher log of an opted-out job:\n%s", log)
		}
	})

	t.Run("srun passes the options to its steps", func(t *testing.T) {
		out, err := c.Command(t, "srun", "--vigil-hang-time=45", "--vigil-hang-action=notify", "printenv", "VIGIL_HANG_DETECT_TIME", "VIGIL_HANG_ACTION")
		if err != nil || strings.Fields(out)[0] != "45" || !strings.Contains(out, "notify") {
			t.Fatalf("srun printenv: %v\n%s", err, out)
		}
	})
}

// watcherLog waits until the log of job id's watcher (the plugin's default,
// vigil-watch-<id>-<node>.log in the job's working directory) contains
// want, and returns it.
func watcherLog(t *testing.T, c *slurmtest.Cluster, id, want string) string {
	t.Helper()
	var log, path string
	ok := waitFor(20*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(c.Dir, "jobs", "vigil-watch-"+id+"-*.log"))
		if len(m) == 0 {
			return false
		}
		path = m[0]
		b, _ := os.ReadFile(path)
		log = string(b)
		return strings.Contains(log, want)
	})
	if !ok {
		t.Fatalf("no %q in the watcher log of job %s (%q):\n%s\n%s", want, id, path, log, c.Dump(id))
	}
	t.Logf("%s:\n%s", path, log)
	return log
}

// slurmBinDir is where scontrol lives, for [prolog] slurm_bin_dir.
func slurmBinDir(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("scontrol")
	if err != nil {
		for _, d := range []string{"/usr/bin", "/usr/local/bin"} {
			if _, err := os.Stat(filepath.Join(d, "scontrol")); err == nil {
				return d
			}
		}
		t.Fatalf("scontrol not found (apt-get install slurm-client)")
	}
	return filepath.Dir(p)
}
