package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
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
		mode         decide.Mode
		e            env
		want         string
	}{
		{"pass", `checks = ["t-pass"]`, decide.ModeProlog, nil, `vigil_node_verdict{mode="prolog",status="pass"} 1`},
		{"fail", `checks = ["t-pass", "t-fail"]`, decide.ModeProlog, nil,
			`vigil_check_status{mode="prolog",check="t-fail",device="gpu0",reason="Broken",status="fail"} 1`},
		{"unknown", `checks = ["t-unknown"]`, decide.ModeHealth, nil, `vigil_node_verdict{mode="health",status="unknown"} 1`},
		{"not applicable", `checks = ["net-connect"]`, decide.ModeHealth, nil, `vigil_node_verdict{mode="health",status="pass"} 1`},
		{"escaped labels", `checks = ["t-odd"]`, decide.ModeEpilog, nil,
			`vigil_check_status{mode="epilog",check="t-odd",device="gpu\"0\\1\nx",reason="Odd\"Reason\\",status="fail"} 1`},
		{"budget expired", "checks = [\"t-hang\", \"t-pass\"]\nbudget = \"1s\"\non_budget_expiry = \"fail\"", decide.ModeProlog,
			env{"SLURM_JOB_ID": "77"}, `vigil_budget_expired{mode="prolog"} 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, conf := setup(t, tt.prolog)
			runWith(t, conf, tt.mode, &fakeSlurm{node: idle}, tt.e, nil)
			prom := readTextfile(t, dir, tt.mode)
			if !strings.Contains(prom, tt.want+"\n") {
				t.Errorf("lacks %s:\n%s", tt.want, prom)
			}
			promtest.CheckMetrics(t, tt.name, []byte(prom))
		})
	}
	t.Run("invalid config", func(t *testing.T) {
		dir, conf := setup(t, `checks = ["t-pass"]`)
		runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: idle}, nil, nil) // says where records go
		body, err := os.ReadFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(conf, append(body, "bugdet = \"1m\"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: idle}, nil, nil)
		prom := readTextfile(t, dir, decide.ModeProlog)
		if !strings.Contains(prom, `vigil_config_valid{mode="prolog"} 0`+"\n") || strings.Contains(prom, "check=") {
			t.Errorf("textfile:\n%s", prom)
		}
		promtest.CheckMetrics(t, "invalid config", []byte(prom))
	})
}

// readTextfile reads mode's textfile in dir.
func readTextfile(t *testing.T, dir string, mode decide.Mode) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, report.TextfileName(string(mode))))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestE2ETextfileThroughNodeExporter: a failing prolog, then a passing
// epilog a moment later, write their own textfiles into one directory that
// still holds the shared textfile of an earlier version; the prolog
// removes it, and the real node_exporter's textfile collector serves both
// runs' series on loopback, once each.
func TestE2ETextfileThroughNodeExporter(t *testing.T) {
	dir, conf := setup(t, `checks = ["t-pass", "t-fail"]`)
	old, err := os.ReadFile(filepath.Join("..", "report", "testdata", "shared-textfile-v1.prom"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, report.SharedTextfileName), old, 0o644); err != nil {
		t.Fatal(err)
	}
	fs := &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}
	out := runWith(t, conf, decide.ModeProlog, fs, nil, nil)
	if out.ExitCode != decide.ExitFail {
		t.Fatalf("prolog exit %d", out.ExitCode)
	}
	if notes := strings.Join(out.Report.Notes, "\n"); !strings.Contains(notes, "removed "+filepath.Join(dir, report.SharedTextfileName)) {
		t.Errorf("the report does not say the shared textfile went:\n%s", notes)
	}
	conf2 := filepath.Join(dir, "epilog.toml")
	body, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf2, []byte(strings.Replace(string(body), `"t-pass", "t-fail"`, `"t-pass"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	runWith(t, conf2, decide.ModeEpilog, &fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, nil, nil)

	ne := promtest.StartNodeExporter(t, dir)
	samples := ne.Scrape(t)
	if errs := promtest.Find(samples, "node_textfile_scrape_error"); len(errs) != 1 || errs[0].Value != 0 {
		t.Fatalf("node_textfile_scrape_error %v\n%s", errs, ne.Log())
	}
	var files []string
	for _, s := range promtest.Find(samples, "node_textfile_mtime_seconds") {
		files = append(files, filepath.Base(s.Labels["file"]))
	}
	if slices.Sort(files); !slices.Equal(files, []string{"vigil-epilog.prom", "vigil-prolog.prom"}) {
		t.Errorf("node_exporter read %v", files)
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
	if got := promtest.Find(samples, "vigil_config_valid", "mode", "health"); len(got) != 0 {
		t.Errorf("the shared textfile's series outlived it: %v", got)
	}
}

// TestDeprecatedTextfileKey: [prolog] textfile, the one file that all
// modes shared before, still works: the mode's own file goes into its
// directory and the old file goes away (a mode's own file never does).
// Set together with textfile_dir it is a config error naming textfile_dir.
func TestDeprecatedTextfileKey(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("..", "report", "testdata", "shared-textfile-v1.prom"))
	if err != nil {
		t.Fatal(err)
	}
	idle := slurm.Node{Name: "n1", State: "IDLE"}
	write := func(t *testing.T, dir, keys string) string {
		t.Helper()
		conf := filepath.Join(dir, "vigil.toml")
		body := fmt.Sprintf("[prolog]\nreport_dir = %q\nrun_dir = %q\nchecks = [\"t-pass\"]\n%s\n",
			filepath.Join(dir, "reports"), filepath.Join(dir, "run"), keys)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return conf
	}
	t.Run("alone", func(t *testing.T) {
		dir := t.TempDir()
		metrics := filepath.Join(dir, "metrics")
		legacy := filepath.Join(metrics, "node-vigil.prom")
		if err := os.MkdirAll(metrics, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{legacy, legacy + ".lock"} {
			if err := os.WriteFile(p, old, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		conf := write(t, dir, fmt.Sprintf("textfile = %q", legacy))
		out := runWith(t, conf, decide.ModeEpilog, &fakeSlurm{node: idle}, nil, nil)
		if !out.Report.Config.Valid {
			t.Fatalf("config invalid: %v", out.Report.Config.Errors)
		}
		if prom := readTextfile(t, metrics, decide.ModeEpilog); !strings.Contains(prom, `vigil_config_valid{mode="epilog"} 1`) {
			t.Errorf("textfile:\n%s", prom)
		}
		names, _ := filepath.Glob(filepath.Join(metrics, "*"))
		if len(names) != 1 {
			t.Errorf("metrics directory holds %v, want the epilog's file alone", names)
		}
		if notes := strings.Join(out.Report.Notes, "\n"); !strings.Contains(notes, "removed "+legacy) {
			t.Errorf("notes:\n%s", notes)
		}
	})
	t.Run("names a mode's own file", func(t *testing.T) {
		dir := t.TempDir()
		epilogs := filepath.Join(dir, "vigil-epilog.prom")
		if err := os.WriteFile(epilogs, old, 0o644); err != nil {
			t.Fatal(err)
		}
		conf := write(t, dir, fmt.Sprintf("textfile = %q", epilogs))
		runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: idle}, nil, nil)
		if b, err := os.ReadFile(epilogs); err != nil || !bytes.Equal(b, old) {
			t.Errorf("the prolog touched the epilog's file (%v)", err)
		}
		readTextfile(t, dir, decide.ModeProlog)
	})
	t.Run("by flag", func(t *testing.T) {
		dir := t.TempDir()
		conf := write(t, dir, "")
		flagged := filepath.Join(t.TempDir(), "vigil.prom")
		runWith(t, conf, decide.ModeHealth, &fakeSlurm{node: idle}, nil, func(o *Options) { o.Flags = map[string]string{"textfile": flagged} })
		readTextfile(t, filepath.Dir(flagged), decide.ModeHealth)
	})
	t.Run("with textfile_dir", func(t *testing.T) {
		dir := t.TempDir()
		conf := write(t, dir, fmt.Sprintf("textfile = %q\ntextfile_dir = %q", filepath.Join(dir, "vigil.prom"), dir))
		out := runWith(t, conf, decide.ModeProlog, &fakeSlurm{node: idle}, nil, nil)
		errs := strings.Join(out.Report.Config.Errors, "\n")
		if out.Report.Config.Valid || !strings.Contains(errs, "prolog.textfile:") || !strings.Contains(errs, "set textfile_dir alone") {
			t.Fatalf("config %+v", out.Report.Config)
		}
	})
}
