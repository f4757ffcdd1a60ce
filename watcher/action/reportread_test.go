package action

import (
	"context"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/hangreport"
	"github.com/vigil-hpc/vigil/watcher/hang"
)

// TestReadReportRoundTrip reads back what the writer wrote: the reader and
// the writer agree on the format.
func TestReadReportRoundTrip(t *testing.T) {
	f := newFixture(t)
	ev := hungEvent("n1", t0)
	ev.Evidence["culprits"] = []any{"n1", "n3"}
	if err := f.actor.Handle(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	paths, err := hangreport.FindReports(f.actor.ReportDir, "1234")
	if err != nil || len(paths) != 1 {
		t.Fatalf("FindReports = %v, %v", paths, err)
	}
	r, err := hangreport.ReadReport(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.Job != "1234" || r.Host != "n1" || r.Event != hang.EventHung || strings.Join(r.Culprits, ",") != "n1,n3" || r.Path != paths[0] {
		t.Fatalf("report %+v", r)
	}
	if !r.Blames("n3") || r.Blames("n2") {
		t.Fatalf("Blames: n3 %v, n2 %v", r.Blames("n3"), r.Blames("n2"))
	}
}
