package hangview

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-hpc/vigil/watcher/hangview/pagetest"
)

// TestPageInBrowser renders the page of a three-host replay in a real
// headless browser: the DOM it builds holds one chart per host and the
// culprit marked, and its screenshot decodes and is not blank. The browser
// is required: without it the test fails, naming the package, except
// under -short.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser run")
	}
	bin := pagetest.Find(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "hang.html")
	if err := os.WriteFile(page, Render(replayData(t, testConfig(), filepath.Join("testdata", "three-hosts.trace"))), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + page

	dom := pagetest.Run(t, bin, dir, "--dump-dom", url)
	checkPage(t, string(dom), []string{"gpu01", "gpu02", "gpu03"}, []string{"gpu02"})

	shot := filepath.Join(dir, "hang.png")
	pagetest.Run(t, bin, dir, "--screenshot="+shot, "--window-size=1200,1600", url)
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
