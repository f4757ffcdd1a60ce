package slurm_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

var captureDir = flag.String("capture", "", "record the Slurm 24.11 root's scontrol output into this directory (testdata/scontrol/24.11) and stop")

// TestCaptureScontrol records, verbatim, what Slurm 24.11 (the root of
// slurmtest.SlurmRoot) prints for the commands vigil parses, in the states
// the 22.05 fixtures show (testdata/scontrol/24.11/README.md). It runs only
// with -capture DIR: the fixtures are refreshed by hand, and the parsers'
// tests read them.
func TestCaptureScontrol(t *testing.T) {
	if *captureDir == "" {
		t.Skip("records fixtures; run with -capture testdata/scontrol/24.11")
	}
	dir, err := filepath.Abs(*captureDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := slurmtest.Flavours()[1]
	envDir, err := os.MkdirTemp("/tmp", "vigil-capture-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(envDir)
	if err := os.Chmod(envDir, 0o777); err != nil {
		t.Fatal(err)
	}
	dump := filepath.Join(envDir, "dump")
	script := "#!/bin/sh\nenv | sort > " + envDir + "/env-$SLURM_SCRIPT_CONTEXT-$SLURM_JOB_ID.txt\n"
	if err := os.WriteFile(dump, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 5, GPUsPerNode: 4, Root: f.Root, Prolog: dump, Epilog: dump,
		PrologFlags: "Alloc", MailProg: "/bin/true"})
	n := c.Nodes
	cap := capturer{t: t, c: c, dir: dir}

	cap.save("version.txt", "scontrol", "--version")
	cap.save("node-idle.txt", "scontrol", "show", "node", "-o", n[0])
	cap.save("node-idle-multiline.txt", "scontrol", "show", "node", n[0])
	cap.saveSplit("node-nosuch", "scontrol", "show", "node", "-o", "nosuch")
	cap.run("scontrol", "update", "NodeName="+n[1], "State=DRAIN", "Reason=vigil: GEMMBelowThreshold gpu3 412 TFLOPS < 600")
	cap.run("scontrol", "update", "NodeName="+n[2], "State=DRAIN", "Reason=bad dimm slot=3 State=IDLE ecc=12 [x@y]")
	cap.run("scontrol", "create", "reservation", "ReservationName=maint", "StartTime=now", "Duration=60",
		"Nodes="+n[3], "Users=root", "Flags=MAINT")
	cap.run("scontrol", "update", "NodeName="+n[4], "State=DOWN", "Reason=dead psu")
	cap.save("nodes-1.txt", "scontrol", "show", "node", "-o")

	cap.run("scontrol", "update", "NodeName="+n[4], "State=RESUME")
	j1 := c.Sbatch(t, "sleep 300\n", "-w", n[0], "--gpus=2", "--comment=needs checking a=b  c JobState=FAILED", "-J", "train run")
	c.Sbatch(t, "sleep 300\n", "-w", n[0], "--hold")
	c.Sbatch(t, "sleep 300\n", "-w", n[0])
	c.Sbatch(t, "sleep 300\n", "-w", n[0], "--array=1-3")
	c.WaitJob(t, j1, 30*time.Second, "RUNNING")
	cap.run("scontrol", "update", "NodeName="+n[0], "State=DRAIN", "Reason=vigil: XIDError gpu0 xid=79")
	cap.save("nodes-2.txt", "scontrol", "show", "node", "-o")
	cap.save("jobs-1.txt", "scontrol", "show", "job", "-o")
	cap.run("scontrol", "update", "JobId="+j1, "Comment=vigil: hang suspected on "+n[0]+" (io flat 600s)")
	cap.save("job-comment-updated.txt", "scontrol", "show", "job", "-o", j1)

	cap.saveSplit("job-nosuch", "scontrol", "show", "job", "-o", "999999")
	cap.saveSplit("requeue-nosuch", "scontrol", "requeue", "999999")
	cap.saveSplit("update-nosuch", "scontrol", "update", "NodeName=nosuch", "State=RESUME")
	cap.saveSplit("scancel-nosuch", "scancel", "999999")
	cap.save("config.txt", "scontrol", "show", "config")

	// The prolog's, epilog's and a step's environment.
	step := "#!/bin/sh\nsrun sh -c 'env | grep -E \"^(SLURM|CUDA|GPU)\" | sort' > " + envDir + "/env-step.txt\nexit 7\n"
	j7 := c.Sbatch(t, step, "-w", n[4], "--gpus=2", "--comment=vigil test")
	c.WaitJob(t, j7, 60*time.Second, "FAILED")
	time.Sleep(2 * time.Second) // the epilog runs after the job is FAILED
	t.Logf("job %s output:\n%s", j7, c.JobOutput(j7))
	cap.copyEnv(filepath.Join(envDir, "env-prolog_slurmd-"+j7+".txt"), "env-prolog.txt")
	cap.copyEnv(filepath.Join(envDir, "env-epilog_slurmd-"+j7+".txt"), "env-epilog.txt")
	cap.copyEnv(filepath.Join(envDir, "env-step.txt"), "env-step.txt")
	cap.save("jobs-5.txt", "scontrol", "show", "job", "-o", j7)
	t.Logf("nodes %v, jobs %s and %s; fixtures in %s", n, j1, j7, dir)
}

// capturer runs the cluster's clients and saves their output.
type capturer struct {
	t   *testing.T
	c   *slurmtest.Cluster
	dir string
}

func (p capturer) run(name string, args ...string) {
	p.t.Helper()
	if out, err := p.c.Command(p.t, name, args...); err != nil {
		p.t.Fatalf("%v\n%s", err, out)
	}
}

func (p capturer) save(file, name string, args ...string) {
	p.t.Helper()
	out, err := p.c.Command(p.t, name, args...)
	if err != nil {
		p.t.Fatalf("%v\n%s", err, out)
	}
	p.write(file, []byte(out))
}

// saveSplit saves stdout and stderr apart (file.stdout, file.stderr), as
// the client sees them, whatever the exit status.
func (p capturer) saveSplit(file, name string, args ...string) {
	p.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), p.c.Env...)
	for _, e := range p.c.Env {
		if path, ok := strings.CutPrefix(e, "PATH="); ok {
			for _, d := range filepath.SplitList(path) {
				if _, err := os.Stat(filepath.Join(d, name)); err == nil {
					cmd.Path = filepath.Join(d, name)
					break
				}
			}
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	p.t.Logf("%s %v: %v", name, args, err)
	if stdout.Len() > 0 {
		p.write(file+".stdout", stdout.Bytes())
	}
	if stderr.Len() > 0 {
		p.write(file+".stderr", stderr.Bytes())
	}
}

func (p capturer) copyEnv(src, file string) {
	p.t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		p.t.Fatalf("%v\n%s", err, p.c.Dump(""))
	}
	p.write(file, b)
}

