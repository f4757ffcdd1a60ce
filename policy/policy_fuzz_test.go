package policy

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

// FuzzParseHangTime checks --vigil-hang-time's parser: what it accepts is
// positive, and the window printed as a duration reads back the same.
func FuzzParseHangTime(f *testing.F) {
	for _, s := range []string{"30", "1.5", "90s", "1h30m", " 2m ", "0", "-5m", "1e3", "NaN", "Inf", "off", "",
		"153722867.28", "2562047h47m16.854775807s", "0.0000000001", "1µs", ".5m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseHangTime(s)
		if err != nil {
			if d != 0 {
				t.Fatalf("ParseHangTime(%q) = %v with error %v", s, d, err)
			}
			return
		}
		if d <= 0 {
			t.Fatalf("ParseHangTime(%q) = %v, accepted a window that is not positive", s, d)
		}
		if again, err := ParseHangTime(d.String()); err != nil || again != d {
			t.Fatalf("ParseHangTime(%q) = %v, which reads back as %v, %v", s, d, again, err)
		}
	})
}

// FuzzRequest sets one job option from an arbitrary value, as the SPANK
// plugin and vigil-prolog do from the sbatch command line and the
// SPANK_VIGIL_* variables. Errors wrap ErrSyntax and name the option; what
// is accepted is well formed; the shipped policy's Check refuses exactly
// the windows that ApplyWatch has to clamp, and the window ApplyWatch
// returns is always within the policy's bounds.
func FuzzRequest(f *testing.F) {
	for _, s := range [][2]string{
		{OptChecks, "disk,ecc,disk"}, {OptChecks, "none"}, {OptChecks, "none,disk"}, {OptChecks, " gemm , xid "},
		{OptTiming, "after-requeue"}, {OptTiming, "later"}, {OptHangTime, "2m"}, {OptHangTime, "off"},
		{OptHangTime, "30s"}, {OptHangTime, "1e9"}, {OptHangAction, "requeue"}, {OptHangAction, "drain"}, {"budget", "1m"},
	} {
		f.Add(s[0], s[1])
	}
	p := Default()
	f.Fuzz(func(t *testing.T, option, value string) {
		var r Request
		if err := r.Set(option, value); err != nil {
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "--vigil-"+option) {
				t.Fatalf("Set(%q, %q): %v does not wrap ErrSyntax or name the option", option, value, err)
			}
			if !r.Empty() {
				t.Fatalf("Set(%q, %q) failed but changed the request: %+v", option, value, r)
			}
			return
		}
		if !slices.Contains(Options, option) {
			t.Fatalf("Set accepted the unknown option %q", option)
		}
		switch {
		case r.SkipChecks && r.Checks != nil:
			t.Fatalf("%q: skip and checks: %+v", value, r)
		case r.Checks != nil:
			for i, c := range r.Checks {
				if c == "" || c == ChecksNone || c != strings.TrimSpace(c) || strings.Contains(c, ",") || slices.Contains(r.Checks[:i], c) {
					t.Fatalf("%q: bad check list %q", value, r.Checks)
				}
			}
		case r.Timing != "" && r.Timing != TimingBefore && r.Timing != TimingAfterRequeue:
			t.Fatalf("%q: timing %q", value, r.Timing)
		case r.HangAction != "" && !slices.Contains([]string{ActionNotify, ActionCancel, ActionRequeue}, r.HangAction):
			t.Fatalf("%q: action %q", value, r.HangAction)
		case r.HangTime < 0 || (r.HangOff && r.HangTime != 0):
			t.Fatalf("%q: window %v off %v", value, r.HangTime, r.HangOff)
		}
		refused := p.Check(r, known)
		w := p.ApplyWatch(r, 30*time.Minute, "none")
		if !w.Off && (w.Window < p.MinHangTime || w.Window > p.MaxHangTime) {
			t.Fatalf("%q: window %v escapes [%v, %v]", value, w.Window, p.MinHangTime, p.MaxHangTime)
		}
		if clamped := r.HangTime > 0 && w.Window != r.HangTime; clamped != (len(refused) > 0 && option == OptHangTime) {
			t.Fatalf("%q: window %v became %v, refusals %v", value, r.HangTime, w.Window, refused)
		}
		if out := p.ApplyProlog(r, known, 10*time.Minute); out.Budget > 10*time.Minute {
			t.Fatalf("%q: the budget grew to %v", value, out.Budget)
		}
	})
}

// FuzzLoad loads [policy] from arbitrary documents (seeds: the TOML
// examples of docs/spank.md). Errors name a policy key; an accepted policy
// keeps its own invariants, so Validate accepts it again.
func FuzzLoad(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "spank.md"))
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllSubmatch(b, -1) {
		f.Add(m[1])
	}
	f.Add([]byte("[policy]\nchecks = [\"gemm\", \"nope\"]\nmin_hang_time = \"1h\"\nmax_hang_time = \"1m\"\nmax_budget = 5\n"))
	f.Add([]byte("policy.timings = [\"later\"]\npolicy.hang_actions = []\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		file, err := config.Parse(strings.NewReader(string(doc)), "vigil.toml")
		if err != nil {
			return
		}
		p, err := Load(file, known)
		if err != nil {
			var ke *config.KeyError
			if !errors.As(err, &ke) || !strings.HasPrefix(ke.Key, Section) {
				t.Fatalf("error does not name a [policy] key: %v", err)
			}
			return
		}
		if p.MinHangTime < time.Second || p.MaxHangTime < p.MinHangTime || p.MaxBudget < 0 {
			t.Fatalf("accepted %+v", p)
		}
		for _, c := range p.Checks {
			if !slices.Contains(known, c) {
				t.Fatalf("accepted the unknown check %q", c)
			}
		}
		if err := p.Validate(nil, known); err != nil {
			t.Fatalf("accepted %+v, which does not validate: %v", p, err)
		}
	})
}
