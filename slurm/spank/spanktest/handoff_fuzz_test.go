package spanktest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var (
	fuzzBinOnce sync.Once
	fuzzBin     string
)

// handoffKeys are the variables the hand-off carries (handoff_vars' names).
var handoffKeys = []string{"VIGIL_HANG_DETECT_TIME", "VIGIL_HANG_ACTION", "VIGIL_NOTIFY", "VIGIL_WEBHOOK_URL",
	"SLURM_CONF", "SLURM_CLUSTER_NAME", "SLURM_JOB_USER", "SLURM_JOB_WORK_DIR", "VIGIL_JOB_STDOUT",
	"SLURM_JOB_PARTITION", "SLURM_JOB_NODELIST", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES", "SLURM_RESTART_COUNT"}

// FuzzHandoffReader feeds arbitrary hand-off files to the plugin's reader
// (the selftest driver, built once). Every variable it yields must be one
// the hand-off carries and must be a whole line of the file: no part of a
// line ever becomes a variable of its own.
func FuzzHandoffReader(f *testing.F) {
	f.Add("VIGIL_HANG_ACTION=notify\nSLURM_JOB_USER=u\n")
	f.Add("SLURM_JOB_WORK_DIR=" + longDir() + "\nVIGIL_NOTIFY=mail\n")
	f.Add("SLURM_JOB_WORK_DIR=/" + strings.Repeat("a", 2040) + "LD_PRELOAD=/tmp/x.so\n")
	f.Add("LD_PRELOAD=/tmp/x.so\n=\n\n=x\nVIGIL_NOTIFY\n")
	f.Add("SLURM_JOB_USER=u")
	f.Fuzz(func(t *testing.T, file string) {
		fuzzBinOnce.Do(func() {
			dir, err := os.MkdirTemp("", "vigil-spank-fuzz")
			if err != nil {
				t.Fatal(err)
			}
			fuzzBin = buildSelftest(t, dir)
		})
		if fuzzBin == "" {
			t.Fatal("the selftest driver did not build")
		}
		path := filepath.Join(t.TempDir(), "job1-n1.env")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		got, _ := handoffVars(t, fuzzBin, path)
		lines := strings.Split(file, "\n")
		for _, v := range got {
			if v == "" {
				continue
			}
			k, _, _ := strings.Cut(v, "=")
			if !slices.Contains(handoffKeys, k) {
				t.Fatalf("variable %.80q is not one the hand-off carries", v)
			}
			if !slices.Contains(lines, v) {
				t.Fatalf("variable %.80q is not a whole line of the file", v)
			}
		}
	})
}
