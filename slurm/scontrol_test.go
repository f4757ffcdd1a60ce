package slurm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fakeRunner replays scripted replies and records every argv.
type fakeRunner struct {
	replies []reply
	calls   [][]string
	ctxs    []context.Context
}

type reply struct {
	out string
	err error
}

func (f *fakeRunner) Run(ctx context.Context, argv []string) ([]byte, error) {
	f.calls = append(f.calls, append([]string(nil), argv...))
	f.ctxs = append(f.ctxs, ctx)
	if len(f.replies) == 0 {
		return nil, fmt.Errorf("fake runner: unexpected call %q", argv)
	}
	r := f.replies[0]
	f.replies = f.replies[1:]
	return []byte(r.out), r.err
}

const bin = "/opt/slurm/bin"

func newClient(replies ...reply) (*Client, *fakeRunner) {
	f := &fakeRunner{replies: replies}
	return &Client{Runner: f, BinDir: bin}, f
}

// nodeLine returns the real line of node name from a saved output file.
func nodeLine(t *testing.T, file, name string) string {
	t.Helper()
	for _, l := range strings.Split(string(readTestdata(t, file)), "\n") {
		if strings.HasPrefix(l, "NodeName="+name+" ") {
			return l + "\n"
		}
	}
	t.Fatalf("%s: no line for %s", file, name)
	return ""
}

func showNode(name string) []string {
	return []string{bin + "/scontrol", "show", "node", "-o", name}
}

func notFound(argv ...string) error {
	return &CommandError{Argv: argv, ExitCode: 1, Stdout: "Node x not found", Err: errors.New("exit status 1")}
}

func TestClientNode(t *testing.T) {
	c, f := newClient(reply{out: nodeLine(t, "nodes-1.txt", "cn2")})
	n, err := c.Node(context.Background(), "cn2")
	if err != nil || n.Name != "cn2" || !n.Drained() || !n.OwnedByVigil() {
		t.Fatalf("got %+v, %v", n, err)
	}
	if want := [][]string{showNode("cn2")}; !reflect.DeepEqual(f.calls, want) {
		t.Errorf("argv %q, want %q", f.calls, want)
	}
	if dl, ok := f.ctxs[0].Deadline(); !ok || time.Until(dl) > DefaultTimeout {
		t.Errorf("no default deadline on the command context")
	}

	c, _ = newClient(reply{out: "Node nosuch not found\n", err: notFound(showNode("nosuch")...)})
	if _, err := c.Node(context.Background(), "nosuch"); !errors.Is(err, ErrNoSuchNode) {
		t.Errorf("unknown node: want ErrNoSuchNode, got %v", err)
	}
	for _, bad := range []string{"", "cn[1-3]", "cn1,cn2", "a b", "x=y", "-h", "cn1\n"} {
		c, f := newClient()
		if _, err := c.Node(context.Background(), bad); !errors.Is(err, ErrBadName) || len(f.calls) != 0 {
			t.Errorf("%q: err %v, calls %q", bad, err, f.calls)
		}
	}
}

func TestClientTimeoutAndBin(t *testing.T) {
	f := &fakeRunner{replies: []reply{{out: nodeLine(t, "nodes-1.txt", "cn1")}}}
	c := &Client{Runner: f, Timeout: 5 * time.Second}
	if _, err := c.Node(context.Background(), "cn1"); err != nil {
		t.Fatal(err)
	}
	if dl, ok := f.ctxs[0].Deadline(); !ok || time.Until(dl) > 5*time.Second {
		t.Errorf("deadline %v %v, want within 5s", dl, ok)
	}
	// without BinDir: /usr/bin/scontrol when it exists, else PATH
	if got := f.calls[0][0]; !strings.HasSuffix(got, "/scontrol") || !strings.HasPrefix(got, "/") {
		t.Errorf("scontrol path %q", got)
	}
}

