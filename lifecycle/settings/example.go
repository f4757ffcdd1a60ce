package settings

import (
	"bytes"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/vigil-hpc/vigil/config"
)

// ExampleConfig writes an example vigil.toml: every section of the table
// (sections) and key with its shipped default, every line commented out.
// As it is, the file is valid and changes nothing; with every line
// uncommented it is valid too and sets each key to its default. It is
// generated from the same structs and defaults the programs read, so it
// cannot drift from them.
func ExampleConfig(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# vigil's configuration: copy to %s and uncomment what you change.\n", config.DefaultPath)
	b.WriteString("# Every key is shown with its shipped default (vigil-prolog --print-example-config).\n")
	b.WriteString("# vigil-prolog and vigil-health read " + config.DefaultPath + " unless --config or\n")
	b.WriteString("# VIGIL_CONFIG names another file; check it with vigil-prolog --check-config and\n")
	b.WriteString("# vigil-prolog policy-check. Durations are strings: \"90s\", \"6m\", \"2h\".\n")
	if silent := silentChecks(); len(silent) > 0 {
		fmt.Fprintf(&b, "# These checks do not publish their settings: %s.\n", strings.Join(silent, ", "))
	}
	for _, s := range sections() {
		lines, err := sectionLines(s.name, durationsAsStringsKeep(s.defaults()))
		if err != nil {
			return fmt.Errorf("example config: %w", err)
		}
		b.WriteString("\n")
		for _, line := range lines {
			if line == "" {
				b.WriteString("#\n")
				continue
			}
			b.WriteString("# " + line + "\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeSection writes the section name holding v (plain TOML values, see
// durationsAsStrings) to w as TOML, after a blank line; nil writes nothing.
func writeSection(w io.Writer, name string, v any) error {
	if v == nil {
		return nil
	}
	lines, err := sectionLines(name, v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\n%s\n", strings.Join(lines, "\n"))
	return err
}

// sectionLines encodes v as the section name: its header, its keys and
// its tables, without the headers of the tables above it ([checks] above
// [checks.gemm]).
func sectionLines(name string, v any) ([]string, error) {
	var sec bytes.Buffer
	enc := toml.NewEncoder(&sec)
	enc.Indent = ""
	if err := enc.Encode(nest(strings.Split(name, "."), v)); err != nil {
		return nil, fmt.Errorf("[%s]: %w", name, err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimRight(sec.String(), "\n"), "\n") {
		if !isParentHeader(line, name) {
			out = append(out, line)
		}
	}
	return out, nil
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
