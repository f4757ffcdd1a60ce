package config

import (
	"slices"
	"strings"
	"testing"
)

// TestKeys: the keys of [prolog] as the decoder reads them, in field order.
func TestKeys(t *testing.T) {
	got := Keys(DefaultProlog())
	if len(got) < 10 || got[0] != "checks" || !slices.Contains(got, "slurm_bin_dir") || !slices.Contains(got, "result_dir") {
		t.Fatalf("Keys(Prolog) = %v", got)
	}
	type inner struct {
		B int `toml:"b"`
	}
	type outer struct {
		A int `toml:"a"`
		inner
		C int `toml:"-"`
	}
	if got := Keys(&outer{}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("Keys(outer) = %v", got)
	}
}

// TestString: a key's string value as the file sets it, whatever the
// decoding of its section did.
func TestString(t *testing.T) {
	f, err := Parse(strings.NewReader("[prolog]\nretries = \"two\"\ntextfile = \"/t/vigil.prom\"\nbudget = 5\n"), "x.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultProlog()
	_ = f.Decode("prolog", &p)
	if s, ok := f.String("prolog.textfile"); !ok || s != "/t/vigil.prom" {
		t.Fatalf("textfile = %q, %v", s, ok)
	}
	if _, ok := f.String("prolog.budget"); ok {
		t.Fatal("budget (an integer) read as a string")
	}
	if _, ok := f.String("prolog.nope"); ok {
		t.Fatal("a missing key read")
	}
}