func TestClientEnvReachesExecRunner(t *testing.T) {
	c := &Client{Env: []string{"SLURM_CONF=/x/slurm.conf"}}
	r, ok := c.runner().(*ExecRunner)
	if !ok || !reflect.DeepEqual(r.Env, c.Env) {
		t.Fatalf("runner %#v", c.runner())
	}
	base := &ExecRunner{Env: []string{"A=1"}}
	c.Runner = base
	r = c.runner().(*ExecRunner)
	if want := []string{"A=1", "SLURM_CONF=/x/slurm.conf"}; !reflect.DeepEqual(r.Env, want) || len(base.Env) != 1 {
		t.Errorf("env %q (base %q)", r.Env, base.Env)
	}
}

func drainArgv(node, reason string) []string {
	return []string{bin + "/scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason}
}

// Drain decisions on real node states captured from Slurm 22.05.
func TestDrainOwnership(t *testing.T) {
	const reason = "vigil: GEMMBelowThreshold gpu1 300 TFLOPS < 600"
	tests := []struct {
		name, file, node string
		notOurs          bool // ErrNotOurs, nothing written
		same             bool // already drained with this very reason: nothing written
	}{
		{"idle", "nodes-1.txt", "cn1", false, false},
		{"drained by vigil: reason updated", "nodes-1.txt", "cn2", false, false},
		{"allocated drained by vigil", "nodes-2.txt", "cn1", false, false},
		{"drained by admin", "nodes-1.txt", "cn3", true, false},
		{"maintenance reservation", "nodes-1.txt", "cn4", true, false},
		{"down with reason", "nodes-1.txt", "cn5", true, false},
		{"down after reboot timeout", "nodes-10.txt", "cn1", true, false},
		{"drain+maintenance", "nodes-2.txt", "cn4", true, false},
		{"reboot requested", "nodes-3.txt", "cn1", true, false},
		{"reboot issued", "nodes-8.txt", "cn1", true, false},
		{"not responding drained by admin", "nodes-6.txt", "cn3", true, false},
		{"powering down", "nodes-4.txt", "cn5", true, false},
		{"powered down", "nodes-6.txt", "cn5", true, false},
		{"powering up", "nodes-7.txt", "cn5", true, false},
		{"powered down and down", "nodes-10.txt", "cn5", true, false},
		{"idle, just resumed (not responding)", "nodes-8.txt", "cn2", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := nodeLine(t, tt.file, tt.node)
			c, f := newClient(reply{out: line}, reply{})
			err := c.Drain(context.Background(), tt.node, reason)
			want := [][]string{showNode(tt.node)}
			if !tt.notOurs && !tt.same {
				want = append(want, drainArgv(tt.node, reason))
			}
			if tt.notOurs != errors.Is(err, ErrNotOurs) || (!tt.notOurs && err != nil) {
				t.Errorf("err %v, want ErrNotOurs %v", err, tt.notOurs)
			}
			if !reflect.DeepEqual(f.calls, want) {
				t.Errorf("argv %q, want %q", f.calls, want)
			}
		})
	}
}

func TestDrainSameReasonNoWrite(t *testing.T) {
	c, f := newClient(reply{out: nodeLine(t, "nodes-1.txt", "cn2")})
	if err := c.Drain(context.Background(), "cn2", "GEMMBelowThreshold gpu3 412 TFLOPS < 600"); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{showNode("cn2")}; !reflect.DeepEqual(f.calls, want) {
		t.Errorf("argv %q, want %q", f.calls, want)
	}
}

