package lifecycle

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
)

// TestUserMailKeepsTheWorkDirOneLine: with result_dir = "workdir" the
// mail to the job's user names the result file under the job's working
// directory, which the user chose. A directory whose name holds newlines,
// a mailx escape ("~!") and a forged line reaches the real MailProg (a
// script that records its stdin) on the one line "Result:", quoted; no
// line of the body starts with '~'.
func TestUserMailKeepsTheWorkDirOneLine(t *testing.T) {
	slurmConf, _, stdin := mailProg(t)
	pwned := filepath.Join(t.TempDir(), "pwned")
	workdir := filepath.Join(t.TempDir(), "x\n~! touch "+pwned+"\nCheck:  forged (by the user)")
	_, conf := setup(t, "checks = [\"t-fail\"]\nresult_dir = \"workdir\"\n[policy]\nnotify = [\"mail\"]\n")
	e := jobEnv()
	e["SLURM_JOB_USER"], e["SLURM_CONF"], e["SLURM_JOB_WORK_DIR"] = "alice", slurmConf, workdir
	e["SPANK_VIGIL_NOTIFY"] = "mail"
	o := runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, e, nil)
	if o.ExitCode != decide.ExitFail {
		t.Fatalf("exit %d, want %d", o.ExitCode, decide.ExitFail)
	}
	body, err := os.ReadFile(stdin)
	if err != nil {
		t.Fatalf("no mail: %v (notes %q)", err, o.Report.Notes)
	}
	want := fmt.Sprintf("Result: %q\n", filepath.Join(workdir, "vigil-42-n1.json"))
	if !strings.Contains(string(body), want) {
		t.Errorf("mail body lacks %q:\n%s", want, body)
	}
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "~") || strings.HasPrefix(l, "Check:  forged") {
			t.Errorf("body line %q came from the job's working directory", l)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a command from the working directory's name ran")
	}
}
