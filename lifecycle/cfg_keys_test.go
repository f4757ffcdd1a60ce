package lifecycle

import (
	"bytes"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
)

// TestPrologTypoListsValidKeys: an unknown key in [prolog] (or [epilog])
// is an error naming the file, line and key, followed by the section's
// valid keys.
func TestPrologTypoListsValidKeys(t *testing.T) {
	_, conf := setup(t, "bugdet = \"10m\"\n\n[epilog]\nrechek = true")
	var out bytes.Buffer
	if code := settings.CheckConfig(&out, conf, true, env{}.lookup, nil); code != decide.ExitConfig {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	for _, want := range []string{
		"vigil.toml:5: prolog.bugdet: unknown key (keys of [prolog]: checks, skip, suite, check_timeout, timeouts, budget, retries,",
		"slurm_bin_dir, slurm_conf, slurm_timeout, keep_reports, job_comment, result_dir",
		"vigil.toml:8: epilog.rechek: unknown key (keys of [epilog]: kill_processes, kill_grace, recheck)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--check-config said:\n%s\nwant %q", out.String(), want)
		}
	}
}