// Synthetic states not captured on 22.05 (older "*" form, FAIL, a leftover
// reason on a node that is not drained).
func TestDrainOwnershipSynthetic(t *testing.T) {
	real := nodeLine(t, "node-idle.txt", "cn1")
	tests := []struct {
		state, reason string
		notOurs       bool
	}{
		{"DOWN*+DRAIN", "Reason=vigil: x [root@2026-11-29T10:00:00]", true},
		{"MIXED+DRAIN+MAINTENANCE", "Reason=vigil: x [root@2026-11-29T10:00:00]", true},
		{"IDLE+POWERED_DOWN", "", true},
		{"ALLOCATED+REBOOT_REQUESTED", "", true},
		{"MIXED+FAIL", "", true},
		{"MIXED+FAILING", "", true},
		{"IDLE+POWER_DOWN", "", true},
		// a reason no state explains (24.11 keeps it after State=RESUME): a leftover
		{"IDLE", "Reason=foo [root@2026-11-29T10:00:00]", false},
		{"IDLE+DRAIN", "Reason=foo [root@2026-11-29T10:00:00]", true},
		{"IDLE+DRAIN", "", true}, // drained without reason: not ours
		{"DRAINED", "Reason=vigil: x [root@2026-11-29T10:00:00]", false},
		{"MIXED+DRAIN", "Reason=vigil: x [root@2026-11-29T10:00:00]", false},
		{"MIXED", "", false},
		{"ALLOCATED", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.state+"/"+tt.reason, func(t *testing.T) {
			line := strings.Replace(real, "State=IDLE ", "State="+tt.state+" ", 1)
			if tt.reason != "" {
				line = strings.TrimRight(line, "\n") + " " + tt.reason + "\n"
			}
			c, f := newClient(reply{out: line}, reply{})
			err := c.Drain(context.Background(), "cn1", "vigil: y")
			if errors.Is(err, ErrNotOurs) != tt.notOurs || (!tt.notOurs && err != nil) {
				t.Errorf("err %v, want ErrNotOurs %v", err, tt.notOurs)
			}
			if wrote := len(f.calls) == 2; wrote == tt.notOurs {
				t.Errorf("calls %q", f.calls)
			}
		})
	}
}

func TestDrainCannotRead(t *testing.T) {
	readErr := &CommandError{Argv: showNode("cn1"), ExitCode: 1,
		Stderr: "slurm_load_node error: Unable to contact slurm controller (connect failure)", Err: errors.New("exit status 1")}
	tests := []struct {
		name  string
		reply reply
	}{
		{"controller down", reply{err: readErr}},
		{"deadline", reply{err: &CommandError{Argv: showNode("cn1"), ExitCode: -1, Err: fmt.Errorf("killed: %w", context.DeadlineExceeded)}}},
		{"garbage", reply{out: "something else entirely\n"}},
		{"other node", reply{out: nodeLine(t, "nodes-1.txt", "cn2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newClient(tt.reply, reply{})
			err := c.Drain(context.Background(), "cn1", "x")
			if err == nil || errors.Is(err, ErrNotOurs) {
				t.Errorf("err %v", err)
			}
			if len(f.calls) != 1 {
				t.Errorf("wrote after a failed read: %q", f.calls)
			}
		})
	}
	c, _ := newClient(reply{err: &CommandError{Argv: showNode("cn1"), ExitCode: -1, Err: fmt.Errorf("killed: %w", context.DeadlineExceeded)}})
	if err := c.Drain(context.Background(), "cn1", "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline not visible through errors.Is: %v", err)
	}
}

func TestDrainWriteFails(t *testing.T) {
	c, f := newClient(reply{out: nodeLine(t, "nodes-1.txt", "cn1")},
		reply{err: &CommandError{Argv: drainArgv("cn1", "vigil: x"), ExitCode: 1, Stderr: "slurm_update error: Access/permission denied", Err: errors.New("exit status 1")}})
	err := c.Drain(context.Background(), "cn1", "x")
	var ce *CommandError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "permission denied") || len(f.calls) != 2 {
		t.Errorf("err %v calls %q", err, f.calls)
	}
}

