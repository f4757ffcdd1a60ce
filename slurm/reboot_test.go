package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// synthNode is the real idle line of node-idle.txt with another state
// and, when reason is not "", a reason.
func synthNode(t *testing.T, state, reason string) string {
	t.Helper()
	line := strings.Replace(nodeLine(t, "node-idle.txt", "cn1"), "State=IDLE ", "State="+state+" ", 1)
	if reason != "" {
		line = strings.TrimRight(line, "\n") + " Reason=" + reason + " [root@2026-11-29T10:00:00]\n"
	}
	return line
}

func TestRebootArgv(t *testing.T) {
	const reason = "vigil: xid XID79 gpu3"
	for _, tt := range []struct {
		r    Reboot
		want []string
	}{
		{Reboot{Reason: reason}, []string{"reboot", "reason=" + reason, "cn1"}},
		{Reboot{ASAP: true, NextState: NextStateDown, Reason: reason}, []string{"reboot", "ASAP", "nextstate=DOWN", "reason=" + reason, "cn1"}},
		{Reboot{ASAP: true, NextState: NextStateResume, Reason: `xid "XID79"`}, []string{"reboot", "ASAP", "nextstate=RESUME", "reason=vigil: xid 'XID79'", "cn1"}},
	} {
		if got := tt.r.Argv("cn1"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%+v: argv %q, want %q", tt.r, got, tt.want)
		}
	}
}

// TestReboot: the node is read first; a reboot is asked for only on a
// node that is vigil's or nobody's and has none pending, with the exact argv.
func TestReboot(t *testing.T) {
	const reason = "vigil: xid XID79 gpu3"
	for _, tt := range []struct {
		name, state, reason string
		want                error // nil: the reboot is asked for
	}{
		{"drained by vigil", "IDLE+DRAIN", reason, nil},
		{"idle", "IDLE", "", nil},
		{"drained by an admin", "IDLE+DRAIN", "admin: psu", ErrNotOurs},
		{"maintenance", "IDLE+DRAIN+MAINTENANCE", reason, ErrNotOurs},
		{"reboot requested", "IDLE+DRAIN+REBOOT_REQUESTED", reason, ErrRebootPending},
		{"reboot issued", "DOWN+DRAIN+REBOOT_ISSUED", reason + " : reboot issued", ErrRebootPending},
		{"back DOWN from vigil's reboot", "DOWN", reason + " : reboot issued : reboot complete", nil},
		{"DOWN for vigil's reason, no reboot", "DOWN", reason, ErrNotOurs},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, f := newClient(reply{out: synthNode(t, tt.state, tt.reason)}, reply{})
			err := c.Reboot(context.Background(), "cn1", Reboot{ASAP: true, NextState: NextStateDown, Reason: reason})
			want := [][]string{showNode("cn1")}
			if tt.want == nil {
				want = append(want, []string{bin + "/scontrol", "reboot", "ASAP", "nextstate=DOWN", "reason=" + reason, "cn1"})
			}
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err %v, want %v", err, tt.want)
			}
			if !reflect.DeepEqual(f.calls, want) {
				t.Errorf("argv %q, want %q", f.calls, want)
			}
		})
	}
	c, f := newClient()
	if err := c.Reboot(context.Background(), "cn1", Reboot{NextState: "UP"}); err == nil || len(f.calls) != 0 {
		t.Errorf("next state UP: err %v, calls %q", err, f.calls)
	}
	if err := c.Reboot(context.Background(), "cn[1-2]", Reboot{}); !errors.Is(err, ErrBadName) {
		t.Errorf("hostlist: err %v", err)
	}
}

