package lifecycle

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/policy"
)

// ExampleSection is a config section that vigil-prolog does not own (the
// watcher's [watch]) with its shipped defaults, for ExampleConfig.
type ExampleSection struct {
	// Name is the section's name ("watch").
	Name string
	// Defaults is the section's settings struct holding its defaults.
	Defaults any
}

// ExampleConfig writes an example vigil.toml: every section and key with
// its shipped default, every line commented out. As it is, the file is
// valid and changes nothing; with every line uncommented it is valid too
// and sets each key to its default. It is generated from the same structs
// and defaults the programs read, so it cannot drift from them. Sections
// come in the order [prolog], [epilog], [notify], [guard], the extra ones, [policy],
// [vendor.NAME] for every vendor whose libraries are configurable, then
// [checks.NAME] for every check that publishes its settings.
func ExampleConfig(w io.Writer, extra ...ExampleSection) error {
	sections := []ExampleSection{{"prolog", config.DefaultProlog()}, {"epilog", config.DefaultEpilog()},
		{"notify", config.DefaultNotify()}, {"guard", config.DefaultGuard()}}
	sections = append(sections, extra...)
	sections = append(sections, ExampleSection{policy.Section, policy.Default()})
	for _, v := range benchmarks.LibraryVendors() {
		d, _ := benchmarks.LibraryDefaults(v)
		sections = append(sections, ExampleSection{benchmarks.VendorSection + "." + string(v), d})
	}
	var silent []string
	for _, name := range benchmarks.Names() {
		c, _ := benchmarks.Lookup(name)
		if d := benchmarks.Describe(c); d.Settings != nil {
			sections = append(sections, ExampleSection{"checks." + name, d.Settings()})
		} else {
			silent = append(silent, name)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# vigil's configuration: copy to %s and uncomment what you change.\n", config.DefaultPath)
	b.WriteString("# Every key is shown with its shipped default (vigil-prolog --print-example-config).\n")
	b.WriteString("# vigil-prolog and vigil-health read " + config.DefaultPath + " unless --config or\n")
	b.WriteString("# VIGIL_CONFIG names another file; check it with vigil-prolog --check-config and\n")
	b.WriteString("# vigil-prolog policy-check. Durations are strings: \"90s\", \"6m\", \"2h\".\n")
	if len(silent) > 0 {
		fmt.Fprintf(&b, "# These checks do not publish their settings: %s.\n", strings.Join(silent, ", "))
	}
	for _, s := range sections {
		v := durationsAsStringsKeep(s.Defaults)
		doc := nest(strings.Split(s.Name, "."), v)
		var sec bytes.Buffer
		enc := toml.NewEncoder(&sec)
		enc.Indent = ""
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("example config: [%s]: %w", s.Name, err)
		}
		b.WriteString("\n")
		for _, line := range strings.Split(strings.TrimRight(sec.String(), "\n"), "\n") {
			if line == "" {
				b.WriteString("#\n")
				continue
			}
			if isParentHeader(line, s.Name) {
				continue // [checks] above [checks.gemm]
			}
			b.WriteString("# " + line + "\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// durationsAsStringsKeep is durationsAsStrings with empty maps kept as
// empty tables, so that a key like [prolog] timeouts shows in the example.
func durationsAsStringsKeep(v any) any {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	return convert(rv, true)
}

// nest wraps v in one table per element of path.
func nest(path []string, v any) map[string]any {
	if len(path) == 1 {
		return map[string]any{path[0]: v}
	}
	return map[string]any{path[0]: nest(path[1:], v)}
}

// isParentHeader reports whether line is the header of a table above the
// section name ("[checks]" for "checks.gemm").
func isParentHeader(line, name string) bool {
	h, ok := strings.CutPrefix(line, "[")
	if !ok {
		return false
	}
	h, ok = strings.CutSuffix(h, "]")
	return ok && strings.HasPrefix(name, h+".")
}
