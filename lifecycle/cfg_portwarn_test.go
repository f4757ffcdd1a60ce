package lifecycle

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
)

// TestCheckConfigWarnsOfUserPorts: --check-config warns of a
// [checks.net-connect] port or data_port of 1024 or above (any user can
// bind it before the prolog), naming the key and what to use instead; the
// shipped ports (742, and 0 for the data) give no warning. A warning
// leaves the config valid.
func TestCheckConfigWarnsOfUserPorts(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, section string
		want          []string
	}{
		{"shipped", "", nil},
		{"port", "[checks.net-connect]\nport = 7421\n", []string{
			"# WARNING [checks.net-connect] port = 7421 is 1024 or above: any user's process can bind it before the prolog"}},
		{"data_port", "[checks.net-connect]\ndata_port = 40000\n", []string{
			"# WARNING [checks.net-connect] data_port = 40000 is 1024 or above"}},
		{"both", "[checks.net-connect]\nport = 7421\ndata_port = 40000\n", []string{
			"# WARNING [checks.net-connect] port = 7421", "# WARNING [checks.net-connect] data_port = 40000"}},
		{"privileged", "[checks.net-connect]\nport = 1023\ndata_port = 1000\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "vigil.toml")
			body := "[prolog]\nslurm_bin_dir = \"" + bin + "\"\nreport_dir = \"" + filepath.Join(dir, "reports") +
				"\"\ntextfile_dir = \"" + dir + "\"\nrun_dir = \"" + filepath.Join(dir, "run") + "\"\n\n" + tc.section
			if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if code := settings.CheckConfig(&out, conf, true, env{}.lookup, nil); code != decide.ExitOK {
				t.Fatalf("exit %d:\n%s", code, out.String())
			}
			got := out.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("no %q in:\n%s", w, got)
				}
			}
			if n := strings.Count(got, "# WARNING"); n != len(tc.want) {
				t.Errorf("%d warnings, want %d:\n%s", n, len(tc.want), got)
			}
			if len(tc.want) > 0 && !strings.Contains(got, "port below 1024") {
				t.Errorf("the warning does not say what to do:\n%s", got)
			}
		})
	}
}
