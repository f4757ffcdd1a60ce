package lifecycle

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

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// userHook records the bodies POSTed to it.
type userHook struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []notice.PrologFailure
}

func newUserHook(t *testing.T) *userHook {
	h := &userHook{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m notice.PrologFailure
		if err := json.Unmarshal(b, &m); err != nil || r.Header.Get("User-Agent") != "vigil-prolog" {
			t.Errorf("webhook got %q (%v), User-Agent %q", b, err, r.Header.Get("User-Agent"))
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, m)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *userHook) received() []notice.PrologFailure {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notice.PrologFailure(nil), h.bodies...)
}

// mailProg writes a MailProg that records its arguments (one a line) and
// its standard input, and a slurm.conf that names it.
func mailProg(t *testing.T) (slurmConf, argv, stdin string) {
	dir := t.TempDir()
	argv, stdin = filepath.Join(dir, "argv"), filepath.Join(dir, "stdin")
	prog := filepath.Join(dir, "mailprog")
	script := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" >> %s\ncat >> %s\n", argv, stdin)
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	slurmConf = filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(slurmConf, []byte("ClusterName=test\nMailProg="+prog+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return slurmConf, argv, stdin
}

// TestRunUserNotify: a node (n2, not the job's first node, which
// rewrites the comment when it starts) of a job that chose --vigil-notify=mail,webhook
// and fails a check tells the job's user once, by mail through slurm.conf's
// MailProg and by a POST to the job's webhook; not when another node's
// failure is already in the job's comment, nor for a passing node, a dry
// run, a job that chose nothing, or a URL outside [policy] webhooks.
func TestRunUserNotify(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown the result file to the job's user")
	}
	hook := newUserHook(t)
	for _, tc := range []struct {
		name, checks, comment, notify, webhook string
		dry, comments                          bool
		posts, mails                           int
	}{
		{name: "first failure", checks: `["t-fail"]`, comment: "u; vigil: checking 2 nodes", notify: "mail,webhook", comments: true, posts: 1, mails: 1},
		{name: "webhook implied", checks: `["t-fail"]`, comment: "u; vigil: checking 2 nodes", comments: true, posts: 1},
		{name: "another node first", checks: `["t-fail"]`, comment: "u; vigil: n1 failed t-fail (Broken gpu0); job requeued", notify: "mail,webhook", comments: true},
		{name: "comment off: every failing node tells", checks: `["t-fail"]`, comment: "u; vigil: n1 failed t-fail (Broken gpu0); job requeued", notify: "mail,webhook", posts: 1, mails: 1},
		{name: "passing node", checks: `["t-pass"]`, comment: "u; vigil: checking 2 nodes", notify: "mail,webhook", comments: true},
		{name: "dry run", checks: `["t-fail"]`, notify: "mail,webhook", dry: true, comments: true},
		{name: "nothing chosen", checks: `["t-fail"]`, comments: true, webhook: "-"},
		{name: "URL not allowed", checks: `["t-fail"]`, notify: "webhook", webhook: "http://127.0.0.1:1/elsewhere", comments: true},
		{name: "mail only", checks: `["t-fail"]`, notify: "mail", comments: true, mails: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(hook.received())
			results := t.TempDir()
			prolog := fmt.Sprintf("checks = %s\nresult_dir = %q\njob_comment = %v\n[policy]\nnotify = [\"mail\", \"webhook\"]\nwebhooks = [%q]\n",
				tc.checks, results, tc.comments, hook.URL+"/services/")
			_, conf := setup(t, prolog)
			slurmConf, argv, stdin := mailProg(t)
			e := jobEnv()
			e["SLURMD_NODENAME"], e["SLURM_JOB_USER"], e["SLURM_CONF"] = "n2", "alice", slurmConf
			if tc.notify != "" {
				e["SPANK_VIGIL_NOTIFY"] = tc.notify
			}
			switch tc.webhook {
			case "":
				e["SPANK_VIGIL_WEBHOOK"] = hook.URL + "/services/T1/secret"
			case "-":
			default:
				e["SPANK_VIGIL_WEBHOOK"] = tc.webhook
			}
			cs := &commentSlurm{fakeSlurm: &fakeSlurm{node: slurm.Node{Name: "n2", State: "IDLE"}}, comment: tc.comment}
			o := runWith(t, conf, decide.ModeProlog, nil, e, func(o *Options) {
				o.Node, o.Slurm, o.DryRun = "n2", cs, tc.dry
				o.Sleep = func(time.Duration) {}
			})
			got := hook.received()[before:]
			if len(got) != tc.posts {
				t.Fatalf("%d POSTs, want %d (exit %d, notes %q)", len(got), tc.posts, o.ExitCode, o.Report.Notes)
			}
			mail, _ := os.ReadFile(argv)
			body, _ := os.ReadFile(stdin)
			if n := strings.Count(string(mail), "\nalice\n"); n != tc.mails {
				t.Fatalf("%d mails (argv %q), want %d (notes %q)", n, mail, tc.mails, o.Report.Notes)
			}
			if tc.posts == 1 {
				m := got[0]
				if m.Event != notice.EventPrologFailed || m.Job != "42" || m.Node != "n2" || m.User != "alice" || !m.Requeued ||
					len(m.Failed) != 1 || m.Failed[0].Check != "t-fail" || m.Failed[0].Reason != "Broken" ||
					m.ResultFile != filepath.Join(results, "vigil-42-n2.json") ||
					m.Text != "vigil: job 42: n2 failed t-fail (Broken gpu0); the job is requeued" {
					t.Errorf("webhook body %+v", m)
				}
			}
			if tc.mails == 1 {
				wantArgv := "-s\nvigil: job 42 requeued: n2 failed its checks\nalice\n"
				if !strings.HasSuffix(string(mail), wantArgv) {
					t.Errorf("MailProg argv %q, want it to end %q", mail, wantArgv)
				}
				for _, want := range []string{"n2 failed t-fail (Broken gpu0); the job is requeued", "Check:  t-fail (Broken gpu0): gpu0 is broken",
					"Result: " + filepath.Join(results, "vigil-42-n2.json")} {
					if !strings.Contains(string(body), want) {
						t.Errorf("mail body lacks %q:\n%s", want, body)
					}
				}
			}
			if o.ExitCode != decide.ExitFail && tc.checks == `["t-fail"]` {
				t.Errorf("exit %d, want %d: notifying never changes the verdict", o.ExitCode, decide.ExitFail)
			}
			for _, n := range o.Report.Notes {
				if strings.Contains(n, "secret") {
					t.Errorf("a note shows the job's webhook path: %q", n)
				}
			}
		})
	}
}

