package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-hpc/vigil/config"
)

// TestConfigReadOnce: one run parses its config file once and decodes
// each section once, for --check-config as for a run: the settings that
// the run uses are those the one load validated.
func TestConfigReadOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vigil.toml")
	doc := `[prolog]
checks = ["fault-inject"]
budget = "5m"
[epilog]
kill_grace = "2s"
[notify]
burst = 2
[guard]
min_nodes = 1
[watch]
window = "20m"
[policy]
max_hang_time = "2h"
[vendor.nvidia]
library_paths = ["/opt/cuda/lib64"]
[checks.disk]
size_mib = 8
`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--check-config", "--config", path},
		{"--check-config", "--config", path, "--budget", "7m"},
		{"--dry-run", "--config", path, "--log-level", "error"},
	} {
		t.Run(args[0], func(t *testing.T) {
			parses, decodes := config.ReadCounts()
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != 0 {
				t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
			}
			p, d := config.ReadCounts()
			if n := p - parses; n != 1 {
				t.Errorf("%v parsed the config %d times, want once", args, n)
			}
			for _, section := range []string{"prolog", "epilog", "notify", "guard", "watch", "policy", "vendor.nvidia", "vendor.ascend", "checks.disk"} {
				if n := d[section] - decodes[section]; n != 1 {
					t.Errorf("%v decoded [%s] %d times, want once", args, section, n)
				}
			}
			for section, n := range d {
				if n-decodes[section] > 1 {
					t.Errorf("%v decoded [%s] %d times", args, section, n-decodes[section])
				}
			}
		})
	}
}
