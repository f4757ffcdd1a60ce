package spanktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// jobHook is the job's webhook: it records the bodies POSTed to it.
type jobHook struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []notice.PrologFailure
}

func (h *jobHook) received() []notice.PrologFailure {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notice.PrologFailure(nil), h.bodies...)
}

func newJobHook(t *testing.T) *jobHook {
	h := &jobHook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m notice.PrologFailure
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("job webhook got %q: %v", b, err)
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, m)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// TestE2ESpankNotify: --vigil-webhook with a URL outside [policy] webhooks
// is refused by sbatch; an allowed one, with --vigil-notify=mail,webhook,
// reaches the job's steps and the watcher the plugin starts, and a 2-node
// job whose second node fails a check makes exactly one POST to the job's
// webhook and one mail through MailProg, naming the node, the check and
// the reason.
func TestE2ESpankNotify(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	hook := newJobHook(t)
	dir := sharedDir(t)
	so := buildPlugin(t, dir, slurmtest.Flavour{Name: "host"}.Include())
	prolog := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	watcher := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/watcher")

	policy := fmt.Sprintf("[policy]\nnotify = [\"mail\", \"webhook\"]\nwebhooks = [%q]\n", hook.URL+"/services/")
	nodeConf := func(node string, fail bool) string {
		extra := ""
		if fail {
			extra = "[checks.gpu-count]\nexpected = 1\n"
		}
		return fmt.Sprintf("[prolog]\nsuite = \"health\"\nchecks = [\"gpu-count\"]\nbudget = \"60s\"\ncheck_timeout = \"20s\"\n"+
			"textfile = \"\"\nreport_dir = %q\nrun_dir = %q\nslurm_bin_dir = %q\nresult_dir = \"workdir\"\n%s%s",
			filepath.Join(dir, "reports"), filepath.Join(dir, "run-"+node), slurmBinDir(t), extra, policy)
	}
	cfg := filepath.Join(dir, "vigil.toml")
	if err := os.WriteFile(cfg, []byte(nodeConf("all", false)), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "prolog.sh")
	script := fmt.Sprintf("#!/bin/sh\nexport VIGIL_STATE_DIR=%s/state-$SLURMD_NODENAME\nexec %s --config %s/$SLURMD_NODENAME.toml\n", dir, prolog, dir)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	plugstack := fmt.Sprintf("required %s config=%s prolog=%s watcher=%s watch=auto state_dir=%s\n",
		so, cfg, prolog, watcher, filepath.Join(dir, "state"))
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 2, Prolog: wrapper, PrologFlags: "Alloc,Contain", PlugStack: plugstack})
	// The second node in sorted order fails its check.
	second := max(c.Nodes[0], c.Nodes[1])
	for _, n := range c.Nodes {
		if err := os.WriteFile(filepath.Join(dir, n+".toml"), []byte(nodeConf(n, false)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.Restart(t)

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct{ opt, want string }{
			{"--vigil-webhook=https://evil.example/x/secret", "vigil: --vigil-webhook=https://evil.example/x/secret: webhook https://evil.example/… is not one this cluster allows ([policy] webhooks; ask the admins to add it)"},
			{"--vigil-notify=pager", `vigil: --vigil-notify=pager: want a comma-separated list of "mail" and "webhook", or "none"`},
		} {
			out, err := c.Command(t, "sbatch", tc.opt, "--wrap=true")
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("sbatch %s: %v\n%s\nwant a refusal containing %q", tc.opt, err, out, tc.want)
			}
		}
	})

	url := hook.URL + "/services/T1/secret"
	opts := []string{"--vigil-notify=mail,webhook", "--vigil-webhook=" + url}
	t.Run("the choice reaches the steps and the watcher", func(t *testing.T) {
		job := c.Sbatch(t, "echo \"N=$VIGIL_NOTIFY W=$VIGIL_WEBHOOK_URL\"\nsleep 4\n", opts...)
		log := watcherLog(t, c, job, "vigil-watch started")
		for _, want := range []string{"mail=true", "job_webhook=", strings.TrimPrefix(hook.URL, "http://") + "/…"} {
			if !strings.Contains(log, want) {
				t.Errorf("watcher log lacks %q", want)
			}
		}
		if strings.Contains(log, "secret") {
			t.Errorf("the watcher log shows the job's webhook path")
		}
		c.WaitJob(t, job, 30*time.Second, "COMPLETED")
		if out := c.JobOutput(job); !strings.Contains(out, "N=mail,webhook W="+url) {
			t.Errorf("the job's step saw %q, want VIGIL_NOTIFY and VIGIL_WEBHOOK_URL", out)
		}
		if got := hook.received(); len(got) != 0 {
			t.Errorf("a passing job posted %+v", got)
		}
	})

	t.Run("a failing node tells the job's user once", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, second+".toml"), []byte(nodeConf(second, true)), 0o644); err != nil {
			t.Fatal(err)
		}
		job := c.Sbatch(t, "sleep 20\n", append([]string{"-N", "2"}, opts...)...)
		if !waitFor(60*time.Second, func() bool { return len(hook.received()) > 0 }) {
			t.Fatalf("no POST to the job's webhook\n%s", c.Dump(job))
		}
		time.Sleep(3 * time.Second) // room for a second message, which must not come
		got := hook.received()
		if len(got) != 1 {
			t.Fatalf("%d POSTs, want 1: %+v", len(got), got)
		}
		m := got[0]
		if m.Job != job || m.Node != second || m.Event != notice.EventPrologFailed || !m.Requeued || len(m.Failed) != 1 ||
			m.Failed[0].Check != "gpu-count" || m.Failed[0].Reason != "GPUCountMismatch" ||
			m.ResultFile != filepath.Join(c.Dir, "jobs", record.JobResultName(job, second)) {
			t.Errorf("POST %+v", m)
		}
		t.Logf("POST text: %s", m.Text)
		mail, _ := os.ReadFile(c.MailLog)
		subject := "vigil: job " + job + " requeued: " + second + " failed its checks"
		if n := strings.Count(string(mail), subject); n != 1 || !strings.Contains(string(mail), "gpu-count (GPUCountMismatch") {
			t.Errorf("mails with %q: %d, want 1 naming the check:\n%s", subject, n, mail)
		}
	})
}
