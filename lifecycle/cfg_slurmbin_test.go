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

// TestCheckConfigSlurmBinDir: a [prolog] slurm_bin_dir without an
// executable scontrol makes the config invalid, in --check-config and in
// every run, naming the key and line (or the flag); one with it is valid.
func TestCheckConfigSlurmBinDir(t *testing.T) {
	good := t.TempDir()
	if err := os.WriteFile(filepath.Join(good, "scontrol"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := t.TempDir()
	if err := os.WriteFile(filepath.Join(notExec, "scontrol"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		name  string
		dir   string
		flags map[string]string
		want  string // "" for valid
	}{
		{"nonexistent", "/nonexistent/bin", nil, `vigil.toml:5: prolog.slurm_bin_dir: invalid value: "/nonexistent/bin": no scontrol there`},
		{"no scontrol", empty, nil, "vigil.toml:5: prolog.slurm_bin_dir: invalid value: \"" + empty + "\": no scontrol there"},
		{"not executable", notExec, nil, "is not an executable program"},
		{"relative", "bin", nil, "want an absolute path"},
		{"flag", good, map[string]string{"slurm_bin_dir": "/nonexistent/bin"}, `flag --slurm-bin-dir="/nonexistent/bin": invalid value: "/nonexistent/bin": no scontrol there`},
		{"valid", good, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, conf := setup(t, "slurm_bin_dir = \""+tc.dir+"\"")
			var out bytes.Buffer
			code := settings.CheckConfig(&out, conf, true, env{}.lookup, tc.flags)
			if tc.want == "" {
				if code != decide.ExitOK {
					t.Fatalf("exit %d:\n%s", code, out.String())
				}
				return
			}
			if code != decide.ExitConfig || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("exit %d, want %d and %q in:\n%s", code, decide.ExitConfig, tc.want, out.String())
			}
		})
	}
}
