package run

import (
	"errors"
	"testing"

	"github.com/vigil-hpc/vigil/policy"
)

// FuzzParseDetectTime checks VIGIL_HANG_DETECT_TIME's parser: errors wrap
// ErrBadDetectTime, an accepted window is positive, and the SPANK policy's
// parser reads every value the same way (accepts it or not, same window),
// so that no window escapes the policy's bounds by its spelling.
func FuzzParseDetectTime(f *testing.F) {
	for _, s := range []string{"30", "1.5", "90s", "1h30m", " 2m ", "0", "-5m", "1e3", "NaN", "-Inf", "off", "", "0x1p-2",
		"1_000", "153722867.28", "2562047h47m16.854775807s", "9223372036.854775807s", "0.0000000001", "1µs", ".5m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDetectTime(s)
		pd, perr := policy.ParseHangTime(s)
		if (err == nil) != (perr == nil) || d != pd {
			t.Fatalf("%q: vigil-watch reads %v, %v; the policy reads %v, %v", s, d, err, pd, perr)
		}
		if err != nil {
			if !errors.Is(err, ErrBadDetectTime) {
				t.Fatalf("%q: %v does not wrap ErrBadDetectTime", s, err)
			}
			return
		}
		if d <= 0 {
			t.Fatalf("%q: accepted the window %v", s, d)
		}
		var st Settings
		if err := st.ApplyEnv(func(string) (string, bool) { return s, true }); err != nil || st.Window != d {
			t.Fatalf("%q from the environment: %v, %v", s, st.Window, err)
		}
	})
}
