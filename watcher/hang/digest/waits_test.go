package digest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

var (
	toN3Retrans = trace.Wait{On: trace.WaitSocket, Syscall: "recvfrom", Peer: "10.0.0.3", Retrans: true, Procs: 4}
	toN3        = trace.Wait{On: trace.WaitSocket, Syscall: "recvfrom", Peer: "10.0.0.3", Procs: 4}
	onPipe      = trace.Wait{On: trace.WaitPipe, Syscall: "read", Procs: 1}
	onFutex     = trace.Wait{On: trace.WaitFutex, Syscall: "futex", Procs: 4}
	frozenAll   = trace.Wait{On: trace.WaitFrozen, Procs: 4}
	// A rank opening its input, a FIFO nobody writes; one reading a FIFO;
	// srun's helper on the batch host, reading an anonymous pipe.
	openFIFO = trace.Wait{On: trace.WaitPipe, Syscall: "openat", Procs: 1}
	readFIFO = trace.Wait{On: trace.WaitPipe, Syscall: "read", FS: "nfs4", Procs: 1}
	srunPipe = trace.Wait{On: trace.WaitPipe, Syscall: "read", Procs: 2}
)

// waitsLine is the line of a waits record with groups gs.
func waitsLine(frozen int, gs ...trace.Wait) string {
	procs := 0
	for _, g := range gs {
		procs += g.Procs
	}
	return trace.WaitsRecord("", "", t0, trace.Waits{Procs: procs, Frozen: frozen, Waits: gs}).Log.Line
}

// retransLine is the line of a waits record of processes in a futex whose
// data to addrs is being retransmitted.
func retransLine(addrs ...string) string {
	w := trace.Waits{Procs: 4, Waits: []trace.Wait{onFutex}, RetransTo: addrs}
	return trace.WaitsRecord("", "", t0, w).Log.Line
}

