package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
)

// TestBudgetLongerThanTimeoutWarns: a check whose own budget ([checks.NAME]
// budget, the model checks') is longer than its timeout in the prolog is
// cut by the timeout first and fails with "the budget ran out": a valid
// config, but --check-config warns, naming both keys and what to change.
// A [prolog.timeouts] entry that covers the budget silences it, and the
// shipped settings give no warning.
func TestBudgetLongerThanTimeoutWarns(t *testing.T) {
	for _, tt := range []struct {
		name, conf string
		want       string // "": no warning
	}{
		{"shipped", "", ""},
		{"budget over check_timeout", "check_timeout = \"2m\"\n[checks.model-gpt-multinode]\n",
			"# WARNING [checks.model-gpt-multinode] budget 5m0s is longer than the check's timeout, [prolog] check_timeout = 2m0s: " +
				"the timeout ends the check first, and it fails with \"the budget ran out\"; raise [prolog] check_timeout or lower the budget"},
		{"budget over its timeouts entry", "[prolog.timeouts]\nmodel-gpt = \"70s\"\n[checks.model-gpt]\nbudget = \"90s\"\n",
			"# WARNING [checks.model-gpt] budget 1m30s is longer than the check's timeout, [prolog] timeouts.model-gpt = 1m10s"},
		{"a timeouts entry covers it", "check_timeout = \"2m\"\n[prolog.timeouts]\nmodel-gpt-multinode = \"6m\"\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "vigil.toml")
			if err := os.WriteFile(conf, []byte("[prolog]\n"+tt.conf), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			none := func(string) (string, bool) { return "", false }
			if code := settings.CheckConfig(&out, conf, true, none, nil); code != decide.ExitOK {
				t.Fatalf("exit %d:\n%s", code, out.String())
			}
			got := strings.Count(out.String(), "# WARNING [checks.model")
			switch {
			case tt.want == "" && got > 0:
				t.Errorf("--check-config warned:\n%s", out.String())
			case tt.want != "" && (got != 1 || !strings.Contains(out.String(), tt.want)):
				t.Errorf("--check-config said:\n%s\nwant one warning %q", out.String(), tt.want)
			}
		})
	}
}