func TestSanitizeReason(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct{ in, want string }{
		{"GEMMBelowThreshold gpu3 412 TFLOPS < 600", "vigil: GEMMBelowThreshold gpu3 412 TFLOPS < 600"},
		{"vigil: already prefixed", "vigil: already prefixed"},
		{"vigil:no space", "vigil: no space"},
		{"  two\nlines\r\n\tand  tabs ", "vigil: two lines and tabs"},
		{`say "hi"`, "vigil: say 'hi'"},
		{"", "vigil: unspecified"},
		{"vigil:", "vigil: unspecified"},
		{"bad\xffutf8", "vigil: bad?utf8"},
		{"nul\x00byte", "vigil: nul byte"},
		{"x=y State=IDLE", "vigil: x=y State=IDLE"},
		{long, "vigil: " + strings.Repeat("é", (MaxReasonLen-len("vigil: "))/2)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := SanitizeReason(tt.in)
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if len(got) > MaxReasonLen || !strings.HasPrefix(got, ReasonPrefix) {
				t.Errorf("%q: too long or unprefixed", got)
			}
		})
	}
}

func resumeArgv(node string) []string {
	return []string{bin + "/scontrol", "update", "NodeName=" + node, "State=RESUME"}
}

func TestResumeOwnership(t *testing.T) {
	tests := []struct {
		name, file, node string
		resumed, notOurs bool
	}{
		{"drained by vigil", "nodes-1.txt", "cn2", true, false},
		{"allocated drained by vigil", "nodes-2.txt", "cn1", true, false},
		{"idle, not drained", "nodes-1.txt", "cn1", false, false},
		{"drained by admin", "nodes-1.txt", "cn3", false, true},
		{"maintenance", "nodes-1.txt", "cn4", false, true},
		{"down", "nodes-1.txt", "cn5", false, true},
		{"reason overwritten by reboot", "nodes-3.txt", "cn1", false, true},
		{"reboot issued", "nodes-8.txt", "cn1", false, true},
		{"powered down", "nodes-6.txt", "cn5", false, true},
		{"drain+maintenance", "nodes-2.txt", "cn4", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newClient(reply{out: nodeLine(t, tt.file, tt.node)}, reply{})
			ok, err := c.Resume(context.Background(), tt.node)
			if ok != tt.resumed || errors.Is(err, ErrNotOurs) != tt.notOurs || (!tt.notOurs && err != nil) {
				t.Errorf("got %v, %v; want resumed %v notOurs %v", ok, err, tt.resumed, tt.notOurs)
			}
			want := [][]string{showNode(tt.node)}
			if tt.resumed {
				want = append(want, resumeArgv(tt.node))
			}
			if !reflect.DeepEqual(f.calls, want) {
				t.Errorf("argv %q, want %q", f.calls, want)
			}
		})
	}
}

func TestResumeCannotRead(t *testing.T) {
	c, f := newClient(reply{err: &CommandError{Argv: showNode("cn2"), ExitCode: 1, Stderr: "Unable to contact slurm controller", Err: errors.New("exit status 1")}})
	ok, err := c.Resume(context.Background(), "cn2")
	if ok || err == nil || errors.Is(err, ErrNotOurs) || len(f.calls) != 1 {
		t.Errorf("got %v, %v, calls %q", ok, err, f.calls)
	}
}