// TestRebootedDown: only a flagless DOWN node with vigil's reason and
// Slurm's "reboot complete" note is back from vigil's own reboot; Resume
// lifts it and Drain may rewrite it.
func TestRebootedDown(t *testing.T) {
	const back = "vigil: xid XID79 gpu3 : reboot issued : reboot complete"
	for _, tt := range []struct {
		state, reason string
		want          bool
	}{
		{"DOWN", back, true},
		{"DOWN+DRAIN", back, false},
		{"DOWN+NOT_RESPONDING", back, false},
		{"DOWN+REBOOT_ISSUED", "vigil: xid XID79 gpu3 : reboot issued", false},
		{"DOWN", "vigil: xid XID79 gpu3 : reboot issued : reboot timed out", false},
		{"DOWN", "admin: psu : reboot issued : reboot complete", false},
		{"IDLE+DRAIN", "vigil: xid XID79 gpu3 : reboot issued", false},
	} {
		n, err := ParseNode([]byte(synthNode(t, tt.state, tt.reason)), "cn1")
		if err != nil {
			t.Fatal(err)
		}
		if got := n.RebootedDown(); got != tt.want {
			t.Errorf("%s %q: RebootedDown %v, want %v", tt.state, tt.reason, got, tt.want)
		}
	}
	c, f := newClient(reply{out: synthNode(t, "DOWN", back)}, reply{})
	if ok, err := c.Resume(context.Background(), "cn1"); !ok || err != nil {
		t.Errorf("Resume: %v, %v", ok, err)
	}
	if want := [][]string{showNode("cn1"), resumeArgv("cn1")}; !reflect.DeepEqual(f.calls, want) {
		t.Errorf("argv %q, want %q", f.calls, want)
	}
}

func TestRebootProgram(t *testing.T) {
	for _, tt := range []struct {
		cfg  map[string]string
		want string
		ok   bool
	}{
		{map[string]string{"RebootProgram": "/sbin/reboot"}, "/sbin/reboot", true},
		{map[string]string{"rebootprogram": "/usr/sbin/reboot -f"}, "/usr/sbin/reboot -f", true},
		{map[string]string{"RebootProgram": "(null)"}, "", false},
		{map[string]string{}, "", false},
	} {
		got, ok := RebootProgram(tt.cfg)
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("%v: %q, %v; want %q, %v", tt.cfg, got, ok, tt.want, tt.ok)
		}
	}
	cfg := ParseConfig(readTestdata(t, "config.txt"))
	if p, ok := RebootProgram(cfg); !ok || p != "/bin/true" {
		t.Errorf("the captured config's RebootProgram: %q, %v; want /bin/true", p, ok)
	}
}

// TestRebootCaptured replays a node's lines through vigil's reboot
// requests as 22.05 and 24.11 print them (TestCaptureReboot): pending and
// issued are another party's state (nothing is drained, resumed or
// rebooted again); back drained is vigil's drain with Slurm's note; back
// DOWN from nextstate=DOWN is vigil's to resume.
func TestRebootCaptured(t *testing.T) {
	const reason = "vigil: xid XID79 gpu3"
	for _, version := range []string{"22.05", "24.11"} {
		for _, tt := range []struct {
			file, state string
			flags       []string
			note        string
			heldByOther bool
			down        bool
		}{
			{"node-reboot-requested.txt", "MIXED", []string{"DRAIN", "REBOOT_REQUESTED"}, "", true, false},
			{"node-reboot-issued.txt", "DOWN", []string{"DRAIN", "REBOOT_ISSUED"}, " : reboot issued", true, false},
			{"node-reboot-back-drain.txt", "IDLE", []string{"DRAIN"}, " : reboot issued", false, false},
			{"node-reboot-back-down.txt", "DOWN", nil, " : reboot issued : reboot complete", false, true},
		} {
			t.Run(version+"/"+tt.file, func(t *testing.T) {
				b, err := os.ReadFile(filepath.Join("testdata", "scontrol", version, tt.file))
				if err != nil {
					t.Fatal(err)
				}
				name := strings.TrimPrefix(strings.Fields(string(b))[0], "NodeName=")
				n, err := ParseNode(b, name)
				if err != nil {
					t.Fatal(err)
				}
				if n.State != tt.state || !slices.Equal(n.Flags, tt.flags) || n.Reason != reason+tt.note {
					t.Errorf("parsed %s+%v %q", n.State, n.Flags, n.Reason)
				}
				if n.HeldByOthers() != tt.heldByOther || n.RebootedDown() != tt.down {
					t.Errorf("HeldByOthers %v, RebootedDown %v; want %v, %v", n.HeldByOthers(), n.RebootedDown(), tt.heldByOther, tt.down)
				}
				c, f := newClient(reply{out: string(b)}, reply{})
				err = c.Reboot(context.Background(), name, Reboot{Reason: reason})
				if again := len(f.calls) == 2; again == tt.heldByOther || tt.heldByOther && err == nil {
					t.Errorf("Reboot: %v, calls %q", err, f.calls)
				}
			})
		}
	}
}
