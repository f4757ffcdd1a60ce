package loop

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

// TestSettingsFinalOnce: the watcher's settings are decided once. Resolve
// returns them final (a job window of 2 minutes alone gives 20 s samples)
// and Final of final settings changes nothing; no other production code of
// vigil-watch derives them again (one call of Final, in Resolve).
func TestSettingsFinalOnce(t *testing.T) {
	res, err := Resolve(Sources{Lookup: envOf(map[string]string{"VIGIL_HANG_DETECT_TIME": "2"})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Settings.Period != 20*time.Second {
		t.Errorf("a 2-minute window alone: period %v, want 20s", res.Settings.Period)
	}
	if again := res.Settings.Final(); again.Period != res.Settings.Period || again.Window != res.Settings.Window {
		t.Errorf("Final of Resolve's settings changed them: %v/%v to %v/%v", res.Settings.Period, res.Settings.Window, again.Period, again.Window)
	}
	if res, err := Resolve(Sources{Flags: config.Values{"window": "2m", "period": "1m"}}); err != nil || res.Settings.Period != time.Minute {
		t.Errorf("--window 2m --period 1m: %v, period %v; want the flag's period kept", err, res.Settings.Period)
	}
	var calls []string
	err = filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "testdata") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Final" && len(c.Args) == 0 {
					calls = append(calls, p)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != filepath.Join("..", "loop", "settings.go") {
		t.Errorf("Final() is called in %v; want once, in Resolve (../loop/settings.go)", calls)
	}
}