func TestJobCommands(t *testing.T) {
	sc := bin + "/scontrol"
	jobOut := string(readTestdata(t, "job-comment-updated.txt"))
	ctx := context.Background()
	tests := []struct {
		name string
		call func(c *Client) error
		want []string
	}{
		{"show", func(c *Client) error {
			j, err := c.Job(ctx, "3")
			if err == nil && j.Comment != "vigil: hang suspected on cn1 (io flat 600s)" {
				err = fmt.Errorf("comment %q", j.Comment)
			}
			return err
		}, []string{sc, "show", "job", "-o", "3"}},
		{"comment", func(c *Client) error { return c.SetJobComment(ctx, "3", "vigil: hung \"x\"\non cn1") },
			[]string{sc, "update", "JobId=3", "Comment=vigil: hung 'x' on cn1"}},
		{"admin comment", func(c *Client) error {
			return c.SetJobAdminComment(ctx, "3", "site note\nvigil-net:0:n1:3:n3")
		}, []string{sc, "update", "JobId=3", "AdminComment=site note vigil-net:0:n1:3:n3"}},
		{"requeue", func(c *Client) error { return c.Requeue(ctx, "12", false) }, []string{sc, "requeue", "12"}},
		{"requeuehold", func(c *Client) error { return c.Requeue(ctx, "12", true) }, []string{sc, "requeuehold", "12"}},
		{"cancel", func(c *Client) error { return c.Cancel(ctx, "12") }, []string{bin + "/scancel", "12"}},
		{"cancel array task", func(c *Client) error { return c.Cancel(ctx, "12_3") }, []string{bin + "/scancel", "12_3"}},
		{"config", func(c *Client) error {
			cfg, err := c.Config(ctx)
			if err == nil && cfg["MailProg"] != "/bin/true" {
				err = fmt.Errorf("MailProg %q", cfg["MailProg"])
			}
			return err
		}, []string{sc, "show", "config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := ""
			switch tt.name {
			case "show":
				out = jobOut
			case "config":
				out = string(readTestdata(t, "config.txt"))
			}
			c, f := newClient(reply{out: out})
			if err := tt.call(c); err != nil {
				t.Fatal(err)
			}
			if want := [][]string{tt.want}; !reflect.DeepEqual(f.calls, want) {
				t.Errorf("argv %q, want %q", f.calls, want)
			}
		})
	}
}

func TestJobErrors(t *testing.T) {
	ctx := context.Background()
	invalid := func(msg string) error {
		return &CommandError{ExitCode: 1, Stderr: msg, Err: errors.New("exit status 1")}
	}
	c, _ := newClient(reply{err: invalid(string(readTestdata(t, "job-nosuch.stderr")))})
	if _, err := c.Job(ctx, "999999"); !errors.Is(err, ErrNoSuchJob) {
		t.Errorf("show: %v", err)
	}
	c, _ = newClient(reply{err: invalid(string(readTestdata(t, "requeue-nosuch.stderr")))})
	if err := c.Requeue(ctx, "999999", false); !errors.Is(err, ErrNoSuchJob) {
		t.Errorf("requeue: %v", err)
	}
	c, _ = newClient(reply{err: invalid("slurm_update error: Access/permission denied")})
	if err := c.SetJobComment(ctx, "5", "x"); err == nil || errors.Is(err, ErrNoSuchJob) {
		t.Errorf("comment: %v", err)
	}
	for _, bad := range []string{"", "12 13", "12,13", "-1", "abc", "12_", "1_2_3", "--all"} {
		c, f := newClient()
		if err := c.Cancel(ctx, bad); !errors.Is(err, ErrBadName) || len(f.calls) != 0 {
			t.Errorf("%q: %v %q", bad, err, f.calls)
		}
	}
}

func TestNodeGresGPUs(t *testing.T) {
	for _, tt := range []struct {
		node string
		want int
	}{{"cn1", 4}, {"cn5", 0}} {
		c, f := newClient(reply{out: nodeLine(t, "nodes-1.txt", tt.node)})
		n, err := c.NodeGresGPUs(context.Background(), tt.node)
		if err != nil || n != tt.want {
			t.Errorf("%s: %d, %v; want %d", tt.node, n, err, tt.want)
		}
		if want := [][]string{showNode(tt.node)}; !reflect.DeepEqual(f.calls, want) {
			t.Errorf("argv %q", f.calls)
		}
	}
}

// envRunner is a fakeRunner that also records the environment a Client
// hands it.
type envRunner struct {
	fakeRunner
	envs [][]string
}

func (f *envRunner) RunEnv(ctx context.Context, argv, env []string) ([]byte, error) {
	f.envs = append(f.envs, append([]string(nil), env...))
	return f.Run(ctx, argv)
}

