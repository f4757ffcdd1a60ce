package xid

import (
	"slices"
	"testing"
)

// TestCatalogue: sorted, one entry per code, every entry complete, and
// the codes the issue names (every code the two former copies knew, and
// the newer ones) present.
func TestCatalogue(t *testing.T) {
	all := slices.Clone(catalogue)
	if !slices.IsSortedFunc(all, func(a, b Info) int { return a.Code - b.Code }) {
		t.Fatal("catalogue not sorted by code")
	}
	for i, e := range all {
		if i > 0 && all[i-1].Code == e.Code {
			t.Errorf("XID %d listed twice", e.Code)
		}
		if e.Mnemonic == "" || e.What == "" || e.Remedy.String() == "unknown" {
			t.Errorf("XID %d incomplete: %+v", e.Code, e)
		}
		if got, ok := Lookup(e.Code); !ok || got != e {
			t.Errorf("Lookup(%d) = %+v, %v", e.Code, got, ok)
		}
	}
	want := []int{8, 13, 31, 32, 38, 43, 45, 46, 48, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 68, 69, 73, 74, 76, 78, 79, 80, 81,
		92, 94, 95, 119, 120, 121, 122, 123, 136, 137, 139, 140, 143, 144, 145, 146, 147, 148, 149, 150, 151, 154, 155, 156}
	for _, c := range want {
		if _, ok := Lookup(c); !ok {
			t.Errorf("XID %d missing", c)
		}
	}
	if _, ok := Lookup(999); ok {
		t.Error("999 is NVML's unknown XID, not a catalogue code")
	}
}

// TestFaults pins the classification against NVIDIA's immediate actions.
func TestFaults(t *testing.T) {
	faults := []int{46, 48, 56, 57, 58, 59, 61, 62, 64, 65, 73, 74, 78, 79, 81, 95, 119, 120, 122, 123, 136, 140, 143,
		144, 145, 146, 147, 148, 149, 150, 151, 154, 155, 156}
	if got := Faults(); !slices.Equal(got, faults) {
		t.Errorf("Faults() = %v\nwant      %v", got, faults)
	}
	for code, r := range map[int]Remedy{
		13: RemedyRestartApp, 31: RemedyRestartApp, 43: RemedyNone, 45: RemedyNone, 48: RemedyResetGPU, 63: RemedyNone,
		68: RemedyRestartApp, 69: RemedyRestartApp, 74: RemedyCheckFabric, 79: RemedyRebootNode, 92: RemedyNone,
		94: RemedyRestartApp, 121: RemedyNone, 137: RemedyNone, 151: RemedyRebootNode, 154: RemedyAsNamed,
	} {
		if i, _ := Lookup(code); i.Remedy != r {
			t.Errorf("XID %d: remedy %q, want %q", code, i.Remedy, r)
		}
	}
}

// TestAppError: the XIDs of an application's failed GPU work are
// RESTART_APP ones other than a contained ECC error; a fault, a follow-up
// (45) and an unknown code are not.
func TestAppError(t *testing.T) {
	for code, want := range map[int]bool{13: true, 31: true, 94: false, 79: false, 48: false, 45: false, 9999: false} {
		if got := AppError(code); got != want {
			t.Errorf("AppError(%d) = %v, want %v", code, got, want)
		}
	}
}
