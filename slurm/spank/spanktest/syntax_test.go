package spanktest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionSyntax runs the little C that handles option values (built
// with the VIGIL_SPANK_SELFTEST driver, no Slurm needed). The plugin parses
// no value itself: it refuses only what it cannot carry and hands the rest
// to vigil-prolog policy-check, whose syntax rules are tested with the
// parsers (policy.TestOptionSyntax); then it shows policy-check's reason
// without repeating the option.
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
		{"vigil-checks", "", "error: a value is required"},
		{"vigil-checks", strings.Repeat("d", 1024), "error: value too long"},
		{"vigil-checks", "Disk", "ok"},       // policy-check's to refuse
		{"vigil-timing", "later", "ok"},      // policy-check's to refuse
		{"vigil-hang-time", "2x", "ok"},      // policy-check's to refuse
		{"vigil-hang-time", "9000h", "ok"},   // the policy's bound refuses it
		{"vigil-hang-action", "drain", "ok"}, // policy-check's to refuse
		{"vigil-hang-time", "off", "ok"},
		{"vigil-notify", "mail,webhook", "ok"},
		{"vigil-notify", "pager", "ok"},                    // policy-check's to refuse
		{"vigil-webhook", "https://hooks.example/a", "ok"}, // the policy's list decides
		{"vigil-webhook", "", "error: a value is required"},
	} {
		t.Run(tc.opt+"="+tc.val, func(t *testing.T) {
			out, _ := exec.Command(bin, tc.opt, tc.val).CombinedOutput()
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Fatalf("--%s=%s: %q, want %q", tc.opt, tc.val, got, tc.want)
			}
		})
	}
	for _, tc := range []struct{ opt, val, msg, want string }{
		{"vigil-hang-time", "2x", `--vigil-hang-time=2x: want minutes ("30"), a duration ("90s", "2h") or "off"`, `want minutes ("30"), a duration ("90s", "2h") or "off"`},
		{"vigil-hang-time", "2h", "hang time 2h0m0s is longer than the longest allowed, 1h0m0s ([policy] max_hang_time)", "hang time 2h0m0s is longer than the longest allowed, 1h0m0s ([policy] max_hang_time)"},
		{"vigil-checks", "x", "--vigil-timing=x: other", "--vigil-timing=x: other"},
	} {
		t.Run("reason/"+tc.opt+"="+tc.val, func(t *testing.T) {
			out, _ := exec.Command(bin, "reason", tc.opt, tc.val, tc.msg).CombinedOutput()
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Fatalf("reason(--%s=%s, %q) = %q, want %q", tc.opt, tc.val, tc.msg, got, tc.want)
			}
		})
	}
}
