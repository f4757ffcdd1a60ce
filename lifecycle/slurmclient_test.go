package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
)

// idleNodeLine is one real `scontrol show node -o` line of an idle node.
const idleNodeLine = "NodeName=n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 State=IDLE ThreadsPerCore=1 Gres=(null) Reason=(null)\n"

// fakeScontrol writes an executable scontrol into a new directory that
// appends its argv and SLURM_CONF to a log, then prints what a real
// scontrol prints when it cannot read slurm.conf and exits 1 (or, with ok,
// prints an idle node).
func fakeScontrol(t *testing.T, ok bool) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "calls")
	body := "#!/bin/sh\necho \"$* SLURM_CONF=${SLURM_CONF-unset}\" >> " + log + "\n"
	if ok {
		body += "printf '%s' '" + idleNodeLine + "'\n"
	} else {
		body += "echo 'scontrol: error: s_p_parse_file: unable to status file /etc/slurm/slurm.conf: No such file or directory' >&2\nexit 1\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "scontrol"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, log
}

// TestHealthRunPassesSlurmConf runs health mode with a real scontrol
// program and checks what it was called with.
func TestHealthRunPassesSlurmConf(t *testing.T) {
	bin, calls := fakeScontrol(t, true)
	slurmConf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(slurmConf, []byte("ClusterName=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, conf := setup(t, "checks = [\"t-pass\"]\nslurm_bin_dir = \""+bin+"\"\nslurm_conf = \""+slurmConf+"\"")
	out := runWith(t, conf, decide.ModeHealth, nil, env{}, func(o *Options) { o.Slurm = nil })
	if out.ExitCode != decide.ExitOK || out.Report.Verdict != "pass" {
		t.Fatalf("exit %d, report %+v", out.ExitCode, out.Report)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	want := "show node -o n1 SLURM_CONF=" + slurmConf + "\n"
	if !strings.HasPrefix(string(b), want) {
		t.Errorf("scontrol calls:\n%s\nwant first %q", b, want)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasSuffix(l, "SLURM_CONF="+slurmConf) {
			t.Errorf("scontrol call without the config's slurm.conf: %q", l)
		}
	}
}

// TestFailingScontrolIsAnError: an scontrol that fails (here: slurm.conf
// missing) is logged at error level, naming the slurm.conf, and the
// missing file is noted in the report.
func TestFailingScontrolIsAnError(t *testing.T) {
	bin, _ := fakeScontrol(t, false)
	_, conf := setup(t, "checks = [\"t-pass\"]\nslurm_bin_dir = \""+bin+"\"\nslurm_conf = \"/nonexistent/slurm.conf\"")
	log, hook := logtest.NewNullLogger()
	out := runWith(t, conf, decide.ModeHealth, nil, env{}, func(o *Options) { o.Slurm = nil; o.Log = log })
	if out.ExitCode != decide.ExitOK {
		t.Errorf("exit %d: a failing scontrol must not fail the run", out.ExitCode)
	}
	var scontrol, missing bool
	for _, e := range hook.AllEntries() {
		if e.Level != logrus.ErrorLevel {
			continue
		}
		if strings.HasPrefix(e.Message, "scontrol failed") && e.Data["slurm_conf"] == "/nonexistent/slurm.conf" {
			scontrol = true
		}
		if strings.Contains(e.Message, "set [prolog] slurm_conf") {
			missing = true
		}
	}
	if !scontrol || !missing {
		var levels []string
		for _, e := range hook.AllEntries() {
			levels = append(levels, e.Level.String()+": "+e.Message)
		}
		t.Errorf("want error-level entries for the failing scontrol (%v) and the missing slurm.conf (%v); got\n%s",
			scontrol, missing, strings.Join(levels, "\n"))
	}
	var noted bool
	for _, n := range out.Report.Notes {
		noted = noted || strings.Contains(n, "/nonexistent/slurm.conf") && strings.Contains(n, "[prolog] slurm_conf")
	}
	if !noted {
		t.Errorf("no note about the missing slurm.conf in %q", out.Report.Notes)
	}
}
