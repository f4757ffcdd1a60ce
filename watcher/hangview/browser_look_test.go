package hangview

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/hangview/pagetest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

var lookT0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// readings is an hour of a host's readings, one a minute, I/O stopping at
// minute 25; devs devices at 100% (none: a node without accelerators).
func readings(host string, devs int) []Point {
	var ps []Point
	for i := 0; i <= 60; i++ {
		s := trace.Sample{Time: lookT0.Add(time.Duration(i) * time.Minute), Host: host, Job: "7",
			IO: trace.IO{WChar: uint64(min(i, 25)) << 20}, CPUUsec: uint64(i) * 60e6}
		for d := 0; d < devs; d++ {
			s.Accel = append(s.Accel, trace.Accel{ID: string(rune('0' + d)), Util: 100, PowerW: 80})
		}
		ps = append(ps, PointOf(s))
	}
	return ps
}

func hungAt(host string, m int) Event {
	return Event{Time: lookT0.Add(time.Duration(m) * time.Minute), Host: host, Job: "7", Event: hang.EventHung,
		Reason: hang.ReasonFlatUsageStuckCollective, Message: "all devices flat"}
}

// The pages of issue 19 item 10, as the watchers write them.
func lookPages(t *testing.T) map[string]Data {
	three := replayData(t, testConfig(), filepath.Join("testdata", "three-hosts.trace"))
	digest := Event{Time: lookT0.Add(41 * time.Minute), Job: "7", Event: digest.EventDigest, Cause: digest.CauseRankFailed,
		Hosts: []string{"n1", "n2", "n3"}, Culprits: []digest.DigestCulprit{{Host: "n3", Reason: "ProcessesGone"}}, Since: lookT0.Add(25 * time.Minute)}
	culpritOK := Data{Window: 10 * time.Minute, Hosts: map[string][]Point{"n1": readings("n1", 2), "n3": readings("n3", 2)},
		Events: []Event{hungAt("n1", 40), digest}}
	member := Data{Window: 10 * time.Minute, Hosts: map[string][]Point{"n1": readings("n1", 2)}, Events: []Event{hungAt("n1", 40), digest}}
	lone := Data{Window: 10 * time.Minute, Hosts: map[string][]Point{"n1": readings("n1", 2)}, Events: []Event{hungAt("n1", 40)}}
	cpu := Data{Window: 10 * time.Minute, Hosts: map[string][]Point{"cpu01": readings("cpu01", 0)}, Events: []Event{hungAt("cpu01", 40)}}
	return map[string]Data{"three hosts": three, "culprit without verdict": culpritOK, "member's copy": member, "lone watcher": lone, "no accelerators": cpu}
}

// rowOf is the table row of host (its cells joined by " | ").
func rowOf(rows []string, host string) string {
	for _, r := range rows {
		if strings.HasPrefix(r, host+" | ") {
			return r
		}
	}
	return ""
}

// TestPagesAsSeen lays the hang pages out in the headless browser and
// reads what a person sees (issue 19 item 10): the host table's text
// says what the page knows of each host (a culprit is not "ok", a host it
// has no reading of is not "ok"), a page without a digest does not deny a
// hang it shows, no chart is empty, and no SVG label falls outside its
// SVG or onto another.
func TestPagesAsSeen(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no browser run")
	}
	for name, d := range lookPages(t) {
		t.Run(name, func(t *testing.T) {
			seen := pagetest.Look(t, Render(d), 1200)
			rows := seen.TableText("verdicts")
			if len(rows) == 0 || rows[0] != "host | state | reason | time | message | digest" {
				t.Errorf("host table %q", rows)
			}
			for _, c := range seen.Clipped() {
				t.Errorf("clipped: %s", c)
			}
			for _, o := range seen.Overlapping() {
				t.Errorf("overlap: %s", o)
			}
			for _, g := range seen.SVGs {
				if len(g.Texts) == 0 {
					t.Errorf("svg %d (%s) shows no text", g.Index, g.Host)
				}
			}
			checkSeen(t, name, seen, rows)
		})
	}
}