func TestClientEnvReachesEnvRunner(t *testing.T) {
	f := &envRunner{fakeRunner: fakeRunner{replies: []reply{{out: nodeLine(t, "nodes-1.txt", "cn1")}}}}
	c := &Client{Runner: f, BinDir: bin, Env: []string{"SLURM_CONF=/etc/slurm-site/slurm.conf"}}
	if _, err := c.Node(context.Background(), "cn1"); err != nil {
		t.Fatal(err)
	}
	if want := [][]string{showNode("cn1")}; !reflect.DeepEqual(f.calls, want) {
		t.Errorf("argv %q, want %q", f.calls, want)
	}
	if want := [][]string{{"SLURM_CONF=/etc/slurm-site/slurm.conf"}}; !reflect.DeepEqual(f.envs, want) {
		t.Errorf("env %q, want %q", f.envs, want)
	}
	c.Env[0] = "SLURM_CONF=changed"
	if f.envs[0][0] != "SLURM_CONF=/etc/slurm-site/slurm.conf" {
		t.Error("the runner got the client's slice, not a copy")
	}
}

// TestControllerDownFailsFast: the first command that cannot reach
// slurmctld (scontrol's real words) spends its timeout; every later
// command of the client fails at once, matching ErrControllerDown.
func TestControllerDownFailsFast(t *testing.T) {
	down := &CommandError{Argv: []string{bin + "/scontrol", "show", "node", "-o", "n1"}, ExitCode: 1,
		Stderr: "slurm_load_node error: Unable to contact slurm controller (connect failure)", Err: errors.New("exit status 1")}
	c, f := newClient(reply{err: down})
	ctx := context.Background()
	if _, err := c.Node(ctx, "n1"); !ControllerDown(err) {
		t.Fatalf("first call: %v, want the controller down", err)
	}
	err := c.Drain(ctx, "n1", "vigil: gemm GEMMBelowThreshold")
	if !errors.Is(err, ErrControllerDown) || !ControllerDown(err) || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Fatalf("second call: %v, want ErrControllerDown naming the first error", err)
	}
	if len(f.calls) != 1 {
		t.Errorf("%d commands run, want 1: %v", len(f.calls), f.calls)
	}
	other := &CommandError{ExitCode: 1, Stderr: "Invalid node name specified", Err: errors.New("exit status 1")}
	c2, f2 := newClient(reply{err: other}, reply{out: ""})
	c2.Node(ctx, "n9")
	c2.Resume(ctx, "n9")
	if ControllerDown(other) || len(f2.calls) < 2 {
		t.Errorf("another error latched the client: %v", f2.calls)
	}
}

// slowRunner is scontrol still trying an unreachable slurmctld: it
// answers only when its context ends.
type slowRunner struct{ calls int }

func (r *slowRunner) Run(ctx context.Context, argv []string) ([]byte, error) {
	r.calls++
	<-ctx.Done()
	return nil, &CommandError{Argv: argv, ExitCode: -1, Err: fmt.Errorf("signal: killed: %w", ctx.Err())}
}

// TestControllerSilentFailsFast: a scontrol killed at the client's
// timeout says whose answer it lacked, and latches the client as down.
func TestControllerSilentFailsFast(t *testing.T) {
	r := &slowRunner{}
	c := &Client{Runner: r, BinDir: bin, Timeout: 20 * time.Millisecond}
	_, err := c.Node(context.Background(), "n1")
	if !ControllerDown(err) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer from slurmctld within 20ms") {
		t.Fatalf("first call: %v, want the controller down, saying it did not answer within 20ms", err)
	}
	err = c.Drain(context.Background(), "n1", "vigil: gemm GEMMBelowThreshold")
	if !errors.Is(err, ErrControllerDown) || !strings.Contains(err.Error(), "no answer from slurmctld") {
		t.Fatalf("second call: %v, want ErrControllerDown naming the first error", err)
	}
	if r.calls != 1 {
		t.Errorf("%d commands run, want 1", r.calls)
	}
}
