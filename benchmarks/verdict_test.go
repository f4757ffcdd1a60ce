package benchmarks

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		name string
		in   []Status
		want Status
	}{
		{"empty", nil, StatusPass},
		{"all pass", []Status{StatusPass, StatusPass}, StatusPass},
		{"unknown", []Status{StatusPass, StatusUnknown}, StatusUnknown},
		{"fail wins", []Status{StatusUnknown, StatusFail, StatusPass}, StatusFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rs []Result
			for _, s := range tt.in {
				rs = append(rs, Result{Status: s})
			}
			if got := Verdict(rs); got != tt.want {
				t.Fatalf("Verdict = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestDrainReasonRoundTrip(t *testing.T) {
	tests := []struct {
		res  Result
		want string
	}{
		{Result{Check: "gpu-count", Reason: "GPUCountMismatch"}, "vigil: gpu-count GPUCountMismatch"},
		{Result{Check: "nvml-ecc", Reason: "ECCUncorrectable", Device: "gpu3"}, "vigil: nvml-ecc ECCUncorrectable gpu3"},
		{Result{Check: "disk", Device: "/scratch dir"}, "vigil: disk Failed /scratch_dir"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got := FormatDrain([]DrainEntry{EntryOf(tt.res)})
			if got != tt.want {
				t.Fatalf("FormatDrain = %q, want %q", got, tt.want)
			}
			e, ok := ParseDrain(got)
			if !ok || len(e) != 1 || e[0].Check != tt.res.Check || (tt.res.Reason != "" && e[0].Reason != tt.res.Reason) || (e[0].Device == "") != (tt.res.Device == "") {
				t.Fatalf("ParseDrain(%q) = %+v %v", got, e, ok)
			}
		})
	}
	if _, ok := ParseDrain("admin: bad fan"); ok {
		t.Error("parsed someone else's reason")
	}
}

func TestSelect(t *testing.T) {
	all, err := Select(nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Spec().Name == FaultCheckName {
			t.Fatal("fault-inject selected by default")
		}
	}
	got, err := Select([]string{FaultCheckName, "test-flaky-perf", "test-fail-health"}, []string{"test-fail-health"}, true)
	if err != nil || len(got) != 1 || got[0].Spec().Name != FaultCheckName {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := Select([]string{"nope"}, []string{"nada"}, false); !errors.Is(err, ErrUnknownCheck) {
		t.Fatalf("err = %v", err)
	}
}

func TestFormatParseDrain(t *testing.T) {
	entries := []DrainEntry{{Check: "gemm", Reason: "GEMMBelowThreshold", Device: "gpu3"}, {Check: "disk", Reason: "DiskSlow"},
		{Check: "copy", Device: "gpu1"}, {Check: "budget"}}
	s := FormatDrain(entries)
	if want := "vigil: gemm GEMMBelowThreshold gpu3 +disk:DiskSlow +copy@gpu1 +budget"; s != want {
		t.Fatalf("FormatDrain = %q, want %q", s, want)
	}
	got, ok := ParseDrain(s)
	if !ok || !slices.Equal(got, entries) {
		t.Fatalf("ParseDrain(%q) = %+v %v", s, got, ok)
	}
	if FormatDrain(nil) != "" {
		t.Error("no entries must give no reason")
	}
}

// TestParseDrainNotes: Slurm's notes after " : " and a parenthesised
// count are not entries, whether the first entry names a device or not.
func TestParseDrainNotes(t *testing.T) {
	for s, want := range map[string][]DrainEntry{
		"vigil: xid XID79 gpu3 : reboot issued : reboot complete": {{Check: "xid", Reason: "XID79", Device: "gpu3"}},
		"vigil: gpu-count GPUCountMismatch : reboot issued":       {{Check: "gpu-count", Reason: "GPUCountMismatch"}},
		"vigil: xid NeedsService gpu3 +disk:DiskSlow (XID79, 3 reboots in 7d)": {{Check: "xid", Reason: "NeedsService", Device: "gpu3"},
			{Check: "disk", Reason: "DiskSlow"}},
		"vigil: xid NeedsService (XID79, 1 reset in 7d) : reboot issued": {{Check: "xid", Reason: "NeedsService"}},
	} {
		got, ok := ParseDrain(s)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("ParseDrain(%q) = %+v %v, want %+v", s, got, ok, want)
		}
	}
}

// FuzzParseDrain feeds node reasons as scontrol prints them: whatever the
// reason, ParseDrain never panics, accepts only vigil's prefix, and what it
// parses formats back to a reason that parses to the same entries.
func FuzzParseDrain(f *testing.F) {
	for _, s := range []string{"vigil: gemm GEMMBelowThreshold gpu3", "vigil: disk DiskSlow +gemm:GEMMBelowThreshold@gpu3",
		"admin: bad fan", "vigil:", "vigil: a b c d e", "vigil: x y +", "vigil: x y +@", "vigil: x y +:@", "Prolog error"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, ok := ParseDrain(s)
		if !ok {
			return
		}
		if !strings.HasPrefix(strings.TrimSpace(s), "vigil:") || len(e) == 0 {
			t.Fatalf("ParseDrain(%q) accepted %+v", s, e)
		}
		again, ok := ParseDrain(FormatDrain(e))
		if !ok || len(again) != len(e) || again[0].Check != e[0].Check {
			t.Fatalf("round trip of %q: %+v -> %q -> %+v", s, e, FormatDrain(e), again)
		}
	})
}
