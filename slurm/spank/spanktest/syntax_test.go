package spanktest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionSyntax runs the plugin's own syntax checks (built with the
// VIGIL_SPANK_SELFTEST driver, no Slurm needed) over the values sbatch
// accepts and refuses before any policy is consulted.
func TestOptionSyntax(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc not found: the SPANK plugin needs it (apt-get install gcc)")
	}
	bin := filepath.Join(t.TempDir(), "selftest")
	src := filepath.Join(spankDir(t), "vigil_spank.c")
	if out, err := exec.Command("gcc", "-Wall", "-Wextra", "-Werror", "-DVIGIL_SPANK_SELFTEST", "-o", bin, src).CombinedOutput(); err != nil {
		if strings.Contains(string(out), "spank.h") {
			t.Fatalf("<slurm/spank.h> not found (apt-get install libslurm-dev):\n%s", out)
		}
		t.Fatalf("building the syntax driver: %v\n%s", err, out)
	}
	for _, tc := range []struct{ opt, val, want string }{
		{"vigil-checks", "disk", "ok"},
		{"vigil-checks", "disk,gpu-count,row-remap", "ok"},
		{"vigil-checks", "none", "ok"},
		{"vigil-checks", "none,disk", "error: 'none' cannot be combined with check names"},
		{"vigil-checks", "disk,,xid", "error: empty check name"},
		{"vigil-checks", "Disk", "error: check names are lower-case letters, digits, '-', '_' or '.' (got 'D')"},
		{"vigil-checks", "", "error: a value is required"},
		{"vigil-timing", "before", "ok"},
		{"vigil-timing", "after-requeue", "ok"},
		{"vigil-timing", "later", "error: want 'before' or 'after-requeue'"},
		{"vigil-hang-time", "2m", "ok 120.000"},
		{"vigil-hang-time", "30", "ok 1800.000"},
		{"vigil-hang-time", "1.5", "ok 90.000"},
		{"vigil-hang-time", "1h30m", "ok 5400.000"},
		{"vigil-hang-time", "250ms", "ok 0.250"},
		{"vigil-hang-time", "off", "ok"},
		{"vigil-hang-time", "0", "error: must be positive"},
		{"vigil-hang-time", "-5m", `error: want minutes ("30"), a duration ("90s", "2h") or "off"`},
		{"vigil-hang-time", "2x", `error: want minutes ("30"), a duration ("90s", "2h") or "off"`},
		{"vigil-hang-time", "9000h", "error: longer than a year"},
		{"vigil-hang-action", "notify", "ok"},
		{"vigil-hang-action", "cancel", "ok"},
		{"vigil-hang-action", "requeue", "ok"},
		{"vigil-hang-action", "none", "ok"},
		{"vigil-hang-action", "drain", "error: want 'notify' (or 'none'), 'cancel' or 'requeue'"},
	} {
		t.Run(tc.opt+"="+tc.val, func(t *testing.T) {
			out, _ := exec.Command(bin, tc.opt, tc.val).CombinedOutput()
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Fatalf("--%s=%s: %q, want %q", tc.opt, tc.val, got, tc.want)
			}
		})
	}
}
