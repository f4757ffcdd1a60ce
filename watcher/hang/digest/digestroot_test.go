package digest

import (
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/watcher/joblog"
)

// TestRootOutranksItsConsequence: a device fault or a transport error
// whose line names no host is the cause, and the host whose ranks died
// after it (processes gone, judged in a two-host job too) or the rank the
// line names is the culprit; a rank that died never outranks the root
// that explains it, and the digest says the chain.
func TestRootOutranksItsConsequence(t *testing.T) {
	gone := func(vs []HostView, host string) []HostView {
		for i := range vs {
			if vs[i].Host == host {
				vs[i].Latest.Procs = 0
			}
		}
		return vs
	}
	ecc := lg("", "RuntimeError: CUDA error: uncorrectable ECC error encountered")
	tests := []struct {
		name   string
		hosts  []HostView
		logs   []LogEvidence
		layout joblog.Layout
		want   string
	}{
		{"ECC, three hosts, one gone", gone(views(3), "gpu03"), []LogEvidence{ecc}, joblog.Layout{}, "bad-device gpu03 ProcessesGone"},
		{"ECC, two hosts, one gone", gone(views(2), "gpu02"), []LogEvidence{ecc}, joblog.Layout{}, "bad-device gpu02 ProcessesGone"},
		{"ECC, nobody gone: names nobody", views(2), []LogEvidence{ecc}, joblog.Layout{}, "bad-device"},
		{"torchrun names the rank", views(2), []LogEvidence{lg("", "rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>")},
			joblog.Layout{Nodes: []string{"gpu01", "gpu02"}, Ranks: map[int]string{0: "gpu01", 1: "gpu01", 2: "gpu02", 3: "gpu02"}},
			"rank-failed gpu02 RankNamed"},
		{"every host gone: names nobody", gone(gone(views(2), "gpu01"), "gpu02"), []LogEvidence{ecc}, joblog.Layout{}, "bad-device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0, Job: "1", Hosts: tt.hosts, Logs: tt.logs, Layout: tt.layout}, testConfig())
			got := d.Cause
			for _, c := range d.Culprits {
				got += " " + c.Host + " " + c.Reason
			}
			if got != tt.want {
				t.Fatalf("digest %q, want %q (because %q)", got, tt.want, d.Because)
			}
			if len(d.Culprits) > 0 && (len(d.Because) < 2 || !strings.Contains(d.Because[0], "(root, names no host)")) {
				t.Errorf("because %q: want the root, then what names the culprit", d.Because)
			}
		})
	}
}