func TestWaitsJudgement(t *testing.T) {
	hosts := []string{"n1", "n2", "n3"}
	tests := []struct {
		name        string
		waits       map[string]string // host -> its waits record's line
		want        string            // cause and culprits
		hint, never string
	}{
		{"n3 cut off: every rank's data to it retransmitted", map[string]string{
			"n1": waitsLine(0, toN3Retrans), "n2": waitsLine(0, toN3Retrans)},
			"network n3 Retransmitting", "cut off from the network", "NCCL reported"},
		{"n3 cut off in a ring: it retransmits to n1, n2 to it, n1 only waits", map[string]string{
			"n1": waitsLine(0, onFutex), "n2": retransLine("10.0.0.3"), "n3": retransLine("10.0.0.1")},
			"network n3 Retransmitting", "cut off from the network", ""},
		{"n3 cut off: it retransmits to both, its peers only wait", map[string]string{
			"n1": waitsLine(0, onFutex), "n2": waitsLine(0, onFutex), "n3": retransLine("10.0.0.1", "10.0.0.2")},
			"network n3 Retransmitting", "cut off from the network", ""},
		{"n2 and n3 retransmit to each other alone: either may be cut off", map[string]string{
			"n1": waitsLine(0, onFutex), "n2": retransLine("10.0.0.3"), "n3": retransLine("10.0.0.2")},
			"unknown", "", ""},
		{"n1 alone has data unacknowledged, to an address of no job host, its peers nothing in flight", map[string]string{
			"n1": retransLine("127.0.0.1"), "n2": waitsLine(0, onFutex), "n3": waitsLine(0, onFutex)},
			"network n1 Retransmitting", "", ""},
		{"n1 alone has data unacknowledged to n2: either end of the link may have failed", map[string]string{
			"n1": retransLine("10.0.0.2"), "n2": waitsLine(0, onFutex), "n3": waitsLine(0, onFutex)},
			"unknown", "", ""},
		{"two hosts have data unacknowledged to unknown addresses: nobody", map[string]string{
			"n1": retransLine("127.0.0.1"), "n2": retransLine("127.0.0.1"), "n3": waitsLine(0, onFutex)},
			"unknown", "", ""},
		{"links that fail share no host: nobody", map[string]string{
			"n1": retransLine("10.0.0.2"), "n2": waitsLine(0, onFutex), "n3": retransLine("10.0.0.1", "10.0.0.2")},
			"unknown", "", ""},
		{"n3 reads a pipe while its peers wait on it", map[string]string{
			"n1": waitsLine(0, toN3), "n2": waitsLine(0, toN3), "n3": waitsLine(0, onPipe, onFutex)},
			"data-stall n3 WaitsOnInput", "wait on a file or a pipe", ""},
		{"n3 frozen", map[string]string{
			"n1": waitsLine(0, toN3), "n2": waitsLine(0, toN3), "n3": waitsLine(4, frozenAll)},
			"rank-failed n3 Frozen", "frozen", "input file system"},
		{"one peer's data not retransmitted, n3 waits on nothing: no judgement", map[string]string{
			"n1": waitsLine(0, toN3Retrans), "n2": waitsLine(0, toN3), "n3": waitsLine(0, onFutex)},
			"unknown", "", ""},
		{"n2's rank opens a FIFO while its peers wait in collectives (no socket named)", map[string]string{
			"n1": waitsLine(0, onFutex, srunPipe), "n2": waitsLine(0, onFutex, openFIFO), "n3": waitsLine(0, onFutex)},
			"data-stall n2 WaitsOnInput", "wait on a file or a pipe", ""},
		{"n3's rank reads a FIFO on NFS while its peers wait in collectives", map[string]string{
			"n1": waitsLine(0, onFutex, srunPipe), "n2": waitsLine(0, onFutex), "n3": waitsLine(0, onFutex, readFIFO)},
			"data-stall n3 WaitsOnInput", "wait on a file or a pipe", ""},
		{"only srun's helper reads a pipe: no judgement", map[string]string{
			"n1": waitsLine(0, onFutex, srunPipe), "n2": waitsLine(0, onFutex), "n3": waitsLine(0, onFutex)},
			"unknown", "", ""},
		{"two hosts wait on their input: nobody stands out", map[string]string{
			"n1": waitsLine(0, onFutex, openFIFO), "n2": waitsLine(0, onFutex, readFIFO), "n3": waitsLine(0, onFutex)},
			"unknown", "", ""},
		{"every host frozen: the job was suspended, nobody stands out", map[string]string{
			"n1": waitsLine(4, frozenAll), "n2": waitsLine(4, frozenAll), "n3": waitsLine(4, frozenAll)},
			"unknown", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := judgeWaits(hosts, tc.waits, nil, false)
			got := d.Cause
			for _, c := range d.Culprits {
				got += " " + c.Host + " " + c.Reason
			}
			if got != tc.want {
				t.Fatalf("digest %q, want %q (hint %q)", got, tc.want, d.Hint)
			}
			if !strings.Contains(d.Hint, tc.hint) || tc.never != "" && strings.Contains(d.Hint, tc.never) {
				t.Errorf("hint %q: want %q in it, and not %q", d.Hint, tc.hint, tc.never)
			}
		})
	}
}

// judgeWaits is the digest of a job of hosts whose hosts' waits records
// are waits (host -> line), with lost hosts' watchers lost, of a job that
// ended when ended.
func judgeWaits(hosts []string, waits map[string]string, lost []string, ended bool, unreachable ...string) DigestEvent {
	in := DigestInput{Time: t0.Add(40 * time.Minute), Job: "7", Lost: lost, Ended: ended, Unreachable: unreachable,
		Layout: joblog.Layout{Nodes: hosts, Addrs: map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}},
		Addrs:  map[string]string{"10.0.0.1": "n1", "10.0.0.2": "n2", "10.0.0.3": "n3"}}
	for _, h := range hosts {
		if slices.Contains(lost, h) {
			continue // the new coordinator never heard from it
		}
		in.Hosts = append(in.Hosts, HostView{Host: h, State: StateHung,
			Latest: trace.Sample{V: 1, Time: in.Time, Host: h, Job: "7", Procs: 4, CPUUsec: 1}})
	}
	for _, h := range hosts {
		if line, ok := waits[h]; ok {
			m, _ := joblog.LineIn(trace.StreamWaits, line)
			in.Logs = append(in.Logs, LogEvidence{Time: in.Time, Reader: h, Stream: trace.StreamWaits, Line: line, Match: m})
		}
	}
	return Digest(in, testConfig())
}

