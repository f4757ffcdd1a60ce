package pagetest

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Seen is what a person sees of a page, as the headless browser laid it
// out: the text of its tables, cell by cell, and every SVG text element's
// place in its SVG.
type Seen struct {
	Text   string     `json:"text"` // the page's rendered text (innerText)
	Tables []Table    `json:"tables"`
	SVGs   []SVGTexts `json:"svgs"`
}

// Table is one table of the page: its class and its rows' cell texts
// (innerText, as rendered).
type Table struct {
	Class string     `json:"class"`
	Rows  [][]string `json:"rows"`
}

// SVGTexts is one SVG element of the page and its text elements.
type SVGTexts struct {
	Host  string `json:"host"`  // its data-host, "" when none
	Index int    `json:"index"` // in page order
	W, H  float64
	Texts []Text `json:"texts"`
}

// Text is one SVG text element with its bounding box on screen, relative
// to its SVG's viewport (which its viewBox fills).
type Text struct {
	Text           string  `json:"text"`
	X0, Y0, X1, Y1 float64 // left, top, right, bottom, CSS pixels
}

// Clipped lists the texts of s whose bounding box falls outside their
// SVG (more than half a pixel), as "svg N (HOST): "TEXT" at x0,y0-x1,y1 in WxH".
func (s Seen) Clipped() []string {
	var out []string
	for _, g := range s.SVGs {
		for _, t := range g.Texts {
			if t.X0 < -0.5 || t.Y0 < -0.5 || t.X1 > g.W+0.5 || t.Y1 > g.H+0.5 {
				out = append(out, describe(g, t))
			}
		}
	}
	return out
}

// Overlapping lists the pairs of texts of one SVG whose bounding boxes
// overlap by more than a pixel each way.
func (s Seen) Overlapping() []string {
	var out []string
	for _, g := range s.SVGs {
		for i, a := range g.Texts {
			for _, b := range g.Texts[i+1:] {
				if min(a.X1, b.X1)-max(a.X0, b.X0) > 1 && min(a.Y1, b.Y1)-max(a.Y0, b.Y0) > 1 {
					out = append(out, describe(g, a)+" overlaps "+describe(g, b))
				}
			}
		}
	}
	return out
}

// TableText is the rows of the first table of class class, each row's
// cells joined by " | ".
func (s Seen) TableText(class string) []string {
	for _, t := range s.Tables {
		if t.Class == class {
			out := make([]string, 0, len(t.Rows))
			for _, r := range t.Rows {
				out = append(out, strings.Join(r, " | "))
			}
			return out
		}
	}
	return nil
}

func describe(g SVGTexts, t Text) string {
	return "svg " + itoa(g.Index) + " (" + g.Host + "): \"" + t.Text + "\" at " + ftoa(t.X0) + "," + ftoa(t.Y0) + "-" +
		ftoa(t.X1) + "," + ftoa(t.Y1) + " in " + ftoa(g.W) + "x" + ftoa(g.H)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
func ftoa(f float64) string {
	b, _ := json.Marshal(float64(int(f*10)) / 10)
	return string(b)
}

// lookScript measures the page once it is laid out and writes what it saw
// into the document, for --dump-dom to carry out.
const lookScript = `<script>
(function () {
  var out = {text: document.body.innerText, tables: [], svgs: []};
  document.querySelectorAll('table').forEach(function (t) {
    var rows = [];
    t.querySelectorAll('tr').forEach(function (tr) {
      var cells = [];
      tr.querySelectorAll('th,td').forEach(function (c) { cells.push(c.innerText.trim()); });
      rows.push(cells);
    });
    out.tables.push({class: t.className, rows: rows});
  });
  document.querySelectorAll('svg').forEach(function (svg, i) {
    if (svg.parentElement && svg.parentElement.closest('svg')) { return; }
    var s = svg.getBoundingClientRect();
    var g = {host: svg.getAttribute('data-host') || '', index: i, W: s.width, H: s.height, texts: []};
    svg.querySelectorAll('text').forEach(function (tx) {
      var text = tx.textContent.trim();
      if (!text) { return; }
      var b = tx.getBoundingClientRect();
      if (b.width === 0 && b.height === 0) { return; }
      g.texts.push({text: text, X0: b.left - s.left, Y0: b.top - s.top, X1: b.right - s.left, Y1: b.bottom - s.top});
    });
    out.svgs.push(g);
  });
  var pre = document.createElement('pre');
  pre.id = 'vigil-seen';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

var seenRe = regexp.MustCompile(`(?s)<pre id="vigil-seen">(.*?)</pre>`)

// Look lays page out in the headless browser, in a window width pixels
// wide, and returns what it shows. The page itself stays without
// scripts: a copy with a measuring script added is what the browser loads.
func Look(t testing.TB, page []byte, width int) Seen {
	t.Helper()
	dir := t.TempDir()
	s := string(page)
	if i := strings.LastIndex(s, "</body>"); i >= 0 {
		s = s[:i] + lookScript + s[i:]
	} else {
		s += lookScript
	}
	path := filepath.Join(dir, "look.html")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(Run(t, Find(t), dir, "--window-size="+itoa(width)+",1000", "--virtual-time-budget=2000", "--dump-dom", "file://"+path))
	m := seenRe.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the browser's document has no measurements (did the script run?):\n%.2000s", dom)
	}
	var seen Seen
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &seen); err != nil {
		t.Fatalf("measurements: %v", err)
	}
	return seen
}
