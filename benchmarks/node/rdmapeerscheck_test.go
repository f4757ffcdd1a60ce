package node

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

func summaryReport(t *testing.T, s RDMASummary) benchmarks.PeerReport {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return benchmarks.PeerReport{Payload: b}
}

func TestRDMAPeersJudge(t *testing.T) {
	ib := RDMASummary{Devices: 8, Ports: 8, ActivePorts: 8, MinRateGbps: 400, TotalRateGbps: 3200, GDR: true, GDRModule: "nvidia_peermem"}
	noGDR, down := ib, ib
	noGDR.GDR, noGDR.GDRModule = false, ""
	down.ActivePorts = 7
	rep := func(s RDMASummary) benchmarks.PeerReport { return summaryReport(t, s) }
	tests := []struct {
		name    string
		reports map[string]benchmarks.PeerReport
		want    map[string]string // node → "status reason"
	}{
		{"all alike", map[string]benchmarks.PeerReport{"n1": rep(ib), "n2": rep(ib), "n3": rep(ib)},
			map[string]string{"n1": "pass ", "n2": "pass ", "n3": "pass "}},
		{"GDR on some nodes only (the seed case)", map[string]benchmarks.PeerReport{"n1": rep(ib), "n2": rep(noGDR), "n3": rep(ib), "n4": rep(ib)},
			map[string]string{"n1": "pass ", "n2": "fail GPUDirectRDMAMissing", "n3": "pass ", "n4": "pass "}},
		{"most nodes without GDR: nobody named", map[string]benchmarks.PeerReport{"n1": rep(ib), "n2": rep(noGDR), "n3": rep(noGDR)},
			map[string]string{"n1": "pass ", "n2": "pass ", "n3": "pass "}},
		{"a port down, a summary unread, one garbled", map[string]benchmarks.PeerReport{"n1": rep(ib), "n2": rep(down), "n3": rep(ib),
			"n4": {Error: "open /sys/class/infiniband: permission denied"}, "n5": {Payload: json.RawMessage(`[1]`)}},
			map[string]string{"n1": "pass ", "n2": "fail RDMAPortsBelowPeers", "n3": "pass ", "n4": "unknown RDMAUnreadable", "n5": "unknown RDMAUnreadable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rdmaPeers{}.Judge(tt.reports, []string{"n9"})
			if len(got) != len(tt.want) {
				t.Fatalf("%d verdicts, want %d", len(got), len(tt.want))
			}
			for n, w := range tt.want {
				v := got[n]
				if s := string(v.Status) + " " + v.Reason; s != w || v.Check != RDMAPeersName {
					t.Errorf("%s: %s %q, want %s", n, s, v.Message, w)
				}
				if !strings.HasSuffix(v.Message, "; absent (their prologs never met): n9") {
					t.Errorf("%s: message %q does not name the absent node", n, v.Message)
				}
			}
		})
	}
	if got := (rdmaPeers{}).Judge(nil, nil); len(got) != 0 {
		t.Errorf("no reports: %v", got)
	}
}

// TestRDMAPeersInPhase: the seed case through the cross-node phase, from
// sysfs fixtures. Four nodes meet on loopback; three read the "dgx" tree
// (nvidia_peermem loaded), one "dgx-no-gdr". That one alone fails, and its
// drain reason is "vigil: rdma-peers GPUDirectRDMAMissing".
func TestRDMAPeersInPhase(t *testing.T) {
	names, addrs := rdvtest.Cluster(4)
	odd := names[2]
	l, err := net.Listen("tcp", net.JoinHostPort(addrs[names[0]], "0"))
	if err != nil {
		t.Fatal(err)
	}
	conn := *crossnet.DefaultConnect()
	conn.Port, conn.Join = l.Addr().(*net.TCPAddr).Port, 2*time.Second
	l.Close()
	logger, _ := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make([][]benchmarks.Result, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		root := rdmaFixture("dgx")
		if name == odd {
			root = rdmaFixture("dgx-no-gdr")
		}
		p := crossnet.Phase{Job: "91", Self: name, Nodes: names, Addrs: addrs, Checks: []string{RDMAPeersName},
			Connect: conn, Bandwidth: *crossnet.DefaultBandwidth(), Auth: rdvtest.New([]byte("k"), 0), Log: logger,
			Settings: func(check string) func(v any) error {
				if check != "rdma" {
					t.Errorf("rdma-peers read [checks.%s]", check)
				}
				return settings(t, "root = '"+root+"'\n")
			}}
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = p.RunJob(ctx).Results }()
	}
	wg.Wait()
	for i, n := range names {
		if len(out[i]) != 1 {
			t.Fatalf("%s: %+v", n, out[i])
		}
		r := out[i][0]
		if n != odd {
			if r.Status != benchmarks.StatusPass || r.Message != "RDMA in line with the job's 4 nodes compared (3 with GPUDirect RDMA)" || len(r.Values) != 3 {
				t.Errorf("%s: %+v", n, r)
			}
			continue
		}
		d := benchmarks.FormatDrain([]benchmarks.DrainEntry{benchmarks.EntryOf(r)})
		if r.Status != benchmarks.StatusFail || d != "vigil: rdma-peers GPUDirectRDMAMissing" || !strings.Contains(r.Message, "NCCL_NET_GDR_LEVEL=0") {
			t.Errorf("%s: %+v, drain %q", n, r, d)
		}
		if e, ok := benchmarks.ParseDrain(d); !ok || e[0].Check != RDMAPeersName || e[0].Reason != ReasonGDRMissing {
			t.Errorf("drain reason %q parses to %+v %v", d, e, ok)
		}
	}
}

func TestRDMAPeersRegistered(t *testing.T) {
	c, ok := benchmarks.Lookup(RDMAPeersName)
	if !ok || benchmarks.Describe(c).Scope != benchmarks.ScopeCrossNode || !benchmarks.Describe(c).Default || c.Spec().Kind != benchmarks.KindHealth ||
		c.Spec().Vendor != benchmarks.VendorNone {
		t.Fatalf("%s: registered %v, or not a vendor-neutral cross-node health fact in the default suite", RDMAPeersName, ok)
	}
	if _, isPeer := c.(benchmarks.PeerCheck); !isPeer {
		t.Error("rdma-peers is not a benchmarks.PeerCheck")
	}
	if r := c.Run(context.Background(), &benchmarks.Env{}); r.Status != benchmarks.StatusUnknown || r.Reason != benchmarks.ReasonOutsideProlog {
		t.Errorf("alone: %+v", r)
	}
}
