package hangview

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// browser is Debian's headless-capable browser, from the package chromium.
const browser = "chromium"

// TestPageInBrowser renders the page of a three-host replay in a real
// headless browser: the DOM it builds holds one chart per host and the
// culprit marked, and its screenshot decodes and is not blank. The browser
// is required: without it the test fails, naming the package, except
// under -short.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser run")
	}
	bin, err := exec.LookPath(browser)
	if err != nil {
		t.Fatalf("%s not found (%v): install Debian's package %s (apt-get install --no-install-recommends %s, or .ci/deps)", browser, err, browser, browser)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "hang.html")
	if err := os.WriteFile(page, Render(replayData(t, testConfig(), filepath.Join("testdata", "three-hosts.trace"))), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	dom := runBrowser(t, bin, dir, "--dump-dom", url)
	checkPage(t, string(dom), []string{"gpu01", "gpu02", "gpu03"}, []string{"gpu02"})

	shot := filepath.Join(dir, "hang.png")
	runBrowser(t, bin, dir, "--screenshot="+shot, "--window-size=1200,1600", url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	b := img.Bounds()
	if b.Dx() != 1200 || b.Dy() != 1600 {
		t.Errorf("screenshot is %dx%d, want 1200x1600", b.Dx(), b.Dy())
	}
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y && len(colours) < 16; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 2 {
		t.Errorf("screenshot is blank (%d colour)", len(colours))
	}
}

// runBrowser runs the headless browser once with args, within a minute,
// and returns its standard output.
func runBrowser(t *testing.T, bin, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + filepath.Join(dir, "profile")}, args...)
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, argv, err, tail(stderr.Bytes()))
	}
	return stdout.Bytes()
}

// tail is the end of a browser's chatter, enough to see why it failed.
func tail(b []byte) []byte {
	b = regexp.MustCompile(`(?m)^.*dbus.*\n?`).ReplaceAll(b, nil)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return b
}
