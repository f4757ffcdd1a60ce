package baseline

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/report"
)

// smallFleet is four nodes over eight slots: a false gemm drain on g01;
// on g02 an ecc drain, a GPU reset and the same failure again, after which
// the GPU is swapped with g03's gpu0 and fails ecc in g03 too (a lemon);
// on g04 a disk drain that passes after a reboot.
func smallFleet() *synth {
	s := &synth{rng: rand.New(rand.NewPCG(3, 5))}
	g01, g02, g03, g04 := newBox("g01"), newBox("g02"), newBox("g03"), newBox("g04")
	s.prologs(g01, 0, 8, 2)
	s.add(g01, "prolog", at(2, 0), prologChecks, drain(gemm2), gemm2)
	s.add(g01, "health", at(2, 30), []string{"gemm"}, resume())

	ecc1, ecc0 := fault{"ecc", "gpu1", "ECCUncorrectable"}, fault{"ecc", "gpu0", "ECCUncorrectable"}
	s.prologs(g02, 0, 2)
	s.add(g02, "prolog", at(2, 0), prologChecks, withRemedy(drain(ecc1), "reset", "gpu1", at(2, 1)), ecc1)
	s.add(g02, "health", at(2, 30), healthChecks, drain(ecc1), ecc1)
	s.prologs(g03, 0, 4)
	g02.gpus[1], g03.gpus[0] = g03.gpus[0], g02.gpus[1]
	s.prologs(g02, 5, 8)
	s.add(g03, "prolog", at(5, 0), prologChecks, drain(ecc0), ecc0)
	s.add(g03, "health", at(6, 0), healthChecks, drain(ecc0), ecc0)
	s.add(g03, "health", at(7, 0), healthChecks, drain(ecc0), ecc0)

	disk := fault{"disk", "/scratch", "DiskSlow"}
	s.prologs(g04, 0, 8, 3)
	s.add(g04, "prolog", at(3, 0), prologChecks, drain(disk), disk)
	s.add(g04, "health", at(3, 10), healthChecks[:1], withRemedy(stay(disk), "reboot", "", at(3, 11)))
	s.add(g04, "health", at(3, 30), healthChecks, resume())
	return s
}

// TestFleetGolden: `vigil-baseline fleet` over the small fleet's report
// directory prints testdata/fleet.golden (go test ./baseline -update
// rewrites it); a file that is not a report is skipped and named.
func TestFleetGolden(t *testing.T) {
	dir := t.TempDir()
	for _, r := range smallFleet().reps {
		if _, err := report.WriteJSON(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Command([]string{"fleet", "--model", "H100", dir}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	golden(t, "fleet.golden", out.Bytes())
	if !strings.Contains(errb.String(), "notes.json: not a report") {
		t.Errorf("stderr: %s", errb.String())
	}
}

// TestFleetCommandLine: the fleet subcommand's flags and errors.
func TestFleetCommandLine(t *testing.T) {
	dir := t.TempDir()
	for _, r := range smallFleet().reps {
		if _, err := report.WriteJSON(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"help", []string{"fleet", "--help"}, ExitOK, "usage: vigil-baseline fleet", ""},
		{"no directory", []string{"fleet"}, ExitUsage, "", "no REPORT_DIR given"},
		{"bad window", []string{"fleet", "--lemon-window", "soon", dir}, ExitUsage, "", `"soon": want a duration`},
		{"negative rule", []string{"fleet", "--lemon-nodes", "-1", dir}, ExitUsage, "", "must be 0 or more"},
		{"missing directory", []string{"fleet", filepath.Join(dir, "absent")}, ExitError, "", "no such file"},
		{"empty directory", []string{"fleet", t.TempDir()}, ExitError, "", "no reports"},
		{"flags after the directory, rules off", []string{"fleet", dir, "--lemon-nodes", "0", "--lemon-episodes", "0"}, ExitOK,
			"lemon rule: none\n", ""},
		{"one node is enough, days", []string{"fleet", "--lemon-nodes=1", "--lemon-window=2d", dir}, ExitOK,
			"lemon rule: failed in >= 1 nodes, or >= 3 failure episodes within 2d\n", ""},
		{"hours", []string{"fleet", "--lemon-window=36h", dir}, ExitOK, "within 36h0m0s\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Command(tt.args, &out, &errb)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errb.String(), tt.err) {
				t.Errorf("exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
			}
		})
	}
}
