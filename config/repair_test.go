package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRepairDefaults: off, valid, and the shipped ladders follow the XID
// catalogue (reset the GPU: reset, then reboot; reboot the node: reboot).
func TestRepairDefaults(t *testing.T) {
	r := DefaultRepair()
	if err := r.Validate(Empty("vigil.toml")); err != nil {
		t.Fatalf("default [repair]: %v", err)
	}
	if r.Enabled {
		t.Error("the default [repair] is on")
	}
	for token, want := range map[string][]string{
		"XID79": {RemedyReboot}, "XID48": {RemedyReset, RemedyReboot}, "XID95": {RemedyReset, RemedyReboot},
		"RowRemapPending": {RemedyReset, RemedyReboot},
	} {
		if got := r.Ladders[token]; !slices.Equal(got, want) {
			t.Errorf("ladder of %s: %q, want %q", token, got, want)
		}
	}
	if _, ok := r.Ladders["XID13"]; ok {
		t.Error("XID13 (restart the application) has a ladder")
	}
}

func TestRepairErrorsNameKeyAndLine(t *testing.T) {
	doc := `[repair]
max_remedies = 0
window = "30s"
reboot_nextstate = "up"
reset_timeout = "1h"
[repair.ladders]
XID79 = ["kick"]
[repair.reset]
nvidia = ["nvidia-smi", "-r"]
intel = ["/bin/true"]
ascend = []
`
	f, err := Parse(strings.NewReader(doc), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	r := DefaultRepair()
	if err := f.Decode("repair", &r); err != nil {
		t.Fatal(err)
	}
	msg := r.Validate(f).Error()
	for _, want := range []string{
		"vigil.toml:2: repair.max_remedies: invalid value: 0: want 1 to 100",
		"vigil.toml:3: repair.window:",
		`vigil.toml:4: repair.reboot_nextstate: invalid value: "up": want drain, down, resume`,
		"vigil.toml:5: repair.reset_timeout:",
		`vigil.toml:7: repair.ladders.XID79: invalid value: "kick"`,
		`vigil.toml:9: repair.reset.nvidia: invalid value: "nvidia-smi": want an absolute path`,
		`vigil.toml:10: repair.reset.intel: invalid value: "intel" is not a vendor`,
		"vigil.toml:11: repair.reset.ascend: invalid value: empty",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
}

// TestRepairLaddersMerge: a file's ladder replaces the shipped one of its
// key and leaves the others; an empty one turns it off; a reason's ladder
// wins over its check's.
func TestRepairLaddersMerge(t *testing.T) {
	f, err := Parse(strings.NewReader("[repair]\nwindow = \"1h\"\n[repair.ladders]\nXID79 = []\nxid = [\"reset\"]\n"), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	r := DefaultRepair()
	if err := f.Decode("repair", &r); err != nil {
		t.Fatal(err)
	}
	if time.Duration(r.Window) != time.Hour || r.Ladder("xid", "XID79") != nil && len(r.Ladder("xid", "XID79")) != 0 {
		t.Errorf("XID79's ladder %q", r.Ladder("xid", "XID79"))
	}
	if got := r.Ladder("xid", "XID48"); !slices.Equal(got, []string{RemedyReset, RemedyReboot}) {
		t.Errorf("XID48's ladder %q, want the shipped one", got)
	}
	if got := r.Ladder("xid", "XID13"); !slices.Equal(got, []string{RemedyReset}) {
		t.Errorf("XID13 falls back to xid's ladder, got %q", got)
	}
}
