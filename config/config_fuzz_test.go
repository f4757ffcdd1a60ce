package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// tomlBlock is a ```toml fenced block of the documentation.
var tomlBlock = regexp.MustCompile("(?s)```toml\n(.*?)```")

// addDocExamples seeds f with every TOML example of README.md and docs/,
// the configs the documentation ships, and with this package's sample.
func addDocExamples(f *testing.F) {
	f.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	n := 0
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, m := range tomlBlock.FindAllSubmatch(b, -1) {
			f.Add(m[1])
			n++
		}
	}
	if n == 0 {
		f.Fatal("no TOML examples in the documentation")
	}
	f.Add([]byte(sample))
}

// FuzzParse checks the loader on arbitrary documents: syntax errors name
// the file and a line of it; every error of Decode and Unused is a
// KeyError that names the file, the key and a line within the file (a
// line > 0 whenever the file sets the key); and the [prolog] and [epilog]
// sections that decode re-encode to TOML that decodes to the same values.
func FuzzParse(f *testing.F) {
	addDocExamples(f)
	f.Add([]byte("[prolog]\nbudget = \"1m\"\nretries = = 2\n"))
	f.Add([]byte("prolog = { budget = \"1m\", timeouts = { gemm = \"2m\" } }\n[epilog]\nkill_grace = 5\n"))
	f.Add([]byte("a = \"\"\"\nb = 1\n\"\"\"\nc = [\n  1,\n]\n[t]\nd = 2\n"))
	f.Add([]byte("\"prolog\" . 'budget' = \"5m\"\n[[checks]]\nx = 1\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		const name = "fuzz.toml"
		lines := bytes.Count(doc, []byte{'\n'}) + 1
		file, err := Parse(bytes.NewReader(doc), name)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, name+":") {
				t.Fatalf("syntax error does not name the file: %v", err)
			}
			if l, _, ok := strings.Cut(strings.TrimPrefix(msg, name+":"), ":"); ok {
				if n, err := strconv.Atoi(l); err == nil && (n < 1 || n > lines) {
					t.Fatalf("syntax error names line %d of %d: %v", n, lines, msg)
				}
			}
			return
		}
		checkKeyErrors := func(section string, err error) {
			t.Helper()
			for _, e := range flatten(err) {
				var ke *KeyError
				if !errors.As(e, &ke) {
					t.Fatalf("%s: error without a key: %v", section, e)
				}
				if ke.File != name || ke.Key == "" || ke.Line < 0 || ke.Line > lines {
					t.Fatalf("%s: error %+v: bad file, key or line (%d lines)", section, ke, lines)
				}
				if !errors.Is(e, ErrUnknownKey) && !errors.Is(e, ErrInvalid) {
					t.Fatalf("%s: %v wraps neither ErrUnknownKey nor ErrInvalid", section, e)
				}
				if ke.Line == 0 && file.Has(ke.Key) {
					t.Fatalf("%s: %v: the file sets %s but the error has no line", section, e, ke.Key)
				}
			}
		}

		p, e := DefaultProlog(), DefaultEpilog()
		perr := file.Decode("prolog", &p)
		checkKeyErrors("prolog", perr)
		eerr := file.Decode("epilog", &e)
		checkKeyErrors("epilog", eerr)
		for _, s := range append([]string{"watch", "policy"}, file.Sections("checks")...) {
			var m map[string]any
			checkKeyErrors(s, file.Decode(s, &m))
		}
		for _, err := range file.Unused() {
			checkKeyErrors("unused", err)
		}
		_ = p.Validate(file)
		_ = e.Validate(file)

		if perr != nil || eerr != nil {
			return
		}
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(struct {
			Prolog Prolog `toml:"prolog"`
			Epilog Epilog `toml:"epilog"`
		}{p, e}); err != nil {
			t.Fatalf("encoding %+v %+v: %v", p, e, err)
		}
		again, err := Parse(&buf, "again.toml")
		if err != nil {
			t.Fatalf("re-encoded config does not parse: %v\n%s", err, buf.String())
		}
		p2, e2 := Prolog{}, Epilog{}
		if err := errors.Join(again.Decode("prolog", &p2), again.Decode("epilog", &e2)); err != nil {
			t.Fatalf("re-encoded config does not decode: %v\n%s", err, buf.String())
		}
		if len(p.Timeouts) == 0 && len(p2.Timeouts) == 0 {
			p.Timeouts, p2.Timeouts = nil, nil
		}
		if !reflect.DeepEqual(p, p2) || e != e2 {
			t.Fatalf("round trip changed\n%+v %+v\ninto\n%+v %+v\nvia\n%s", p, e, p2, e2, buf.String())
		}
	})
}

// flatten returns the errors joined in err (nil: none).
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
