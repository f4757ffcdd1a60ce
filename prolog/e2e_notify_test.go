package main

import (
	"context"
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

	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// hookSink is a webhook receiver that keeps every body posted to it.
type hookSink struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (h *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.bodies = append(h.bodies, m)
	h.mu.Unlock()
}

// take returns the bodies posted since the last take.
func (h *hookSink) take() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.bodies
	h.bodies = nil
	return b
}

func event(b map[string]any) string {
	v, _ := b["vigil"].(map[string]any)
	s, _ := v["event"].(string)
	return s
}

// TestE2ENotifyAndGuard: on a 5-node cluster whose disk check is set
// impossibly high, the first two drains each post a message (and mail the
// admin through Slurm's MailProg), the third posts one summary, the fourth
// nothing. Then, with [guard] max_share = 0.4, the third node is not
// drained: its report and textfile say guarded, it exits 0, and one alert
// is posted; the fourth node is not drained either and posts nothing.
func TestE2ENotifyAndGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	prolog := slurmtest.BuildBinary(t, "github.com/vigil-hpc/vigil/prolog")
	hooks := &hookSink{}
	srv := httptest.NewServer(hooks)
	defer srv.Close()
	scratch := t.TempDir()
	secrets := adminSecrets(t, srv.URL)
	conf := func(burst int, maxShare float64) string {
		return fmt.Sprintf("[checks.disk]\npath = %q\nsize_mib = 4\nmin_write_mib_s = 1000000\n"+
			"[notify]\nsecrets_file = %q\nmail = [\"hpc-admins\"]\nburst = %d\n[guard]\nmax_share = %v\nmin_nodes = 1\n",
			scratch, secrets, burst, maxShare)
	}
	s := newSetup(t, `checks = ["disk"]
budget = "60s"
check_timeout = "20s"`, conf(2, 0))
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 5})
	run := func(node string) (string, int) {
		out, code, _ := runAs(t, c, prolog, "--node", node, "--config", s.config)
		return out, code
	}

	// Rate limit: burst 2.
	wantEvents := []string{"drain", "drain", "summary", ""}
	for i, node := range c.Nodes[:4] {
		out, code := run(node)
		if code != 1 {
			t.Fatalf("%s: exit %d, want 1:\n%s", node, code, out)
		}
		if n := nodeState(t, c, node); !n.Drained() || !strings.HasPrefix(n.Reason, "vigil: disk ") {
			t.Fatalf("%s: %+v, want drained for disk", node, n)
		}
		got := hooks.take()
		switch {
		case wantEvents[i] == "" && len(got) != 0:
			t.Errorf("drain %d (%s) posted %v, want nothing", i+1, node, got)
		case wantEvents[i] != "" && (len(got) != 1 || event(got[0]) != wantEvents[i]):
			t.Errorf("drain %d (%s) posted %v, want one %s", i+1, node, got, wantEvents[i])
		case i == 0:
			text, _ := got[0]["text"].(string)
			v := got[0]["vigil"].(map[string]any)
			checks, _ := v["checks"].([]any)
			if !strings.Contains(text, "vigil drained "+node+" for disk") || v["node"] != node || len(checks) != 1 {
				t.Errorf("first message: %v", got[0])
			} else if ch := checks[0].(map[string]any); ch["threshold"] != 1000000.0 || ch["value"] == nil {
				t.Errorf("first message's check: %v, want value and threshold 1000000", ch)
			}
			t.Logf("message: %s", text)
		case i == 2:
			text, _ := got[0]["text"].(string)
			want := fmt.Sprintf("3 nodes drained by vigil for disk within 1h0m0s: %s,%s,%s;", c.Nodes[0], c.Nodes[1], c.Nodes[2])
			if !strings.HasPrefix(text, want) {
				t.Errorf("summary %q, want it to start with %q", text, want)
			}
			t.Logf("summary: %s", text)
		}
	}
	mails, _ := os.ReadFile(c.MailLog)
	if n := strings.Count(string(mails), "hpc-admins"); n != 3 {
		t.Errorf("%d mails to hpc-admins through Slurm's MailProg, want 3:\n%s", n, mails)
	}

	// The guard: resume every node, allow 40% of 5 nodes (2).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, node := range c.Nodes[:4] {
		if _, err := c.Client().Resume(ctx, node); err != nil {
			t.Fatal(err)
		}
		c.WaitNode(t, node, 10*time.Second, func(n slurm.Node) bool { return !n.Drained() })
	}
	s.write(t, `checks = ["disk"]
budget = "60s"
check_timeout = "20s"`, conf(5, 0.4))
	for _, node := range c.Nodes[:2] {
		if out, code := run(node); code != 1 {
			t.Fatalf("%s: exit %d, want 1:\n%s", node, code, out)
		}
	}
	if got := hooks.take(); len(got) != 2 {
		t.Errorf("two drains below the guard posted %d messages, want 2", len(got))
	}
	for i, node := range c.Nodes[2:4] {
		out, code := run(node)
		if code != 0 {
			t.Errorf("guarded %s: exit %d, want 0 (the job runs):\n%s", node, code, out)
		}
		if n := nodeState(t, c, node); n.Drained() {
			t.Errorf("guarded %s was drained: %+v", node, n)
		}
		got := hooks.take()
		if i == 0 && (len(got) != 1 || event(got[0]) != "guard") {
			t.Errorf("the first guarded node posted %v, want one guard alert", got)
		}
		if i == 1 && len(got) != 0 {
			t.Errorf("the second guarded node posted %v, want nothing (one alert per check per window)", got)
		}
		if i == 0 && len(got) == 1 {
			t.Logf("alert: %s", got[0]["text"])
		}
		rep := lastReport(t, s, node)
		if len(rep.Guarded) != 1 || rep.Guarded[0].Check != "disk" || rep.Guarded[0].Drained != 3 || rep.Guarded[0].Nodes != 5 {
			t.Errorf("%s's report: guarded %+v, want disk 3 of 5", node, rep.Guarded)
		}
	}
	prom, _ := os.ReadFile(s.textfile)
	if !strings.Contains(string(prom), `vigil_guard_active{mode="prolog",check="disk"} 1`) {
		t.Errorf("textfile lacks vigil_guard_active for disk:\n%s", prom)
	}
}

// lastReport is the newest report of node.
func lastReport(t *testing.T, s e2eSetup, node string) report.Report {
	t.Helper()
	var last report.Report
	for _, r := range s.readReports(t) {
		if r.Node == node && r.Start.After(last.Start) {
			last = r
		}
	}
	if last.Node == "" {
		t.Fatalf("no report of %s in %s", node, s.reports)
	}
	return last
}

// adminSecrets writes the admins' [notify] secrets file (root only) that
// names url as their webhook, and returns its path.
func adminSecrets(t *testing.T, url string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secrets.toml")
	if err := os.WriteFile(p, []byte(fmt.Sprintf("[notify]\nwebhook_url = %q\n", url)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