func (p capturer) write(file string, b []byte) {
	p.t.Helper()
	if err := os.WriteFile(filepath.Join(p.dir, file), b, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

var captureRebootDir = flag.String("capture-reboot", "", "record scontrol's node lines through a reboot into this directory (testdata/scontrol/22.05 with the host's Slurm, .../24.11 with the root's) and stop")

// TestCaptureReboot records, verbatim, a node through vigil's reboot
// requests on a slurmtest cluster with Options.Reboot: drained by vigil
// while a job runs, `scontrol reboot reason=R` pending, issued (when a
// poll catches it), back IDLE+DRAIN; another node rebooted with ASAP
// nextstate=DOWN and back DOWN. The directory's base name picks the
// Slurm: "24.11" the root's, else the host's. It runs only with
// -capture-reboot DIR.
func TestCaptureReboot(t *testing.T) {
	if *captureRebootDir == "" {
		t.Skip("records fixtures; run with -capture-reboot testdata/scontrol/22.05 (or 24.11)")
	}
	dir, err := filepath.Abs(*captureRebootDir)
	if err != nil {
		t.Fatal(err)
	}
	f := slurmtest.Flavours()[0]
	if filepath.Base(dir) == "24.11" {
		f = slurmtest.Flavours()[1]
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Reboot: true, ResumeTimeout: 60, Root: f.Root,
		ExtraConf: []string{"ReturnToService=1"}})
	n := c.Nodes
	cap := capturer{t: t, c: c, dir: dir}
	const reason = "vigil: xid XID79 gpu3"
	job := c.Sbatch(t, "sleep 300\n", "-w", n[0])
	c.WaitJob(t, job, 30*time.Second, "RUNNING")
	cap.run("scontrol", "update", "NodeName="+n[0], "State=DRAIN", "Reason="+reason)
	cap.run("scontrol", "reboot", "reason="+reason, n[0])
	cap.save("node-reboot-requested.txt", "scontrol", "show", "node", "-o", n[0])
	cap.run("scancel", job)
	deadline := time.Now().Add(30 * time.Second)
	for issued := false; time.Now().Before(deadline); {
		out, err := c.Command(t, "scontrol", "show", "node", "-o", n[0])
		if err == nil && strings.Contains(out, "REBOOT_ISSUED") && !issued {
			issued = true
			cap.write("node-reboot-issued.txt", []byte(out))
		}
		if err == nil && !strings.Contains(out, "REBOOT_") && strings.Contains(out, "State=IDLE+DRAIN ") {
			cap.write("node-reboot-back-drain.txt", []byte(out))
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cap.run("scontrol", "reboot", "ASAP", "nextstate=DOWN", "reason="+reason, n[1])
	back := c.WaitNode(t, n[1], 30*time.Second, func(nd slurm.Node) bool { return nd.State == "DOWN" && len(nd.Flags) == 0 })
	cap.save("node-reboot-back-down.txt", "scontrol", "show", "node", "-o", back.Name)
	t.Logf("nodes %v; fixtures in %s", n, dir)
}
