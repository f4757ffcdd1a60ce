package digest

import (
	"testing"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// TestLustreLostIsDataStall: a node's kernel saying its Lustre metadata
// connection was lost, while its peers' did not, names it for a data
// stall in a hang's digest.
// https://github.com/aws/aws-parallelcluster/issues/2701
func TestLustreLostIsDataStall(t *testing.T) {
	const line = "Lustre: no2zxbmv-MDT0000-mdc-000000001785e248: Connection to no2zxbmv-MDT0000 (at 10.0.47.232@tcp) was lost; in progress operations using this service will wait for recovery to complete"
	m, ok := joblog.LineIn(trace.StreamKmsg, line)
	if !ok {
		t.Fatalf("%q means nothing", line)
	}
	in := DigestInput{Time: t0, Job: "9", Logs: []LogEvidence{{Time: t0, Host: "gpu02", Stream: trace.StreamKmsg, Line: line, Match: m}}}
	for _, h := range []string{"gpu01", "gpu02", "gpu03"} {
		in.Hosts = append(in.Hosts, HostView{Host: h, State: StateHung})
	}
	d := Digest(in, watchcfg.DefaultHang())
	if d.Cause != CauseDataStall || len(d.Culprits) != 1 || d.Culprits[0].Host != "gpu02" || d.Culprits[0].Reason != DigestIOStalled {
		t.Errorf("digest %+v, want a data stall on gpu02", d)
	}
}
