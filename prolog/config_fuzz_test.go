package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
)

// FuzzLoadSettings loads arbitrary config files with every check of the
// prolog registered, as `vigil-prolog --check-config` does. Every error
// names the file; a key error names a key and a line within the file. A
// valid config's printed effective configuration is itself valid and
// prints the same again. Seeds: every TOML example of README.md and docs/.
func FuzzLoadSettings(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, m := range regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllSubmatch(b, -1) {
			f.Add(m[1])
		}
	}
	f.Add([]byte("[prolog]\nchecks = [\"fault-inject\"]\n"))
	f.Add([]byte("[prolog]\nbudget = 5\n[checks.xid]\nfault_xids = [79, -1]\n[prolog.timeouts]\n\"a b\" = \"1s\"\n"))
	noEnv := func(string) (string, bool) { return "", false }
	f.Fuzz(func(t *testing.T, doc []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "vigil.toml")
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(doc, []byte{'\n'}) + 1
		s, errs := settings.LoadSettings(path, true, noEnv, nil)
		if s == nil {
			t.Fatal("no settings")
		}
		for _, err := range errs {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the file: %v", err)
			}
			var ke *config.KeyError
			if errors.As(err, &ke) && (ke.Key == "" || ke.Line < 0 || ke.Line > lines) {
				t.Fatalf("error %+v: bad key or line (%d lines)", ke, lines)
			}
		}
		if len(errs) > 0 {
			return
		}
		var first bytes.Buffer
		if code := settings.CheckConfig(&first, path, true, noEnv, nil); code != decide.ExitOK {
			t.Fatalf("valid config, exit %d:\n%s", code, first.String())
		}
		printed := filepath.Join(dir, "printed.toml")
		if err := os.WriteFile(printed, first.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		var second bytes.Buffer
		if code := settings.CheckConfig(&second, printed, true, noEnv, nil); code != decide.ExitOK {
			t.Fatalf("the effective configuration is invalid (exit %d):\n%s\nprinted from\n%s", code, second.String(), first.String())
		}
		body := func(b bytes.Buffer) string { _, rest, _ := strings.Cut(b.String(), "\n"); return rest }
		if body(first) != body(second) {
			t.Fatalf("the effective configuration changed when read back:\n%s\n---\n%s", first.String(), second.String())
		}
	})
}
