package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/policy"
)

// exampleConfig runs vigil-prolog --print-example-config.
func exampleConfig(t *testing.T) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run([]string{"--print-example-config"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	return out.String()
}

// uncomment removes the "# " of every line that holds a key or a table
// header, keeping the prose at the top commented.
func uncomment(example string) string {
	var b strings.Builder
	for _, l := range strings.Split(example, "\n") {
		if rest, ok := strings.CutPrefix(l, "# "); ok && (strings.HasPrefix(rest, "[") || strings.Contains(rest, " = ")) {
			l = rest
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// loadAll validates a config file the way every program does: vigil-prolog
// ([prolog], [epilog], [checks.*], unknown keys), the policy, vigil-watch.
func loadAll(t *testing.T, path string) (*settings.Settings, []error) {
	t.Helper()
	s, errs := settings.LoadSettings(path, true, func(string) (string, bool) { return "", false }, nil)
	if _, err := policy.Load(s.File, benchmarks.Names()); err != nil {
		errs = append(errs, err)
	}
	ws := watchcfg.Default()
	if err := ws.Load(s.File); err != nil {
		errs = append(errs, err)
	} else if err := ws.Final().Validate(s.File); err != nil {
		errs = append(errs, err)
	}
	return s, errs
}

func TestExampleConfig(t *testing.T) {
	example := exampleConfig(t)
	dir := t.TempDir()
	commented := filepath.Join(dir, "vigil.toml.example")
	full := filepath.Join(dir, "vigil.toml")
	if err := os.WriteFile(commented, []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(uncomment(example)), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, l := range strings.Split(example, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			t.Errorf("line not commented out: %q", l)
		}
	}
	if s, errs := loadAll(t, commented); len(errs) > 0 || len(s.File.Sections("checks")) > 0 {
		t.Errorf("the example as installed: errors %v, sections %v", errs, s.File.Sections("checks"))
	}

	s, errs := loadAll(t, full)
	if len(errs) > 0 {
		t.Fatalf("the example with every key uncommented is invalid:\n%v", errs)
	}
	// Uncommented, it sets every key to its shipped default.
	if got, want := s.Prolog, config.DefaultProlog(); !reflect.DeepEqual(normalize(got), normalize(want)) {
		t.Errorf("[prolog] %+v, want the defaults %+v", got, want)
	}
	if got, want := s.Epilog, config.DefaultEpilog(); got != want {
		t.Errorf("[epilog] %+v, want %+v", got, want)
	}
	pol, _ := policy.Load(s.File, benchmarks.Names())
	if want := policy.Default(); !reflect.DeepEqual(normalize(pol), normalize(want)) {
		t.Errorf("[policy] %+v, want %+v", pol, want)
	}

	// Every key of every section's struct is in the example, but for the
	// deprecated ones (next to their replacement they are an error) and
	// those the file may not hold ([watch] webhook_url: flag only).
	deprecatedKeys := map[string]bool{"prolog.textfile": true, "watch.webhook_url": true}
	for key := range deprecatedKeys {
		if s.File.Has(key) {
			t.Errorf("the example sets the deprecated %s", key)
		}
	}
	for section, v := range map[string]any{
		"prolog": config.Prolog{}, "epilog": config.Epilog{}, policy.Section: policy.Policy{}, watchcfg.Section: watchcfg.Settings{},
	} {
		for _, key := range tomlKeys(reflect.TypeOf(v)) {
			if !s.File.Has(section+"."+key) && !deprecatedKeys[section+"."+key] {
				t.Errorf("%s.%s is missing from the example config", section, key)
			}
		}
	}
	for _, name := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(name)
		d := benchmarks.Describe(c).Settings
		if d == nil {
			continue
		}
		for _, key := range tomlKeys(reflect.TypeOf(d())) {
			if !s.File.Has("checks." + name + "." + key) {
				t.Errorf("checks.%s.%s is missing from the example config", name, key)
			}
		}
	}
}

// tomlKeys lists the toml keys of a struct type, embedded structs flattened.
func tomlKeys(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("toml"), ",")[0]
		switch {
		case !f.IsExported() || tag == "-":
		case f.Anonymous && tag == "":
			keys = append(keys, tomlKeys(f.Type)...)
		case tag != "":
			keys = append(keys, tag)
		default:
			keys = append(keys, f.Name)
		}
	}
	return keys
}

// normalize makes empty slices and maps nil, so that "checks = []" equals
// an unset list.
func normalize[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Field(i)
		if (f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && f.Len() == 0 && f.CanSet() {
			f.Set(reflect.Zero(f.Type()))
		}
	}
	return v
}
