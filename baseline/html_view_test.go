package baseline

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/watcher/hangview/pagetest"
)

// fleetGroups is the test fleet's groups plus a disk latency that sits far
// below its current limit (values about 0.2 ms, limit 100 ms), per node.
func fleetGroups(t *testing.T) []*Group {
	t.Helper()
	groups, _, err := Read([]Source{{Model: "H100", Dir: "testdata/reports"}})
	if err != nil {
		t.Fatal(err)
	}
	limit := 100.0
	lat := &Group{Key: Key{Check: "disk", Name: "read_latency_ms"}, Unit: "ms", Lower: true}
	for i := 1; i <= 12; i++ {
		v := 0.2 + 0.01*float64(i%5)
		if i == 7 {
			v = 1.9
		}
		lat.Samples = append(lat.Samples, Sample{Node: fmt.Sprintf("n%02d", i), Device: "/scratch", Value: v, Threshold: &limit})
	}
	groups = append(groups, lat)
	Analyze(groups)
	return groups
}

func fleetPage(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, fleetGroups(t)); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestHTMLAsSeen lays the baseline page out in the headless browser (issue
// 19 item 10): no label of a plot falls outside its SVG or onto another
// (legends, tick labels, outlier names), and the y axes count what the
// values are of.
func TestHTMLAsSeen(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser run")
	}
	seen := pagetest.Look(t, fleetPage(t), 1200)
	if len(seen.SVGs) == 0 {
		t.Fatal("no plot")
	}
	for _, c := range seen.Clipped() {
		t.Errorf("clipped: %s", c)
	}
	for _, o := range seen.Overlapping() {
		t.Errorf("overlap: %s", o)
	}
	for _, g := range seen.SVGs {
		var texts []string
		for _, tx := range g.Texts {
			texts = append(texts, tx.Text)
		}
		all := strings.Join(texts, "\n")
		disk := strings.Contains(all, " disk ")
		if disk && (strings.Contains(all, "\ndevices") || !strings.Contains(all, "\nnodes")) {
			t.Errorf("a disk plot's y axis does not count nodes:\n%s", all)
		}
		if !disk && !strings.Contains(all, "\ndevices") {
			t.Errorf("a device plot's y axis does not count devices:\n%s", all)
		}
	}
}

// TestHTMLPlotsSpanTheValues (issue 19 item 10): a latency far below its
// current limit (0.2 ms against 100 ms) is drawn over its own values, the
// limit named as off the chart, and the y axes count nodes for per-node
// values (the disk's file system), devices for devices.
func TestHTMLPlotsSpanTheValues(t *testing.T) {
	page := string(fleetPage(t))
	var lat *Group
	for _, g := range fleetGroups(t) {
		want := "devices"
		if g.Check == "disk" {
			want = "nodes"
		}
		if got := countNoun(g); got != want {
			t.Errorf("%s %s: y axis counts %s, want %s", g.Check, g.Name, got, want)
		}
		if g.Name == "read_latency_ms" {
			lat = g
		}
	}
	if lo, hi := limitRange(lat); lo < 0 || hi > 3 {
		t.Errorf("latency plot spans %g..%g ms, want about the values (0.2..1.9)", lo, hi)
	}
	for _, want := range []string{"current &lt;= 100 (off the chart)", ">nodes<", ">devices<"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
