package notice

import (
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/hangreport"
)

// TestCoordinatorDigest: only a coordinator's digest report about node
// counts, the newest of them; members' and other hosts' do not.
func TestCoordinatorDigest(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	d := &hangreport.Digest{Cause: "network"}
	all := []hangreport.Report{
		{Event: hangreport.EventHung, Host: "n1", Time: t0.Add(time.Hour), Coordinator: true, Digest: d, Path: "new"},
		{Event: hangreport.EventHung, Host: "n1", Time: t0, Coordinator: true, Digest: d, Path: "old"},
		{Event: hangreport.EventHung, Host: "n1", Time: t0.Add(2 * time.Hour), Digest: d, Path: "member"},
		{Event: hangreport.EventHung, Host: "n1", Time: t0.Add(2 * time.Hour), Coordinator: true, Path: "no digest"},
		{Event: hangreport.EventRecovered, Host: "n1", Time: t0.Add(2 * time.Hour), Coordinator: true, Digest: d, Path: "recovered"},
		{Event: hangreport.EventHung, Host: "n2", Time: t0.Add(2 * time.Hour), Coordinator: true, Digest: d, Path: "n2"},
	}
	if r, others, ok := CoordinatorDigest(all, "n1"); !ok || r.Path != "new" || others != 1 {
		t.Errorf("n1: %q, %d, %v: want new, 1 other", r.Path, others, ok)
	}
	if r, _, ok := CoordinatorDigest(all, "n3"); ok {
		t.Errorf("n3: %q: want none", r.Path)
	}
	if _, _, ok := CoordinatorDigest(all, ""); ok {
		t.Error("no node name: want none")
	}
}
