package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// section is a section with one overridable key of every kind.
type section struct {
	Name   string        `toml:"name" env:"X_NAME" flag:"name" arg:"NAME"`
	List   []string      `toml:"list" env:"X_LIST" flag:"list"`
	Wait   time.Duration `toml:"wait" env:"X_WAIT" flag:"wait"`
	Count  int           `toml:"count" flag:"count"`
	Bytes  uint64        `toml:"bytes" flag:"bytes"`
	Share  float64       `toml:"share" flag:"share"`
	On     bool          `toml:"on" flag:"on"`
	Period time.Duration `toml:"period" flag:"period" follows:"wait"`
	File   string        `toml:"file"` // the file's only
}

var table = NewOverrides("x", section{Wait: time.Minute, Period: time.Second})

func TestOverridesApply(t *testing.T) {
	var s section
	vals := Values{"name": "a b", "list": " a, ,b ", "wait": "90s", "count": "-3", "bytes": "7", "share": "0.5", "on": "true"}
	if err := table.Apply(&s, vals, FromFlag); err != nil {
		t.Fatal(err)
	}
	want := section{Name: "a b", List: []string{"a", "b"}, Wait: 90 * time.Second, Count: -3, Bytes: 7, Share: 0.5, On: true}
	if s.Name != want.Name || strings.Join(s.List, "|") != "a|b" || s.Wait != want.Wait || s.Count != want.Count ||
		s.Bytes != want.Bytes || s.Share != want.Share || !s.On {
		t.Fatalf("Apply = %+v, want %+v", s, want)
	}
	if _, ok := table.Lookup("file"); ok {
		t.Error("a key without env or flag tags is overridable")
	}
	for _, tc := range []struct {
		vals Values
		from Source
		want string
	}{
		{Values{"wait": "soon"}, FromEnv, `environment X_WAIT="soon": bad override: time: invalid duration "soon"`},
		{Values{"count": "two"}, FromFlag, `flag --count="two": bad override: "two": invalid syntax`},
		{Values{"bytes": "-1"}, FromFlag, `flag --bytes="-1": bad override: "-1": invalid syntax`},
		{Values{"on": "yes"}, FromFlag, `flag --on="yes": bad override`},
	} {
		err := table.Apply(&s, tc.vals, tc.from)
		var oe *OverrideError
		if err == nil || err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &oe) || !errors.Is(err, ErrOverride) {
			t.Errorf("Apply(%v) = %v, want %q", tc.vals, err, tc.want)
		}
	}
}

func TestOverridesSources(t *testing.T) {
	env := table.Env(func(k string) (string, bool) {
		return map[string]string{"X_NAME": "n", "X_LIST": "  ", "X_WAIT": "2m"}[k], true
	})
	if len(env) != 2 || env["name"] != "n" || env["wait"] != "2m" {
		t.Errorf("Env = %v, want name and wait (a blank variable sets nothing)", env)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	given := table.Flags(fs, func(k Override) bool { return k.Key != "share" })
	if err := fs.Parse([]string{"--on", "--count", "3"}); err != nil {
		t.Fatal(err)
	}
	if got := given(); len(got) != 2 || got["on"] != "true" || got["count"] != "3" {
		t.Errorf("Flags = %v", got)
	}
	if fs.Lookup("share") != nil {
		t.Error("a flag that keep left out is registered")
	}
}

// TestOverridesExplain: a bad value names what set it; a key that follows
// another and was set by nothing names that one.
func TestOverridesExplain(t *testing.T) {
	f, err := Parse(strings.NewReader("[x]\nfile = \"f\"\n"), "x.toml")
	if err != nil {
		t.Fatal(err)
	}
	verr := errors.Join(f.Errorf("x.count", "3: too many"), f.Errorf("x.period", "1s: too long"), f.Errorf("x.file", "bad"))
	errs := table.Explain(f, verr, Values{"wait": "1s"}, Values{"count": "3"})
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{`flag --count="3": invalid value: 3: too many`, `environment X_WAIT="1s": invalid value: 1s: too long`, `x.toml:2: x.file: invalid value: bad`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Explain =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOverridesHelp(t *testing.T) {
	help := table.Help()
	for _, want := range []string{"    --name NAME", "[x] name", "env X_NAME\n", "    --wait duration", "    --on  "} {
		if !strings.Contains(help, want) {
			t.Errorf("Help lacks %q:\n%s", want, help)
		}
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	table.Flags(fs, nil)
	var b bytes.Buffer
	PrintFlags(&b, fs)
	for _, want := range []string{"  -wait duration\n    \t[x] wait (default 1m0s)\n", "  -on\n    \t[x] on\n", "  -name NAME\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("PrintFlags lacks %q:\n%s", want, b.String())
		}
	}
}