func checkSeen(t *testing.T, name string, seen pagetest.Seen, rows []string) {
	t.Helper()
	switch name {
	case "three hosts":
		if r := rowOf(rows, "gpu02"); !strings.HasPrefix(r, "gpu02 | hung | FlatUsageIdle") || !strings.HasSuffix(r, "| culprit: DeviceFault") {
			t.Errorf("gpu02's row %q", r)
		}
	case "culprit without verdict":
		if r := rowOf(rows, "n3"); !strings.HasPrefix(r, "n3 | no verdict |") || !strings.HasSuffix(r, "| culprit: ProcessesGone") {
			t.Errorf("the culprit's row %q: framed red, it must not read ok", r)
		}
	case "member's copy":
		for _, h := range []string{"n2", "n3"} {
			if r := rowOf(rows, h); !strings.HasPrefix(r, h+" | unknown here |") {
				t.Errorf("%s's row %q: this copy has no reading of it, it cannot say ok", h, r)
			}
		}
		if len(seen.SVGs) != 1 || seen.SVGs[0].Host != "n1" {
			t.Errorf("%d charts, want n1's only (none empty)", len(seen.SVGs))
		}
		if !strings.Contains(seen.Text, "hung since 2026-11-29T10:25:00Z") {
			t.Errorf("the digest does not say since when the job hangs")
		}
	case "lone watcher":
		if strings.Contains(seen.Text, "No hang episode") || !strings.Contains(seen.Text, "Hung: n1 at 2026-11-29T10:40:00Z") {
			t.Errorf("a page with n1 hung says:\n%.600s", seen.Text)
		}
	case "no accelerators":
		for _, tx := range seen.SVGs[0].Texts {
			if strings.HasPrefix(tx.Text, "Device") {
				t.Errorf("a node without accelerators has a %q panel", tx.Text)
			}
		}
		if !strings.Contains(seen.Text, "No accelerator readings of cpu01") {
			t.Errorf("the page does not say why cpu01 has no device panels")
		}
	}
}

// TestPagesSayWhatTheyKnow is TestPagesAsSeen's checks on the HTML, for
// -short runs: the rows, the note of a page without a digest, the charts.
func TestPagesSayWhatTheyKnow(t *testing.T) {
	pages := lookPages(t)
	row := func(page, host string) string {
		i := strings.Index(page, "<td>"+host+"</td>")
		if i < 0 {
			return ""
		}
		return page[i : i+strings.Index(page[i:], "</tr>")]
	}
	page := string(Render(pages["culprit without verdict"]))
	if r := row(page, "n3"); !strings.Contains(r, "<td>no verdict</td>") || !strings.Contains(r, "<td>culprit: ProcessesGone</td>") {
		t.Errorf("culprit's row %q", r)
	}
	page = string(Render(pages["member's copy"]))
	if r := row(page, "n2"); !strings.Contains(r, "<td>unknown here</td>") {
		t.Errorf("member's copy, n2's row %q", r)
	}
	if got := strings.Join(pagetest.Charts(page), ","); got != "n1" {
		t.Errorf("member's copy charts %s, want n1 only", got)
	}
	page = string(Render(pages["lone watcher"]))
	if strings.Contains(page, "No hang episode") || !strings.Contains(page, "Hung: n1 at 2026-11-29T10:40:00Z (FlatUsageStuckCollective)") {
		t.Errorf("lone watcher's page does not say n1 is hung")
	}
	page = string(Render(pages["no accelerators"]))
	if n := pagetest.Series(page)["cpu01"]; n != 2 || strings.Contains(page, "Device utilisation") {
		t.Errorf("cpu01 without accelerators: %d series, device panel drawn: %v", n, strings.Contains(page, "Device utilisation"))
	}
}
