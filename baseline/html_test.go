package baseline

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHTMLSelfContained: the page has one inline SVG plot per metric, the
// limits and outliers named, and nothing it would load from elsewhere.
func TestHTMLSelfContained(t *testing.T) {
	groups, _, err := Read([]Source{{Model: "H100", Dir: "testdata/reports"}})
	if err != nil {
		t.Fatal(err)
	}
	Analyze(groups)
	var b bytes.Buffer
	if err := WriteHTML(&b, groups); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "<svg"); n != len(groups) {
		t.Errorf("%d plots for %d metrics", n, len(groups))
	}
	for _, want := range []string{"proposed &gt;= 631", "current &gt;= 600", "n03:gpu1", "n06:gpu0", "n05:/scratch", "[checks.gemm.thresholds.&#34;H100&#34;]"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	external := regexp.MustCompile(`(?i)(<script[^>]*src|<link|<img|@import|url\(|href=|src=)`)
	if m := external.FindString(page); m != "" {
		t.Errorf("page loads something from outside: %q", m)
	}
}

// TestCommandHTML: --html writes the page next to the printed proposal.
func TestCommandHTML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet.html")
	var out, errb bytes.Buffer
	if code := Command([]string{"--html", path, "H100=testdata/reports"}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("%v: %.200s", err, b)
	}
	if code := Command([]string{"--html", filepath.Join(t.TempDir(), "no", "such", "dir.html"), "testdata/reports"}, &out, &errb); code != ExitError {
		t.Fatalf("unwritable --html: exit %d", code)
	}
}
