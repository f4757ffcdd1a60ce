package lifecycle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/lifecycle/settings"
)

// TestLoadRepair: a ladder names a check of the build or a reason token a
// check declares; VIGIL_REPAIR turns [repair]
// on or off over the file, and a bad value names the variable.
func TestLoadRepair(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "vigil.toml")
	write := func(body string) {
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("[repair]\nenabled = true\n[repair.ladders]\nt-fail = [\"reset\"]\nBudgetExpired = [\"reboot\"]\nNoSuchToken = [\"reboot\"]\n")
	_, errs := settings.LoadSettings(conf, true, env{}.lookup, nil)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "\n")
	if len(errs) != 1 || !strings.Contains(all, `vigil.toml:6: repair.ladders.NoSuchToken: invalid value: "NoSuchToken" is neither a check`) {
		t.Errorf("errors:\n%s", all)
	}

	write("[repair]\nenabled = true\n")
	if s, errs := settings.LoadSettings(conf, true, env{"VIGIL_REPAIR": "false"}.lookup, nil); len(errs) != 0 || s.Repair.Enabled {
		t.Errorf("VIGIL_REPAIR=false: enabled %v, errors %v", s.Repair.Enabled, errs)
	}
	_, errs = settings.LoadSettings(conf, true, env{"VIGIL_REPAIR": "maybe"}.lookup, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `environment VIGIL_REPAIR="maybe"`) {
		t.Errorf("VIGIL_REPAIR=maybe: %v", errs)
	}
}
