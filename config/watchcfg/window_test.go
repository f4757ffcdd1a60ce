package watchcfg

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

// TestParseWindow: the one parser of the hang window, for every spelling
// ([watch] window aside, which is a TOML duration): --window,
// VIGIL_HANG_DETECT_TIME and --vigil-hang-time.
func TestParseWindow(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "30", want: 30 * time.Minute},
		{in: " 45 ", want: 45 * time.Minute},
		{in: "1.5", want: 90 * time.Second},
		{in: "90s", want: 90 * time.Second},
		{in: "1h30m", want: 90 * time.Minute},
		{in: " 2m ", want: 2 * time.Minute},
		{in: "1e3", want: 1000 * time.Minute},
		{in: "0", bad: true},
		{in: "-3", bad: true},
		{in: "-3m", bad: true},
		{in: "-5m", bad: true},
		{in: "", bad: true},
		{in: "soon", bad: true},
		{in: "abc", bad: true},
		{in: "NaN", bad: true},
		{in: "Inf", bad: true},
		{in: "1e300", bad: true},
		{in: "off", bad: true}, // "off" is the callers' business, not a window
	} {
		t.Run(tc.in, func(t *testing.T) {
			d, err := ParseWindow(tc.in)
			if tc.bad {
				if !errors.Is(err, ErrBadWindow) || d != 0 {
					t.Fatalf("ParseWindow(%q) = %v, %v; want ErrBadWindow", tc.in, d, err)
				}
				return
			}
			if err != nil || d != tc.want {
				t.Fatalf("ParseWindow(%q) = %v, %v; want %v", tc.in, d, err, tc.want)
			}
		})
	}
	for _, s := range []string{"0", "-5m"} {
		if _, err := ParseWindow(s); !errors.Is(err, ErrWindowNotPositive) {
			t.Errorf("ParseWindow(%q) = %v, want ErrWindowNotPositive", s, err)
		}
	}
}

// FuzzParseWindow: errors wrap ErrBadWindow and return 0; an accepted
// window is positive, and printed as a duration it reads back the same.
func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"30", "1.5", "90s", "1h30m", " 2m ", "0", "-5m", "1e3", "NaN", "-Inf", "Inf", "off", "", "0x1p-2",
		"1_000", "153722867.28", "2562047h47m16.854775807s", "9223372036.854775807s", "0.0000000001", "1µs", ".5m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseWindow(s)
		if err != nil {
			if !errors.Is(err, ErrBadWindow) || d != 0 {
				t.Fatalf("ParseWindow(%q) = %v with error %v (want 0 and ErrBadWindow)", s, d, err)
			}
			return
		}
		if d <= 0 {
			t.Fatalf("ParseWindow(%q) = %v, accepted a window that is not positive", s, d)
		}
		if again, err := ParseWindow(d.String()); err != nil || again != d {
			t.Fatalf("ParseWindow(%q) = %v, which reads back as %v, %v", s, d, again, err)
		}
	})
}

// TestOverrides: the flags set the keys they name, and only those; the
// window reads minutes as its one parser does.
func TestOverrides(t *testing.T) {
	s := Default()
	s.Window, s.Action = 20*time.Minute, ActionCancel
	vals := config.Values{"window": "2", "period": "10s", "io_bytes": "1"}
	if err := Overrides().Apply(&s, vals, config.FromFlag); err != nil {
		t.Fatal(err)
	}
	if s.Window != 2*time.Minute || s.Period != 10*time.Second || s.IOBytes != 1 || s.Action != ActionCancel {
		t.Fatalf("Apply = %+v", s)
	}
	err := Overrides().Apply(&s, config.Values{"window": "soon"}, config.FromFlag)
	if want := `flag --window="soon": bad override: bad detection time: "soon"`; err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ErrBadWindow) {
		t.Fatalf("Apply = %v, want %q", err, want)
	}
	if k, ok := Overrides().Lookup("window"); !ok || k.Env != EnvWindow || k.Flag != "window" {
		t.Fatalf("window override = %+v, want env %s", k, EnvWindow)
	}
}
