package digest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// view is a host waiting in a collective (busy devices, 12 processes),
// hung.
func view(host string) HostView {
	return HostView{Host: host, State: StateHung, Reason: "FlatUsageStuckCollective", // the detector's reason
		Latest: trace.Sample{Time: t0, Host: host, Procs: 12, Accel: []trace.Accel{{ID: "0", Util: 100}}}}
}

// lg is a matched line of host.
func lg(host, line string) LogEvidence {
	m, ok := joblog.LineIn("", line)
	if !ok {
		panic("no match: " + line)
	}
	return LogEvidence{Time: t0, Host: host, Stream: trace.StreamStderr, Line: line, Match: m}
}

func views(n int) []HostView {
	var out []HostView
	for i := 1; i <= n; i++ {
		out = append(out, view(fmt.Sprintf("gpu%02d", i)))
	}
	return out
}

func progressLine(rank int, epoch, step int) string {
	return fmt.Sprintf("[rank%d]: epoch %d step %d", rank, epoch, step)
}

func wd(rank int, op string, completed int) string {
	return fmt.Sprintf("[Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=%s, Timeout(ms)=600000); last completed NCCL work: %d.", rank, op, completed)
}

// TestDigestRules covers each rule's variants and the look-alikes that
// must not name a host, on the pure function.
func TestDigestRules(t *testing.T) {
	const ib = "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer %s<1> with status=12 opcode=0 len=0 vendor err 129"
	idle := func(v HostView, procs int) HostView {
		v.Latest.Accel[0].Util, v.Latest.Procs = 0, procs
		return v
	}
	idleAll := func(vs []HostView) []HostView {
		for i := range vs {
			vs[i] = idle(vs[i], 0)
		}
		return vs
	}
	tests := []struct {
		name  string
		hosts []HostView
		logs  []LogEvidence
		addrs map[string]string
		want  string // "cause host reason, ..."
	}{
		{"application xid only", views(3), []LogEvidence{lg("gpu02", "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics SM Warp Exception")}, nil, "unknown"},
		// https://github.com/NVIDIA/TensorRT-LLM/issues/15610: a two-host job.
		{"application xid where the processes are gone", func() []HostView { vs := views(2); vs[1] = idle(vs[1], 0); return vs }(),
			[]LogEvidence{lg("gpu02", "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics SM Warp Exception")}, nil, "rank-failed gpu02 Crashed"},
		{"application xid on every host", func() []HostView { vs := idleAll(views(2)); return vs }(),
			[]LogEvidence{lg("gpu01", "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics SM Warp Exception"),
				lg("gpu02", "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics SM Warp Exception")}, nil, "unknown"},
		// A host whose processes left after its own collective timed out
		// waited for the others: its readings do not name it.
		{"processes gone after their own watchdog timeout", func() []HostView { vs := views(3); vs[1] = idle(vs[1], 0); return vs }(),
			[]LogEvidence{lg("gpu02", wd(4, "ALLREDUCE", 76))}, nil, "unknown"},
		// https://github.com/NOAA-EMC/global-workflow/issues/1361: the readings
		// name the host, its own line says why its processes went.
		{"processes gone after an OOM kill", func() []HostView { vs := views(3); vs[1] = idle(vs[1], 0); return vs }(),
			[]LogEvidence{lg("gpu02", "srun: error: gpu02: task 300: Out Of Memory")}, nil, "rank-failed gpu02 OOMKilled"},
		// https://sulao.cn/post/1165: a contained ECC error ends the process.
		{"contained ecc error (xid 94)", views(3), []LogEvidence{lg("gpu02", "NVRM: Xid (PCI:0000:cb:00): 94, pid=538578, name=python, channel 0x0000000b")}, nil, "bad-device gpu02 DeviceFault"},
		{"uncorrectable ecc", views(3), []LogEvidence{lg("gpu01", "NVRM: Uncorrectable ECC error detected on GPU 0")}, nil, "bad-device gpu01 UncorrectableECC"},
		{"single host with a fault", views(1), []LogEvidence{lg("gpu01", "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, DBE")}, nil, "bad-device gpu01 DeviceFault"},
		{"npu fault code", views(3), []LogEvidence{lg("gpu02", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, critical alarm (fault)")}, nil, "bad-device gpu02 DeviceFault"},
		{"npu code in a minor alarm is no culprit", views(3), []LogEvidence{lg("gpu02", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80c98000, minor alarm")}, nil, "unknown"},
		{"npu code, health unknown, is no culprit", views(1), []LogEvidence{lg("gpu01", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, health unknown")}, nil, "unknown"},
		{"npu uncorrectable ecc", views(3), []LogEvidence{lg("gpu03", "dcmi: npu0 (PCI:0000:c1:00.0) uncorrectable ECC errors 1 (was 0)")}, nil, "bad-device gpu03 UncorrectableECC"},
		{"crash on one host", views(3), []LogEvidence{lg("gpu02", "Traceback (most recent call last):")}, nil, "rank-failed gpu02 Crashed"},
		{"tracebacks everywhere are no culprit", views(2), []LogEvidence{lg("gpu01", "Traceback (most recent call last):"), lg("gpu02", "Traceback (most recent call last):")}, nil, "unknown"},
		{"crash on a single host job", views(1), []LogEvidence{lg("gpu01", "RuntimeError: CUDA error: device-side assert triggered")}, nil, "rank-failed gpu01 Crashed"},
		{"processes gone, peers report its link: the rank failed", []HostView{view("gpu01"), view("gpu02"), idle(view("gpu03"), 0)},
			[]LogEvidence{lg("gpu01", fmt.Sprintf(ib, "10.0.0.3")), lg("gpu02", fmt.Sprintf(ib, "10.0.0.3"))}, map[string]string{"10.0.0.3": "gpu03"}, "rank-failed gpu03 ProcessesGone"},
		{"one bad link: both reporters", views(4), []LogEvidence{lg("gpu01", fmt.Sprintf(ib, "10.0.0.2")), lg("gpu02", fmt.Sprintf(ib, "10.0.0.1"))},
			map[string]string{"10.0.0.1": "gpu01", "10.0.0.2": "gpu02"}, "network gpu01 TransportErrors, gpu02 TransportErrors"},
		{"unresolved peer in several links", views(3), []LogEvidence{lg("gpu01", fmt.Sprintf(ib, "10.9.9.9")), lg("gpu02", fmt.Sprintf(ib, "10.9.9.9"))}, nil, "network 10.9.9.9 BadLinks"},
		{"gdr on some hosts", views(3), []LogEvidence{lg("gpu03", "h:1:2 [0] NCCL WARN NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'")}, nil, "network gpu03 GDRUnavailable"},
		{"retried warnings are no network error", views(3), []LogEvidence{lg("gpu01", "h:1:2 [0] NCCL WARN Call to connect returned Connection refused, retrying"), lg("gpu02", "h:1:2 [0] NCCL WARN NET/IB : Got async event : port error, retrying")}, nil, "unknown"},
		{"rank stopped: the rank failed", []HostView{view("gpu01"), view("gpu02"), func() HostView { v := view("gpu03"); v.Latest.ProcsT = v.Latest.Procs; return v }()}, nil, nil, "rank-failed gpu03 ProcessesStopped"},
		{"processes in D alone", []HostView{view("gpu01"), view("gpu02"), func() HostView { v := view("gpu03"); v.Latest.ProcsD = 4; return v }()}, nil, nil, "data-stall gpu03 ProcessesInD"},
		{"behind in completed work", views(3), []LogEvidence{lg("gpu01", wd(0, "ALLREDUCE", 76)), lg("gpu02", wd(1, "ALLREDUCE", 76)), lg("gpu03", wd(2, "ALLREDUCE", 75))}, nil, "different-progress gpu03 BehindInWork"},
		{"ahead in completed work is no culprit", views(3), []LogEvidence{lg("gpu01", wd(0, "ALLREDUCE", 76)), lg("gpu02", wd(1, "ALLREDUCE", 75)), lg("gpu03", wd(2, "ALLREDUCE", 75))}, nil, "unknown"},
		{"two hosts, other collective: both", views(2), []LogEvidence{lg("gpu01", wd(0, "ALLREDUCE", 76)), lg("gpu02", wd(1, "ALLGATHER", 76))}, nil, "different-progress gpu01 OtherCollective, gpu02 OtherCollective"},
		{"other epoch", views(3), []LogEvidence{lg("gpu01", progressLine(0, 4, 10)), lg("gpu02", progressLine(8, 4, 10)), lg("gpu03", progressLine(16, 5, 0))}, nil, "different-progress gpu03 OtherEpoch"},
		{"slowest rank of a host counts", views(2), []LogEvidence{lg("gpu01", progressLine(0, 1, 500)), lg("gpu01", progressLine(1, 1, 480)), lg("gpu02", progressLine(2, 1, 500))}, nil, "different-progress gpu01 BehindInSteps"},
		{"same progress everywhere", views(3), []LogEvidence{lg("gpu01", progressLine(0, 1, 500)), lg("gpu02", progressLine(1, 1, 500)), lg("gpu03", progressLine(2, 1, 500))}, nil, "unknown"},
		{"progress of one host only", views(3), []LogEvidence{lg("gpu01", progressLine(0, 1, 500))}, nil, "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Digest(DigestInput{Time: t0.Add(time.Hour), Job: "9", Hosts: tc.hosts, Logs: tc.logs, Addrs: tc.addrs}, testConfig())
			var cs []string
			for _, c := range d.Culprits {
				if len(c.Evidence) == 0 {
					t.Errorf("culprit %s without evidence", c.Host)
				}
				cs = append(cs, c.Host+" "+c.Reason)
			}
			got := d.Cause
			if len(cs) > 0 {
				got += " " + strings.Join(cs, ", ")
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if d.Event != EventDigest || d.Hint == "" || d.Culprits == nil || len(d.Hosts) < len(tc.hosts) {
				t.Fatalf("incomplete digest %+v", d)
			}
		})
	}
}