// TestLostHostJudgement: a host whose watcher was lost (its node cut off
// entirely, management and data on one network) is named when a peer's
// data to it is being retransmitted, in a hang's digest and in that of the
// job Slurm ended (NODE_FAIL).
func TestLostHostJudgement(t *testing.T) {
	hosts := []string{"n1", "n2", "n3"}
	tests := []struct {
		name        string
		waits       map[string]string
		want        string
		hint, never string
		lost        []string
		unreachable []string
		ended       bool
	}{
		{name: "n3 cut off entirely: its watcher lost, n2's data to it retransmitted, n1 only waits", waits: map[string]string{
			"n1": waitsLine(0, onFutex), "n2": retransLine("10.0.0.3")}, lost: []string{"n3"},
			want: "network n3 Retransmitting", hint: "cut off from the network"},
		{name: "the same as the job ends (Slurm's NODE_FAIL)", waits: map[string]string{
			"n1": waitsLine(0, onFutex), "n2": retransLine("10.0.0.3")}, lost: []string{"n3"}, ended: true,
			want: "network n3 Retransmitting", hint: "cut off from the network"},
		{name: "n3's watcher lost, nobody's data to it retransmitted: its watcher died, the job runs", waits: map[string]string{
			"n1": waitsLine(0, onFutex), "n2": waitsLine(0, onFutex)}, lost: []string{"n3"},
			want: "unknown"},
		{name: "n3 cut off, nobody's data in flight to it, but its address answers no connection", waits: map[string]string{
			"n1": waitsLine(0, onFutex), "n2": waitsLine(0, onFutex)}, lost: []string{"n3"}, unreachable: []string{"n3"},
			want: "network n3 Unreachable", hint: "does not answer a connection"},
		{name: "the same with no waits at all, as the job ends", waits: map[string]string{}, lost: []string{"n3"},
			unreachable: []string{"n3"}, ended: true, want: "network n3 Unreachable", hint: "cut off from the network"},
		{name: "a job that ended: what its stopping processes wait on names nobody", waits: map[string]string{
			"n1": waitsLine(0, toN3Retrans), "n2": waitsLine(0, toN3Retrans)}, ended: true,
			want: "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := judgeWaits(hosts, tc.waits, tc.lost, tc.ended, tc.unreachable...)
			got := d.Cause
			for _, c := range d.Culprits {
				got += " " + c.Host + " " + c.Reason
			}
			if got != tc.want {
				t.Fatalf("digest %q, want %q (hint %q)", got, tc.want, d.Hint)
			}
			if !strings.Contains(d.Hint, tc.hint) || tc.never != "" && strings.Contains(d.Hint, tc.never) {
				t.Errorf("hint %q: want %q in it, and not %q", d.Hint, tc.hint, tc.never)
			}
		})
	}
}

// A rank stopped by SIGSTOP is not one that exited or crashed.
func TestStoppedRankHint(t *testing.T) {
	in := DigestInput{Time: t0, Job: "7"}
	for _, h := range []string{"n1", "n2", "n3"} {
		s := trace.Sample{V: 1, Time: t0, Host: h, Job: "7", Procs: 4}
		if h == "n2" {
			s.ProcsT = 1
		}
		in.Hosts = append(in.Hosts, HostView{Host: h, State: StateHung, Latest: s})
	}
	d := Digest(in, testConfig())
	if d.Cause != CauseRankFailed || len(d.Culprits) != 1 || d.Culprits[0].Reason != CulpritProcessesStopped {
		t.Fatalf("digest %s %+v, want rank-failed n2 ProcessesStopped", d.Cause, d.Culprits)
	}
	if strings.Contains(d.Hint, "exited or crashed") || !strings.Contains(d.Hint, "stopped") {
		t.Errorf("hint %q: a stopped rank is not an exited one", d.Hint)
	}
}
