package lifecycle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/policy"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// TestJobChoices covers the job's --vigil-checks and --vigil-timing
// (SPANK_VIGIL_* from vigil's SPANK plugin) applied within [policy].
func TestJobChoices(t *testing.T) {
	idle := slurm.Node{Name: "n1", State: "IDLE"}
	drainedForFail := slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "vigil: t-fail Broken gpu0"}
	drainedForPass := slurm.Node{Name: "n1", State: "IDLE", Flags: []string{"DRAIN"}, Reason: "vigil: t-pass Broken gpu0"}
	for _, tc := range []struct {
		name      string
		config    string // [prolog] lines, then any [policy]
		spank     env
		node      slurm.Node
		ran       []string
		skipped   string
		note      string
		wantCalls []string
		dropped   []report.Dropped
		// stays: vigil's drain stays, so the prolog fails (the job runs elsewhere).
		stays bool
	}{
		{name: "the job's subset runs", config: `checks = ["t-pass", "t-unknown"]`,
			spank: env{"SPANK_VIGIL_CHECKS": "t-pass"}, node: idle, ran: []string{"t-pass"},
			note: "checks chosen by the job (--vigil-checks): t-pass"},
		{name: "checks outside the policy are dropped", config: "checks = [\"t-pass\", \"t-unknown\"]\n[policy]\nchecks = [\"t-pass\"]",
			spank: env{"SPANK_VIGIL_CHECKS": "t-fail,t-pass"}, node: idle, ran: []string{"t-pass"},
			note:    "policy: ignoring checks the job asked for that are unknown or not allowed: t-fail",
			dropped: []report.Dropped{{Check: "t-fail", Reason: "not one users may choose ([policy] checks)"}}},
		{name: "a check the admin skips is dropped", config: "checks = [\"t-pass\", \"t-unknown\"]\nskip = [\"t-unknown\"]\n[policy]\nchecks = [\"t-pass\", \"t-unknown\"]",
			spank: env{"SPANK_VIGIL_CHECKS": "t-unknown,t-pass"}, node: idle, ran: []string{"t-pass"},
			note:    "checks chosen by the job (--vigil-checks): t-pass",
			dropped: []report.Dropped{{Check: "t-unknown", Reason: "removed by [prolog] skip"}}},
		{name: "a check the prolog skips is not the job's choice", config: "checks = [\"t-pass\", \"t-fail\"]\nskip = [\"t-fail\"]",
			spank: env{"SPANK_VIGIL_CHECKS": "t-fail"}, node: idle, ran: []string{"t-pass"},
			note:    "policy: none of the checks the job asked for may run: running the configured checks",
			dropped: []report.Dropped{{Check: "t-fail", Reason: "not one the prolog runs ([prolog] checks; others need [policy] checks)"}}},
		{name: "every chosen check skipped by the admin: the configured checks run", config: "checks = [\"t-pass\", \"t-fail\"]\nskip = [\"t-fail\"]\n[policy]\nchecks = [\"t-fail\"]",
			spank: env{"SPANK_VIGIL_CHECKS": "t-fail"}, node: idle, ran: []string{"t-pass"},
			note:    "none of the checks the job asked for may run here: running the configured checks",
			dropped: []report.Dropped{{Check: "t-fail", Reason: "removed by [prolog] skip"}}},
		{name: "nothing allowed left: the configured checks run", config: "checks = [\"t-pass\", \"t-unknown\"]\n[policy]\nchecks = [\"t-pass\"]",
			spank: env{"SPANK_VIGIL_CHECKS": "t-fail"}, node: idle, ran: []string{"t-pass", "t-unknown"},
			note:    "policy: none of the checks the job asked for may run: running the configured checks",
			dropped: []report.Dropped{{Check: "t-fail", Reason: "not one users may choose ([policy] checks)"}}},
		{name: "skip allowed", config: "checks = [\"t-fail\"]\n[policy]\nallow_skip = true",
			spank: env{"SPANK_VIGIL_CHECKS": "none"}, node: idle, skipped: "--vigil-checks=none"},
		{name: "skip not allowed", config: `checks = ["t-pass"]`,
			spank: env{"SPANK_VIGIL_CHECKS": "none"}, node: idle, ran: []string{"t-pass"},
			note: "policy: the job asked to skip the checks"},
		{name: "timing after-requeue on a first start", config: `checks = ["t-pass"]`,
			spank: env{"SPANK_VIGIL_TIMING": "after-requeue"}, node: idle, skipped: "after-requeue"},
		{name: "malformed value ignored", config: `checks = ["t-pass"]`,
			spank: env{"SPANK_VIGIL_TIMING": "later"}, node: idle, ran: []string{"t-pass"},
			note: "policy: ignoring SPANK_VIGIL_TIMING"},
		{name: "no resume for a check the job left out", config: `checks = ["t-pass", "t-fail"]`,
			spank: env{"SPANK_VIGIL_CHECKS": "t-pass"}, node: drainedForFail, ran: []string{"t-pass"},
			note: "n1 stays drained: t-fail not run by this prolog (the job chose its checks)", stays: true},
		{name: "a check removed from the config keeps its drain", config: `checks = ["t-pass"]`,
			spank: env{}, node: drainedForFail, ran: []string{"t-pass"},
			note: "n1 stays drained: t-fail not run by this prolog", stays: true},
		{name: "the job's choice lifts the check it ran", config: `checks = ["t-pass", "t-fail"]`,
			spank: env{"SPANK_VIGIL_CHECKS": "t-pass"}, node: drainedForPass, ran: []string{"t-pass"}, wantCalls: []string{"resume n1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, conf := setup(t, tc.config)
			e := env{"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "n1"}
			for k, v := range tc.spank {
				e[k] = v
			}
			fs := &fakeSlurm{node: tc.node}
			out := runWith(t, conf, decide.ModeProlog, fs, e, nil)
			var ran []string
			for _, r := range out.Report.Results {
				ran = append(ran, r.Check)
			}
			if !slices.Equal(ran, tc.ran) {
				t.Errorf("ran %v, want %v (notes %q)", ran, tc.ran, out.Report.Notes)
			}
			if !strings.Contains(out.Report.Skipped, tc.skipped) || (tc.skipped == "") != (out.Report.Skipped == "") {
				t.Errorf("skipped %q, want %q", out.Report.Skipped, tc.skipped)
			}
			if tc.note != "" && !slices.ContainsFunc(out.Report.Notes, func(n string) bool { return strings.Contains(n, tc.note) }) {
				t.Errorf("notes %q lack %q", out.Report.Notes, tc.note)
			}
			if !slices.Equal(out.Report.Dropped, tc.dropped) {
				t.Errorf("dropped %+v, want %+v", out.Report.Dropped, tc.dropped)
			}
			var table strings.Builder
			report.Table(&table, out.Report)
			for _, d := range tc.dropped {
				if want := "dropped:      " + d.Check + ": " + d.Reason; !strings.Contains(table.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, table.String())
				}
			}
			if got := fs.mutations(); strings.Join(got, "|") != strings.Join(tc.wantCalls, "|") {
				t.Errorf("calls %q, want %q", got, tc.wantCalls)
			}
			wantCode, wantKind := decide.ExitOK, out.Report.Action.Kind
			if tc.stays {
				wantCode, wantKind = decide.ExitFail, report.ActionStay
			}
			if out.ExitCode != wantCode || out.Report.Action.Kind == report.ActionDrain || out.Report.Action.Kind != wantKind {
				t.Errorf("exit %d action %+v, want %d and no drain (stays %v)", out.ExitCode, out.Report.Action, wantCode, tc.stays)
			}
		})
	}
}

