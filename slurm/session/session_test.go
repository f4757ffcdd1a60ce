package session

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/config"
)

// lookupIn reads the environment m.
func lookupIn(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// envRunner records the argv and environment a slurm.Client hands it and
// answers with one real `scontrol show node -o` line.
type envRunner struct {
	argv, env [][]string
}

const idleNodeLine = "NodeName=n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=4 State=IDLE ThreadsPerCore=1 Gres=(null) Reason=(null)\n"

func (r *envRunner) Run(ctx context.Context, argv []string) ([]byte, error) {
	return r.RunEnv(ctx, argv, nil)
}

func (r *envRunner) RunEnv(ctx context.Context, argv, env []string) ([]byte, error) {
	r.argv = append(r.argv, argv)
	r.env = append(r.env, env)
	return []byte(idleNodeLine), nil
}

func TestNewClientGetsSlurmConf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		toml    string
		environ map[string]string
		want    []string
	}{
		{"from the config", `slurm_conf = "/etc/slurm-site/slurm.conf"`, map[string]string{}, []string{"SLURM_CONF=/etc/slurm-site/slurm.conf"}},
		{"slurmd's SLURM_CONF wins", `slurm_conf = "/etc/slurm-site/slurm.conf"`, map[string]string{"SLURM_CONF": "/run/slurmd/slurm.conf"}, []string{"SLURM_CONF=/run/slurmd/slurm.conf"}},
		{"an empty SLURM_CONF is not set", `slurm_conf = "/etc/slurm-site/slurm.conf"`, map[string]string{"SLURM_CONF": ""}, []string{"SLURM_CONF=/etc/slurm-site/slurm.conf"}},
		{"neither: Slurm's default", ``, map[string]string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := config.Parse(strings.NewReader("[prolog]\nslurm_bin_dir = \"/opt/slurm/bin\"\n"+tc.toml+"\n"), "v.toml")
			if err != nil {
				t.Fatal(err)
			}
			p := config.DefaultProlog()
			if err := f.Decode("prolog", &p); err != nil {
				t.Fatal(err)
			}
			c := NewClient(p, lookupIn(tc.environ))
			r := &envRunner{}
			c.Runner = r
			if _, err := c.Node(context.Background(), "n1"); err != nil {
				t.Fatal(err)
			}
			if want := [][]string{{"/opt/slurm/bin/scontrol", "show", "node", "-o", "n1"}}; !reflect.DeepEqual(r.argv, want) {
				t.Errorf("argv %q, want %q", r.argv, want)
			}
			if len(r.env) != 1 || !reflect.DeepEqual(r.env[0], tc.want) {
				t.Errorf("env %q, want %q", r.env, tc.want)
			}
		})
	}
}

// access is an Access over a real slurm.Client whose commands go to r, with
// SLURM_CONF naming conf.
func access(r *envRunner, conf string, dryRun bool, deadline time.Time, notes *[]string) *Access {
	p := config.DefaultProlog()
	lookup := lookupIn(map[string]string{"SLURM_CONF": conf})
	c := NewClient(p, lookup)
	c.Runner = r
	log, _ := logtest.NewNullLogger()
	return New(p, lookup, c, dryRun, deadline, log, func(f string, a ...any) { *notes = append(*notes, f) })
}

// writeConf writes a slurm.conf with a RebootProgram and a MailProg.
func writeConf(t *testing.T) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=c\nRebootProgram=/usr/sbin/reboot\nMailProg=/usr/bin/site-mail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// TestDryRunAsksSlurmNothing: a dry run's Access has no client, reads no
// fleet and runs no scontrol; the RebootProgram comes from slurm.conf.
func TestDryRunAsksSlurmNothing(t *testing.T) {
	r := &envRunner{}
	var notes []string
	a := access(r, writeConf(t), true, time.Now().Add(time.Minute), &notes)
	if a.Client() != nil || a.FleetClient() != nil {
		t.Errorf("dry run: client %v, fleet client %v; want none", a.Client(), a.FleetClient())
	}
	if f := a.ReadFleet(context.Background()); f != nil {
		t.Errorf("dry run read the fleet: %v", f)
	}
	if p, ok := a.RebootProgram(context.Background()); p != "/usr/sbin/reboot" || !ok {
		t.Errorf("RebootProgram = %q, %v", p, ok)
	}
	if len(r.argv) != 0 {
		t.Errorf("dry run ran %q", r.argv)
	}
}

