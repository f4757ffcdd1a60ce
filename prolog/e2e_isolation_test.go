package main

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/policy"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// isolateNode cuts every TCP path to addr except its slurmd port, the way
// a dead or firewalled data network does while Slurm still reaches the
// node: iptables -A OUTPUT -d ADDR -p tcp ! --dport SLURMD -j DROP (on
// loopback every packet passes OUTPUT, so the node's own connects die
// too: their answers are addressed to it). The rule lives in its own
// chain; the returned function removes it, and so does the test's end.
func isolateNode(t *testing.T, addr string, slurmdPort int) func() {
	t.Helper()
	return faultChain(t, [][]string{{"-d", addr + "/32", "-p", "tcp", "!", "--dport", strconv.Itoa(slurmdPort), "-j", "DROP"}},
		[]string{"-d", addr + "/32"})
}

// blockLink drops the TCP traffic between two node addresses, both ways,
// and nothing else: one bad link whose ends are healthy.
func blockLink(t *testing.T, a, b string) func() {
	t.Helper()
	return faultChain(t, [][]string{
		{"-s", a + "/32", "-d", b + "/32", "-p", "tcp", "-j", "DROP"},
		{"-s", b + "/32", "-d", a + "/32", "-p", "tcp", "-j", "DROP"},
	}, []string{"-p", "tcp"})
}

// faultChain puts rules in a chain of their own, jumped to from OUTPUT
// for packets matching match, and returns a function that removes it all
// (also run at the test's end; running it twice is harmless).
func faultChain(t *testing.T, rules [][]string, match []string) func() {
	t.Helper()
	chain := fmt.Sprintf("VIGILT%d", rand.IntN(1e6))
	tool(t, "iptables", "-N", chain)
	done := false
	remove := func() {
		if done {
			return
		}
		done = true
		undo(t, "iptables", append(append([]string{"-D", "OUTPUT"}, match...), "-j", chain)...)
		undo(t, "iptables", "-F", chain)
		undo(t, "iptables", "-X", chain)
	}
	t.Cleanup(remove)
	for _, r := range rules {
		tool(t, "iptables", append([]string{"-A", chain}, r...)...)
	}
	tool(t, "iptables", append(append([]string{"-I", "OUTPUT"}, match...), "-j", chain)...)
	return remove
}

// resumeNode lifts a node's drain by hand and waits for it to be idle.
func resumeNode(t *testing.T, c *slurmtest.Cluster, node string) {
	t.Helper()
	if out, err := c.Command(t, "scontrol", "update", "NodeName="+node, "State=RESUME"); err != nil {
		t.Fatalf("resuming %s: %v\n%s", node, err, out)
	}
	c.WaitNode(t, node, 20*time.Second, func(n slurm.Node) bool { return n.State == "IDLE" && !n.Drained() })
}

// phaseTime is the longest net-connect duration in the job's prolog
// reports: how long the cross-node phase took on the slowest node.
func phaseTime(t *testing.T, s e2eSetup, job string) time.Duration {
	t.Helper()
	var d time.Duration
	for _, r := range nodeReports(t, s) {
		if r.Job != job || r.Mode != "prolog" {
			continue
		}
		for _, res := range r.Results {
			if res.Check == "net-connect" {
				d = max(d, res.Duration)
			}
		}
	}
	return d
}

// TestE2ENetIsolated: a 5-node cluster on per-node loopback addresses,
// 4-node jobs with net-connect. (d) All healthy: every node passes, the
// phase waits for nothing. (a) One node's data network dead (every TCP
// port blocked but slurmd's): it alone is drained, NetIsolated, the job's
// comment and the mail to its user name it, the others' reports name it
// as cut off and from where, and the job is requeued and completes on the
// four healthy nodes. (b) The same for the coordinator's node (the first
// of the job's nodes): the others meet a fallback coordinator and only it
// is drained. (c) Only the path between two nodes blocked: nobody is
// drained and the link is named. On Slurm 22.05 and 24.11.
func TestE2ENetIsolated(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurmInTurn(t, testE2ENetIsolated)
}