// TestShippedPolicyRefusesWhatThePrologDoesNotRun: vigil-prolog
// policy-check over the real check registry and the shipped [policy]
// refuses a check the admin's [prolog] does not run (the model training,
// the admin's command, the fault injection) and allows one it runs.
func TestShippedPolicyRefusesWhatThePrologDoesNotRun(t *testing.T) {
	reg := PolicyRegistry()
	var def, other string
	for _, c := range benchmarks.Infos() {
		switch {
		case c.Default && def == "":
			def = c.Name
		case !c.Default && other == "" && c.Name != benchmarks.FaultCheckName:
			other = c.Name
		}
	}
	if def == "" || other == "" {
		t.Fatalf("the registry has no default check or no other check: %v", benchmarks.Names())
	}
	dir := t.TempDir()
	shipped := filepath.Join(dir, "shipped.toml")
	listed := filepath.Join(dir, "listed.toml")
	if err := os.WriteFile(shipped, []byte("[prolog]\nbudget = \"10m\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(listed, []byte(fmt.Sprintf("[prolog]\nchecks = [%q]\n", other)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		config, checks string
		code           int
	}{
		{shipped, def, policy.ExitAllowed},
		{shipped, other, policy.ExitRefused},
		{shipped, benchmarks.FaultCheckName, policy.ExitRefused},
		{listed, other, policy.ExitAllowed},
		{listed, def, policy.ExitRefused},
	} {
		var out, errb bytes.Buffer
		code := policy.CheckCommand([]string{"--config", tc.config, "--checks=" + tc.checks}, &out, &errb, reg)
		if code != tc.code {
			t.Errorf("%s --checks=%s: exit %d (%s%s), want %d", filepath.Base(tc.config), tc.checks, code, out.String(), errb.String(), tc.code)
		}
		if code == policy.ExitRefused && !strings.Contains(out.String(), "the checks the prolog runs") {
			t.Errorf("refusal does not say why: %q", out.String())
		}
	}
}
