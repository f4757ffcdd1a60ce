package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/report/promtest"
	"github.com/vigil-hpc/vigil/slurm"
)

func init() {
	// A check whose strings need escaping in the textfile.
	benchmarks.Register(check{name: "t-odd", run: func(ctx context.Context, e *benchmarks.Env) benchmarks.Result {
		return benchmarks.Result{Status: benchmarks.StatusFail, Reason: `Odd"Reason\`, Device: "gpu\"0\\1\nx",
			Message: "a \"quoted\"\nmessage", Values: []benchmarks.Value{{Device: "gpu\"0", Name: `n"}`, Value: -1e-300, Unit: `\`}}}
	}})
}

// TestTextfilesOfRealRunsPassPromtool: the textfile of each kind of run
// passes `promtool check metrics`.
func TestTextfilesOfRealRunsPassPromtool(t *testing.T) {
	idle := slurm.Node{Name: "n1", State: "IDLE"}
	tests := []struct {
		name, prolog string
		mode         Mode
		e            env
		want         string
	}{
		{"pass", `checks = ["t-pass"]`, ModeProlog, nil, `vigil_node_verdict{mode="prolog",status="pass"} 1`},
		{"fail", `checks = ["t-pass", "t-fail"]`, ModeProlog, nil,
			`vigil_check_status{mode="prolog",check="t-fail",device="gpu0",reason="Broken",status="fail"} 1`},
		{"unknown", `checks = ["t-unknown"]`, ModeHealth, nil, `vigil_node_verdict{mode="health",status="unknown"} 1`},
		{"not applicable", `checks = ["net-connect"]`, ModeHealth, nil, `vigil_node_verdict{mode="health",status="pass"} 1`},
		{"escaped labels", `checks = ["t-odd"]`, ModeEpilog, nil,
			`vigil_check_status{mode="epilog",check="t-odd",device="gpu\"0\\1\nx",reason="Odd\"Reason\\",status="fail"} 1`},
		{"budget expired", "checks = [\"t-hang\", \"t-pass\"]\nbudget = \"1s\"\non_budget_expiry = \"fail\"", ModeProlog,
			env{"SLURM_JOB_ID": "77"}, `vigil_budget_expired{mode="prolog"} 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, conf := setup(t, tt.prolog)
			runWith(t, conf, tt.mode, &fakeSlurm{node: idle}, tt.e, nil)
			prom := readTextfile(t, dir)
			if !strings.Contains(prom, tt.want+"\n") {
				t.Errorf("lacks %s:\n%s", tt.want, prom)
			}
			promtest.CheckMetrics(t, tt.name, []byte(prom))
		})
	}
	t.Run("invalid config", func(t *testing.T) {
		dir, conf := setup(t, `checks = ["t-pass"]`)
		runWith(t, conf, ModeProlog, &fakeSlurm{node: idle}, nil, nil) // says where records go
		body, err := os.ReadFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(conf, append(body, "bugdet = \"1m\"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		runWith(t, conf, ModeProlog, &fakeSlurm{node: idle}, nil, nil)
		prom := readTextfile(t, dir)
		if !strings.Contains(prom, `vigil_config_valid{mode="prolog"} 0`+"\n") || strings.Contains(prom, "check=") {
			t.Errorf("textfile:\n%s", prom)
		}
		promtest.CheckMetrics(t, "invalid config", []byte(prom))
	})
}

func readTextfile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "vigil.prom"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestE2ETextfileThroughNodeExporter: a failing prolog, then a passing
// epilog a moment later, write the one textfile; the real node_exporter's
// textfile collector serves both runs' series on loopback.
func TestE2ETextfileThroughNodeExporter(t *testing.T) {
	dir, conf := setup(t, `checks = ["t-pass", "t-fail"]`)
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	if out := runWith(t, conf, ModeProlog, fs, nil, nil); out.ExitCode != ExitFail {
		t.Fatalf("prolog exit %d", out.ExitCode)
	}
	conf2 := filepath.Join(dir, "epilog.toml")
	body, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf2, []byte(strings.Replace(string(body), `"t-pass", "t-fail"`, `"t-pass"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	runWith(t, conf2, ModeEpilog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, nil, nil)

	ne := promtest.StartNodeExporter(t, dir)
	samples := ne.Scrape(t)
	if errs := promtest.Find(samples, "node_textfile_scrape_error"); len(errs) != 1 || errs[0].Value != 0 {
		t.Fatalf("node_textfile_scrape_error %v\n%s", errs, ne.Log())
	}
	for _, want := range [][]string{
		{"vigil_node_verdict", "mode", "prolog", "status", "fail"},
		{"vigil_node_verdict", "mode", "epilog", "status", "pass"},
		{"vigil_check_status", "mode", "prolog", "check", "t-fail", "device", "gpu0", "reason", "Broken", "status", "fail"},
		{"vigil_check_status", "mode", "prolog", "check", "t-pass", "status", "pass"},
		{"vigil_check_status", "mode", "epilog", "check", "t-pass", "status", "pass"},
		{"vigil_action", "mode", "prolog", "action", "drain", "done", "true"},
		{"vigil_config_valid", "mode", "epilog"},
	} {
		got := promtest.Find(samples, want[0], want[1:]...)
		if len(got) != 1 || got[0].Value != 1 {
			t.Errorf("%v: got %v", want, got)
		}
	}
	if got := promtest.Find(samples, "vigil_check_status", "mode", "epilog", "check", "t-fail"); len(got) != 0 {
		t.Errorf("the epilog did not run t-fail, yet: %v", got)
	}
}