// TestFleetAndSettingsReadOnce: the cluster's nodes are read with one
// scontrol call however often they are asked for, and Slurm's settings
// come from slurm.conf without asking slurmctld.
func TestFleetAndSettingsReadOnce(t *testing.T) {
	r := &envRunner{}
	var notes []string
	conf := writeConf(t)
	a := access(r, conf, false, time.Now().Add(time.Minute), &notes)
	if a.FleetRead() != nil {
		t.Errorf("fleet before reading: %v", a.FleetRead())
	}
	for range 2 {
		if f := a.ReadFleet(context.Background()); len(f) != 1 || f[0].Name != "n1" {
			t.Fatalf("fleet %+v", f)
		}
	}
	if f := a.FleetRead(); len(f) != 1 || f[0].Name != "n1" {
		t.Errorf("FleetRead %+v", f)
	}
	if want := [][]string{{filepath.Join(config.DefaultProlog().SlurmBinDir, "scontrol"), "show", "node", "-o"}}; !reflect.DeepEqual(r.argv, want) {
		t.Errorf("argv %q, want %q", r.argv, want)
	}
	if len(r.env) != 1 || !reflect.DeepEqual(r.env[0], []string{"SLURM_CONF=" + conf}) {
		t.Errorf("env %q", r.env[0])
	}
	if p := a.MailProg(context.Background()); p != "/usr/bin/site-mail" {
		t.Errorf("MailProg %q", p)
	}
	if len(r.argv) != 1 || len(notes) != 0 {
		t.Errorf("settings: scontrol %q, notes %q", r.argv, notes)
	}
}

// TestMissingSlurmConfIsNoted: a slurm.conf scontrol cannot read is noted
// once the client is built, naming the key that fixes it.
func TestMissingSlurmConfIsNoted(t *testing.T) {
	var notes []string
	p := config.DefaultProlog()
	p.SlurmConf = "/nonexistent/slurm.conf"
	log, hook := logtest.NewNullLogger()
	a := New(p, lookupIn(nil), nil, false, time.Now().Add(time.Minute), log, func(f string, args ...any) { notes = append(notes, f) })
	if a.Client() == nil {
		t.Fatal("no client")
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "set [prolog] slurm_conf") {
		t.Errorf("notes %q", notes)
	}
	if e := hook.LastEntry(); e == nil || e.Level != logrus.ErrorLevel || e.Data["slurm_conf"] != "/nonexistent/slurm.conf" {
		t.Errorf("log %+v", e)
	}
}

// TestWithinCutsToTheDeadline: a call gets its own timeout while the
// budget allows, what is left of the budget after, and a second at least.
func TestWithinCutsToTheDeadline(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name     string
		d        time.Duration
		deadline time.Time
		want     time.Duration
	}{
		{"its own timeout", 10 * time.Second, now.Add(time.Hour), 10 * time.Second},
		{"what is left", time.Minute, now.Add(5 * time.Second), 5 * time.Second},
		{"a second at least", time.Minute, now.Add(-time.Hour), time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := Within(context.Background(), tc.d, tc.deadline)
			defer cancel()
			dl, ok := ctx.Deadline()
			if got := time.Until(dl); !ok || got > tc.want || got < tc.want-time.Second {
				t.Errorf("deadline in %v, want about %v", got, tc.want)
			}
		})
	}
}