func testE2ENetIsolated(t *testing.T, f slurmtest.Flavour) {
	hooks := &hookSink{}
	srv := httptest.NewServer(hooks)
	defer srv.Close()
	// Every job asks to hear of a failed prolog by mail, as
	// --vigil-notify=mail does through the SPANK plugin.
	// Its nodes cut off are absent by design: every fault waits the join
	// deadline, kept at 5 s.
	c, s, _ := crossSetupJoin(t, 5, `"net-connect"`, fmt.Sprintf("[notify]\nsecrets_file = %q\n", adminSecrets(t, srv.URL)), "5s", f,
		policy.EnvSpankNotify+"="+policy.NotifyMail)

	// (d) every node healthy.
	job := c.Sbatch(t, "echo ok\n", "-N", "4")
	c.WaitJob(t, job, 40*time.Second, "COMPLETED")
	for _, n := range c.Nodes {
		if nodeState(t, c, n).Drained() {
			t.Fatalf("healthy: %s drained", n)
		}
	}
	healthy := phaseTime(t, s, job)
	t.Logf("(d) healthy 4-node job: cross-node phase %s", healthy.Round(time.Millisecond))
	if healthy <= 0 || healthy > 5*time.Second {
		t.Errorf("(d) healthy phase took %s, want well under the join deadline (5s): nobody may be waited for", healthy)
	}

	// (a) n3's data network dead.
	for _, tc := range []struct {
		name string
		node int
	}{{"(a) a member isolated", 2}, {"(b) the coordinator isolated", 0}} {
		restore := isolateNode(t, c.NodeAddrs[tc.node], c.NodePorts[tc.node])
		faulty := c.Nodes[tc.node]
		start := time.Now()
		job, comment := faultRun(t, c, s, 4, faulty, "vigil: net-connect NetIsolated to:")
		restore()
		// What the user sees in squeue -o %k: the cut-off node, and whom it
		// could not reach.
		if !strings.Contains(comment, faulty+" failed net-connect (NetIsolated to:") {
			t.Errorf("%s: job comment %q does not name the isolated node", tc.name, comment)
		}
		// What the user is mailed: one notice, naming the cut-off node.
		subject := "vigil: job " + job + " requeued: " + faulty + " failed its checks"
		var mails []string
		for _, l := range strings.Split(readFile(c.MailLog), "\n") {
			if strings.Contains(l, subject) {
				mails = append(mails, l)
			}
		}
		if len(mails) != 1 || !strings.Contains(mails[0], "Check:  net-connect (NetIsolated to:") || !strings.Contains(mails[0], "met without it") {
			t.Errorf("%s: mails %q, want one with %q naming the isolated node's check", tc.name, mails, subject)
		}
		t.Logf("%s: job comment %q; mail %q", tc.name, comment, mails)
		// Its own report, and the others': they met without it and say
		// from where none of them reached it.
		var took, others time.Duration
		for _, r := range nodeReports(t, s) {
			if r.Job != job || r.Mode != "prolog" {
				continue
			}
			for _, res := range r.Results {
				switch {
				case res.Check != "net-connect":
				case r.Node == faulty && res.Reason == "NetIsolated":
					took = res.Duration
					if !strings.Contains(res.Message, "met without it") {
						t.Errorf("%s: message %q", tc.name, res.Message)
					}
				case r.Node != faulty && strings.Contains(res.Message, "cut off, never met: "+faulty+" (unreachable from "):
					others = max(others, res.Duration)
				}
			}
		}
		t.Logf("%s: %s drained; its phase took %s, the others' %s at most (whole run %s)", tc.name, faulty,
			took.Round(time.Millisecond), others.Round(time.Millisecond), time.Since(start).Round(time.Second))
		if took == 0 {
			t.Errorf("%s: no NetIsolated result in %s's reports", tc.name, faulty)
		}
		if others == 0 {
			t.Errorf("%s: no report of the others names %s as cut off and from where", tc.name, faulty)
		}
		resumeNode(t, c, faulty)
	}

	// (c) only the path n2-n3 blocked: both ends work with the rest. Once
	// between two members (the job on n1-n4), once between the
	// coordinator and a member (the job on n2-n5).
	hooks.take() // the drain notices of (a) and (b)
	for _, on := range [][]string{c.Nodes[:4], c.Nodes[1:]} {
		restore := blockLink(t, c.NodeAddrs[1], c.NodeAddrs[2])
		job = c.Sbatch(t, "echo ok\n", "-N", "4", "-w", strings.Join(on, ","))
		c.WaitJob(t, job, 60*time.Second, "COMPLETED")
		restore()
		named := 0
		for _, r := range nodeReports(t, s) {
			if r.Job != job || r.Mode != "prolog" {
				continue
			}
			if r.Verdict == "fail" || r.Action.Kind == report.ActionDrain {
				t.Errorf("(c) %s: verdict %s, action %+v", r.Node, r.Verdict, r.Action)
			}
			for _, res := range r.Results {
				if res.Check == "net-connect" && strings.Contains(res.Message, "bad link "+c.Nodes[1]+"-"+c.Nodes[2]) {
					named++
				}
				t.Logf("(c) job on %v: %s %s %s: %s", on, r.Node, res.Check, res.Status, res.Message)
			}
		}
		if named < 2 {
			t.Errorf("(c) job on %v: the bad link %s-%s is named by %d nodes' results, want both ends", on, c.Nodes[1], c.Nodes[2], named)
		}
		// The ends' textfiles get vigil_net_bad_link with the other end as
		// its peer (the nodes here share one textfile directory, so each
		// end's report is rendered as its own textfile would be): both
		// ends when they are members; when the path to the coordinator is
		// the one blocked, the member cannot meet at all (unknown,
		// NetRendezvousFailed) and the coordinator's end has it.
		withMetric := 0
		for _, end := range [][2]string{{c.Nodes[1], c.Nodes[2]}, {c.Nodes[2], c.Nodes[1]}} {
			var prom strings.Builder
			for _, r := range nodeReports(t, s) {
				if r.Job == job && r.Mode == "prolog" && r.Node == end[0] {
					if err := report.Prometheus(&prom, &r); err != nil {
						t.Fatal(err)
					}
				}
			}
			if strings.Contains(prom.String(), fmt.Sprintf(`vigil_net_bad_link{mode="prolog",peer=%q,state=`, end[1])) {
				withMetric++
			}
		}
		if want := map[bool]int{true: 2, false: 1}[on[0] == c.Nodes[0]]; withMetric < want {
			t.Errorf("(c) job on %v: %d ends' textfiles have vigil_net_bad_link for %s-%s, want %d", on, withMetric, c.Nodes[1], c.Nodes[2], want)
		}
		// What the user and the admins see of it: the comment, one notice
		// from the coordinator (and none about drains).
		link := c.Nodes[1] + "-" + c.Nodes[2]
		if comment := c.JobInfo(t, job).Comment; !strings.Contains(comment, "bad link "+link) {
			t.Errorf("(c) job on %v: comment %q does not name the bad link", on, comment)
		}
		var notices []string
		for _, b := range hooks.take() {
			text, _ := b["text"].(string)
			notices = append(notices, event(b)+": "+text)
		}
		if len(notices) != 1 || !strings.HasPrefix(notices[0], "bad_link: ") || !strings.Contains(notices[0], link) {
			t.Errorf("(c) job on %v: notices %q, want one bad_link notice naming %s", on, notices, link)
		} else {
			t.Logf("(c) notice: %s", notices[0])
		}
		for _, n := range c.Nodes {
			if nodeState(t, c, n).Drained() {
				t.Errorf("(c) %s drained for one bad link", n)
			}
		}
	}
}

