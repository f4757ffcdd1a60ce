package digest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// rasAt is the RAS answer st as gpu01's watcher recorded it, at t0+min.
func rasAt(min int, st trace.RAS) LogEvidence {
	rec := trace.RASRecord("gpu01", "77", t0.Add(time.Duration(min)*time.Minute), st)
	m, ok := joblog.LineIn(trace.StreamRAS, rec.Log.Line)
	if !ok {
		panic("no match: " + rec.Log.Line)
	}
	return LogEvidence{Time: rec.Time, Host: "gpu01", Reader: "gpu01", Stream: trace.StreamRAS, Line: rec.Log.Line, Match: m}
}

// rasAddrs are the job's hosts' bootstrap addresses, as NCCL's start-up
// lines give them.
var rasAddrs = map[string]string{"10.0.0.11": "gpu01", "10.0.0.12": "gpu02", "10.0.0.13": "gpu03", "10.0.0.14": "gpu04"}

func rasProc(host string, pid int) trace.RASRank {
	return trace.RASRank{Rank: -1, Host: host, PID: pid, GPU: "1"}
}

// behindAt: rank 7 on 10.0.0.12 at AllReduce count, the 15 others at
// others.
func behindAt(min int, count, others int64) LogEvidence {
	return rasAt(min, trace.RAS{Format: trace.RASText, Comms: []trace.RASComm{{ID: "#0-0", Hash: "0b5e1f3a9c2d4e70", Ranks: 16, Errors: "MISMATCH",
		Counts: []trace.RASCount{{Op: "AllReduce", Count: others, Ranks: 15},
			{Op: "AllReduce", Count: count, Ranks: 1, Listed: []trace.RASRank{{Rank: 7, Host: "10.0.0.12", PID: 30977, GPU: "3"}}}}}}})
}

func TestDigestRAS(t *testing.T) {
	dead := trace.RAS{Format: trace.RASText, Dead: []trace.RASRank{rasProc("10.0.0.14", 52011)}, DeadCount: 1}
	silent := trace.RAS{Format: trace.RASText, Unresponsive: []trace.RASRank{rasProc("10.0.0.13", 41207)}, UnresponsiveCount: 1}
	missing := trace.RAS{Format: trace.RASJSON, Comms: []trace.RASComm{{Hash: "ae94423cfbb2ef4a", Ranks: 2, MissingCount: 1,
		Missing: []trace.RASRank{{Rank: 1, Host: "10.0.0.13", PID: 41207, GPU: "1", Unresponsive: true}}}}}
	jsonDead := missing
	jsonDead.Comms = []trace.RASComm{missing.Comms[0]}
	jsonDead.Comms[0].Missing = []trace.RASRank{{Rank: 1, Host: "10.0.0.13", PID: 41207, GPU: "1", Unresponsive: true, Dead: true}}
	stranger := trace.RAS{Format: trace.RASText, Dead: []trace.RASRank{rasProc("192.168.9.9", 1)}, DeadCount: 1}
	const ib = "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer %s<1> with status=12 opcode=0 len=0 vendor err 129"
	net := func(min int) LogEvidence {
		l := lg("gpu02", fmt.Sprintf(ib, "10.0.0.13"))
		l.Time = t0.Add(time.Duration(min) * time.Minute)
		return l
	}
	for _, tc := range []struct {
		name string
		logs []LogEvidence
		want string // "cause host reason, ..."
	}{
		{"dead, one answer", []LogEvidence{rasAt(1, dead)}, "rank-failed gpu04 RASDeadRank"},
		{"dead in a comm's missing ranks (JSON)", []LogEvidence{rasAt(1, jsonDead)}, "rank-failed gpu03 RASDeadRank"},
		{"unresponsive once is not enough", []LogEvidence{rasAt(1, silent)}, "unknown"},
		{"unresponsive twice", []LogEvidence{rasAt(1, silent), rasAt(2, silent)}, "rank-failed gpu03 RASUnresponsive"},
		{"missing rank twice (JSON)", []LogEvidence{rasAt(1, missing), rasAt(2, missing)}, "rank-failed gpu03 RASUnresponsive"},
		{"unresponsive, then dead", []LogEvidence{rasAt(1, silent), rasAt(2, silent), rasAt(3, dead)},
			"rank-failed gpu03 RASUnresponsive, gpu04 RASDeadRank"},
		{"a host that is not the job's", []LogEvidence{rasAt(1, stranger), rasAt(2, stranger)}, "unknown"},
		{"behind, stuck", []LogEvidence{behindAt(1, 811, 812), behindAt(2, 811, 812)}, "different-progress gpu02 RASBehind"},
		{"behind once is not enough", []LogEvidence{behindAt(1, 811, 812)}, "unknown"},
		{"behind but moving", []LogEvidence{behindAt(1, 811, 812), behindAt(2, 900, 901)}, "unknown"},
		{"the earlier transport error wins", []LogEvidence{net(0), rasAt(1, dead)}, "network gpu03 NamedAsPeer"},
		{"the earlier dead rank wins", []LogEvidence{rasAt(1, dead), net(2)}, "rank-failed gpu04 RASDeadRank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0.Add(5 * time.Minute), Job: "77", Hosts: views(4), Logs: tc.logs, Addrs: rasAddrs}, testConfig())
			var got []string
			for _, c := range d.Culprits {
				got = append(got, c.Host+" "+c.Reason)
			}
			s := d.Cause
			if len(got) > 0 {
				s += " " + strings.Join(got, ", ")
			}
			if s != tc.want {
				t.Errorf("digest %q, want %q (chain %v)", s, tc.want, d.Chain)
			}
		})
	}
}

// TestDigestRASEvidence: a RAS culprit's evidence says what RAS said.
func TestDigestRASEvidence(t *testing.T) {
	d := Digest(DigestInput{Time: t0.Add(5 * time.Minute), Job: "77", Hosts: views(4), Addrs: rasAddrs,
		Logs: []LogEvidence{behindAt(1, 811, 812), behindAt(2, 811, 812)}}, testConfig())
	if len(d.Culprits) != 1 {
		t.Fatalf("culprits %+v", d.Culprits)
	}
	e := d.Culprits[0].Evidence
	said := fmt.Sprint(e["ras"])
	if !strings.Contains(said, "rank 7 (pid 30977, GPU 3) on 10.0.0.12 at AllReduce 811 of comm 0b5e1f3a9c2d4e70, others up to 812") ||
		e["answers"] != 2 || e["others_max"] != int64(812) {
		t.Errorf("evidence %v", e)
	}
}
