package hangview

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/hangview/pagetest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testConfig is the detector's configuration for the traces under testdata/
// (one sample a minute).
func testConfig() hang.Config {
	c := watchcfg.DefaultHang()
	c.Window, c.Period, c.Grace = 10*time.Minute, time.Minute, time.Minute
	return c
}

// replayData replays the traces through a Collector, as
// `vigil-watch replay --html` does, and returns what it collected.
func replayData(t *testing.T, c hang.Config, paths ...string) Data {
	t.Helper()
	col := NewCollector()
	var ins []hang.Input
	var waits []func()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, wait := col.Tee(f)
		ins, waits = append(ins, hang.Input{Name: p, R: r}), append(waits, wait)
	}
	var out bytes.Buffer
	_, err := hang.ReplayInputs(ins, c, col.Events(&out))
	for _, w := range waits {
		w()
	}
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if out.Len() == 0 {
		t.Fatal("replay printed no event")
	}
	return col.Data(c.Window)
}

// external matches a reference to anything outside the page.
var external = regexp.MustCompile(`(?i)(src|href|action|poster|data)\s*=\s*["']?\s*(https?:|//|file:)|url\(|@import|<script|<link|<iframe|<img`)

func TestRenderThreeHosts(t *testing.T) {
	d := replayData(t, testConfig(), filepath.Join("testdata", "three-hosts.trace"))
	if len(d.Hosts) != 3 {
		t.Fatalf("collected %d hosts, want 3", len(d.Hosts))
	}
	page := Render(d)
	golden := filepath.Join("testdata", "three-hosts.html.golden")
	if *update {
		if err := os.WriteFile(golden, page, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(page, want) {
		t.Errorf("page differs from %s (run go test -update and read the diff)", golden)
	}
	checkPage(t, string(page), []string{"gpu01", "gpu02", "gpu03"}, []string{"gpu02"})
	for _, want := range []string{"bad-device", "DeviceFault", "GPU has fallen off the bus", "FlatUsageIdle", `class="event hung"`, `class="window"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// checkPage checks the page's structure: one chart per host, in host
// order, the culprits (and only they) highlighted, nothing external.
func checkPage(t *testing.T, page string, hosts, culprits []string) {
	t.Helper()
	charts := pagetest.Charts(page)
	if len(charts) != len(hosts) {
		t.Fatalf("%d charts, want one per host (%d)", len(charts), len(hosts))
	}
	for i, h := range charts {
		if h != hosts[i] {
			t.Errorf("chart %d is of %q, want %q", i, h, hosts[i])
		}
		if n := strings.Count(page, `<path class="series"`); n < 2*len(hosts) {
			t.Errorf("%d drawn series for %d hosts", n, len(hosts))
		}
	}
	marked := pagetest.Culprits(page)
	if len(marked) != len(culprits) {
		t.Fatalf("%d hosts marked culprit, want %v", len(marked), culprits)
	}
	for i, h := range marked {
		if h != culprits[i] {
			t.Errorf("culprit %d is %q, want %q", i, h, culprits[i])
		}
	}
	if m := external.FindString(page); m != "" {
		t.Errorf("page refers to something outside it: %q", m)
	}
}

func TestRenderWithoutVerdict(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	d := Data{Window: 10 * time.Minute, Hosts: map[string][]Point{}}
	for i := 0; i < 5; i++ {
		d.Hosts["cpu01"] = append(d.Hosts["cpu01"], PointOf(trace.Sample{Time: t0.Add(time.Duration(i) * time.Minute), Host: "cpu01",
			IO: trace.IO{RChar: uint64(i) << 20}, CPUUsec: uint64(i) * 60e6}))
	}
	page := string(Render(d))
	checkPage(t, page, []string{"cpu01"}, nil)
	if !strings.Contains(page, "No hang episode") {
		t.Error("page does not say that there was no hang episode")
	}
}

func TestPointOf(t *testing.T) {
	p := PointOf(trace.Sample{IO: trace.IO{RChar: 1, WChar: 2}, Accel: []trace.Accel{{Util: 100, PowerW: 100}, {Util: 0, PowerW: 50}}})
	if p.IOBytes != 3 || p.Util != 50 || p.PowerW != 150 {
		t.Errorf("PointOf = %+v", p)
	}
	p = PointOf(trace.Sample{Missing: []string{"io", "cpu"}})
	if !math.IsNaN(p.Util) || !math.IsNaN(p.PowerW) || !p.NoIO || !p.NoCPU {
		t.Errorf("PointOf without readings = %+v", p)
	}
}

func TestEventsSplitLines(t *testing.T) {
	c := NewCollector()
	var out bytes.Buffer
	w := c.Events(&out)
	in := `{"time":"2026-11-29T10:40:00Z","host":"a","event":"hung","reason":"FlatUsageIdle"}` + "\n" +
		`not json` + "\n" + `{"time":"2026-11-29T10:41:00Z","job":"1","event":"digest","cause":"unknown","culprits":[]}` + "\n"
	for i := 0; i < len(in); i += 7 {
		if _, err := w.Write([]byte(in[i:min(i+7, len(in))])); err != nil {
			t.Fatal(err)
		}
	}
	if out.String() != in {
		t.Errorf("written %q, want %q", out.String(), in)
	}
	evs := c.Data(time.Minute).Events
	if len(evs) != 2 || evs[0].Host != "a" || evs[1].Cause != "unknown" {
		t.Errorf("events = %+v", evs)
	}
}

// A member's copy of the digest knows the job's other hosts from the digest
// only: their sections say so, with no chart (issue 19 item 10: empty
// charts were drawn for them).
func TestRenderHostWithoutReadings(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	d := Data{Window: 10 * time.Minute, Hosts: map[string][]Point{}}
	for i := 0; i < 5; i++ {
		d.Hosts["n1"] = append(d.Hosts["n1"], PointOf(trace.Sample{Time: t0.Add(time.Duration(i) * time.Minute), Host: "n1", CPUUsec: uint64(i) * 60e6}))
	}
	d.Events = []Event{{Time: t0.Add(5 * time.Minute), Event: digest.EventDigest, Cause: digest.CauseNetwork, Hosts: []string{"n1", "n2"},
		Culprits: []digest.DigestCulprit{{Host: "n2", Reason: "TransportErrors"}}}}
	page := string(Render(d))
	if charts, marked := pagetest.Charts(page), pagetest.Culprits(page); strings.Join(charts, ",") != "n1" || strings.Join(marked, ",") != "n2" {
		t.Errorf("charts %v, culprits %v; want n1 (no empty chart of n2) and n2", charts, marked)
	}
	if got := strings.Count(page, `class="none nodata"`); got != 1 || !strings.Contains(page, "No readings of n2 on this page") {
		t.Errorf("%d no-readings notes, want one for n2:\n%s", got, page)
	}
}
