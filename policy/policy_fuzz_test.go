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
	"github.com/vigil-hpc/vigil/config/watchcfg"
)

// FuzzWindowSpellings: --vigil-hang-time (Request.Set, which
// vigil-prolog policy-check and the prolog run) and VIGIL_HANG_DETECT_TIME
// (ForWatcher, which vigil-watch runs) read every value as the one parser,
// watchcfg.ParseWindow, does: accepted or not, the same window. So no
// window escapes the policy's bounds by its spelling.
func FuzzWindowSpellings(f *testing.F) {
	for _, s := range []string{"30", "1.5", "90s", "1h30m", " 2m ", "0", "-5m", "1e3", "NaN", "Inf", "off", "",
		"153722867.28", "2562047h47m16.854775807s", "0.0000000001", "1µs", ".5m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.TrimSpace(s) == HangOff || strings.TrimSpace(s) == "" {
			return // "off" and "not set" are the callers' own, not windows
		}
		d, err := watchcfg.ParseWindow(s)
		var r Request
		serr := r.Set(OptHangTime, s)
		if (err == nil) != (serr == nil) || r.Window != d {
			t.Fatalf("%q: ParseWindow reads %v, %v; --vigil-hang-time reads %v, %v", s, d, err, r.Window, serr)
		}
		w, werr := ForWatcher(nil, func(k string) (string, bool) { return s, k == watchcfg.EnvWindow })
		if (err == nil) != (werr == nil) || w.Request.Window != d {
			t.Fatalf("%q: ParseWindow reads %v, %v; %s reads %v, %v", s, d, err, watchcfg.EnvWindow, w.Request.Window, werr)
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
		case r.HangAction != "" && !slices.Contains([]string{watchcfg.ActionNotify, watchcfg.ActionCancel, watchcfg.ActionRequeue}, r.HangAction):
			t.Fatalf("%q: action %q", value, r.HangAction)
		case r.Window < 0 || (r.WatchOff && r.Window != 0):
			t.Fatalf("%q: window %v off %v", value, r.Window, r.WatchOff)
		}
		refused := p.Check(r, reg)
		w := p.ApplyWatch(r, 30*time.Minute, "none")
		if !w.Off && (w.Window < p.MinWindow || w.Window > p.MaxWindow) {
			t.Fatalf("%q: window %v escapes [%v, %v]", value, w.Window, p.MinWindow, p.MaxWindow)
		}
		if clamped := r.Window > 0 && w.Window != r.Window; clamped != (len(refused) > 0 && option == OptHangTime) {
			t.Fatalf("%q: window %v became %v, refusals %v", value, r.Window, w.Window, refused)
		}
		if out := p.ApplyProlog(r, reg, 10*time.Minute); out.Budget > 10*time.Minute {
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
		if p.MinWindow < time.Second || p.MaxWindow < p.MinWindow || p.MaxBudget < 0 {
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
