package hang

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// TestReplayAttributesFromTheLine: the job's output is read on the batch
// host (gpu01); replay charges each line to the host its text names (an
// NCCL prefix, srun's error line, [rankN] through the recorded layout),
// and a line that names nobody to nobody.
func TestReplayAttributesFromTheLine(t *testing.T) {
	hosts := []string{"gpu01", "gpu02", "gpu03"}
	lay, _ := json.Marshal(joblog.Layout{Nodes: hosts, Tasks: map[int]string{0: "gpu01", 1: "gpu02", 2: "gpu03"}})
	e := NewEpisodes(watchcfg.DefaultHang())
	at := t0.Add(time.Minute)
	for i, line := range []string{
		string(lay),
		"gpu03:984:1357 [4] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<52318> with error 12, opcode 1, len 0, vendor err 129",
		"srun: error: gpu02: task 1: Exited with exit code 1",
		"[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered",
		"RuntimeError: CUDA error: uncorrectable ECC error encountered",
	} {
		stream := trace.StreamStderr
		if i == 0 {
			stream = trace.StreamLayout
		}
		e.Observe(trace.Sample{V: 1, Time: at, Host: "gpu01", Job: "4242", Log: &trace.Log{Stream: stream, Line: line}}, nil)
	}
	got := map[string]string{}
	for _, l := range e.digestInput("4242", e.jobs["4242"]).Logs {
		got[l.Line[:12]] = l.Host + "<-" + l.Reader
	}
	want := map[string]string{"gpu03:984:13": "gpu03<-gpu01", "[rank2]: Run": "gpu03<-gpu01", "RuntimeError": "<-gpu01"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q: %q, want %q (all %v)", k, got[k], v, got)
		}
	}
}