// TestE2ENetUnderLoad: (e) every node healthy while every CPU of the
// machine is kept busy by other processes: ten 4-node jobs with
// net-connect and net-bandwidth in a row, and nobody is drained. On Slurm
// 22.05 and 24.11.
func TestE2ENetUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	slurmtest.ForEachSlurmInTurn(t, testE2ENetUnderLoad)
}

func testE2ENetUnderLoad(t *testing.T, f slurmtest.Flavour) {
	c, s, _ := crossSetup(t, 5, `"net-connect", "net-bandwidth"`, f)
	for i := 0; i < 2*runtime.NumCPU(); i++ {
		spin := exec.Command("sh", "-c", "while :; do :; done")
		spin.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := spin.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-spin.Process.Pid, syscall.SIGKILL); spin.Wait() })
	}
	for i := range 10 {
		job := c.Sbatch(t, "echo ok\n", "-N", "4")
		state := c.WaitJob(t, job, 90*time.Second, "COMPLETED", "FAILED")
		for _, r := range nodeReports(t, s) {
			if r.Job != job || r.Mode != "prolog" {
				continue
			}
			for _, res := range r.Results {
				if res.Status == "fail" {
					t.Errorf("job %d (%s) under load: %s %s %s %s: %s", i, job, r.Node, res.Check, res.Reason, res.Device, res.Message)
				} else if res.Status == "unknown" || strings.Contains(res.Message, "warning") {
					t.Logf("job %d (%s): %s %s %s: %s", i, job, r.Node, res.Check, res.Status, res.Message)
				}
			}
		}
		for _, n := range c.Nodes {
			if st := nodeState(t, c, n); st.Drained() {
				t.Fatalf("job %d (%s, %s) under load: %s drained: %s", i, job, state, n, st.Reason)
			}
		}
		if state != "COMPLETED" {
			t.Fatalf("job %d (%s) ended %s", i, job, state)
		}
	}
}

// readFile is a file's text, or "" when it cannot be read.
func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}