// TestUserNotifyFailureKeepsVerdict: a webhook that refuses and a
// MailProg that fails are noted, and the node still fails the prolog.
func TestUserNotifyFailureKeepsVerdict(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) }))
	defer srv.Close()
	dir := t.TempDir()
	slurmConf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(slurmConf, []byte("MailProg=/bin/false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, conf := setup(t, fmt.Sprintf("checks = [\"t-fail\"]\n[policy]\nnotify = [\"mail\", \"webhook\"]\nwebhooks = [%q]\n", srv.URL+"/h/"))
	e := jobEnv()
	e["SLURM_JOB_USER"], e["SLURM_CONF"] = "alice", slurmConf
	e["SPANK_VIGIL_NOTIFY"], e["SPANK_VIGIL_WEBHOOK"] = "mail,webhook", srv.URL+"/h/secret"
	o := runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, e, nil)
	if o.ExitCode != decide.ExitFail {
		t.Fatalf("exit %d, want %d", o.ExitCode, decide.ExitFail)
	}
	notes := strings.Join(o.Report.Notes, "\n")
	for _, want := range []string{"the job's webhook was not told of this failure", "403", "the job's user was not mailed of this failure: mail to alice"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "secret") {
		t.Errorf("notes show the job's webhook path:\n%s", notes)
	}
}

// TestPrologFailureNamesTheIsolatedNode: the user's notice of a node cut
// off from its peers names it, the peers it could not reach and why.
func TestPrologFailureNamesTheIsolatedNode(t *testing.T) {
	rep := &report.Report{Job: "7", Node: "n3", Results: []benchmarks.Result{{Check: "net-connect", Status: benchmarks.StatusFail,
		Reason: "NetIsolated", Device: "to:n1,n2,n4",
		Message: "cannot reach n1,n2,n4 (connect timed out or failed, 2 tries of 2s); 3 nodes met without it (coordinator n1) and none could reach it; slurmd reaches it"}}}
	m := notice.NewPrologFailure(rep, "alice", "")
	if want := "vigil: job 7: n3 failed net-connect (NetIsolated to:n1,n2,n4); the job is requeued"; m.Text != want {
		t.Errorf("text %q, want %q", m.Text, want)
	}
	if body := string(m.MailBody()); !strings.Contains(body, "3 nodes met without it") || !strings.Contains(m.Subject(), "n3 failed") {
		t.Errorf("mail %q %q", m.Subject(), body)
	}
}
