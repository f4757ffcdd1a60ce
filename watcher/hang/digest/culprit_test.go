package digest

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

func TestCulprits(t *testing.T) {
	s := func(procs, procsD int, util float64, age time.Duration) trace.Sample {
		x := trace.Sample{Time: t0.Add(-age), Procs: procs, ProcsD: procsD}
		if util >= 0 {
			x.Accel = []trace.Accel{{ID: "0", Util: util}, {ID: "1", Util: util}}
		}
		return x
	}
	stopped := func(x trace.Sample, n int) trace.Sample { x.ProcsT = n; return x }
	tests := []struct {
		name   string
		latest map[string]trace.Sample
		want   string
	}{
		{"single host", map[string]trace.Sample{"a": s(0, 0, 0, 0)}, "[]"},
		{"processes gone", map[string]trace.Sample{"a": s(12, 0, 100, 0), "b": s(0, 0, 0, 0), "c": s(12, 0, 100, 0)}, "[b:ProcessesGone]"},
		{"all gone: nothing stands out", map[string]trace.Sample{"a": s(0, 0, 0, 0), "b": s(0, 0, 0, 0)}, "[]"},
		{"fewer processes", map[string]trace.Sample{"a": s(12, 0, 100, 0), "b": s(3, 0, 100, 0), "c": s(13, 0, 100, 0)}, "[b:FewerProcesses]"},
		{"rank stopped (SIGSTOP, a debugger)", map[string]trace.Sample{"a": s(12, 0, 100, 0), "b": stopped(s(12, 0, 0, 0), 10), "c": s(12, 0, 97, 0)}, "[b:ProcessesStopped]"},
		{"one stopped rank of several (torchrun's workers)", map[string]trace.Sample{"a": s(3, 0, 100, 0), "b": stopped(s(3, 0, 100, 0), 1), "c": s(3, 0, 97, 0)}, "[b:ProcessesStopped]"},
		{"every host stopped (the job suspended)", map[string]trace.Sample{"a": stopped(s(12, 0, 0, 0), 12), "b": stopped(s(12, 0, 0, 0), 12), "c": stopped(s(12, 0, 0, 0), 12)}, "[]"},
		{"a peer has a stopped process too", map[string]trace.Sample{"a": stopped(s(12, 0, 100, 0), 1), "b": stopped(s(12, 0, 100, 0), 12), "c": s(12, 0, 100, 0)}, "[]"},
		{"gone before stopped", map[string]trace.Sample{"a": s(12, 0, 100, 0), "b": s(0, 0, 0, 0), "c": stopped(s(12, 0, 0, 0), 12), "d": s(12, 0, 100, 0), "e": s(12, 0, 100, 0)},
			"[b:ProcessesGone c:ProcessesStopped]"},
		{"idle while peers spin", map[string]trace.Sample{"a": s(12, 0, 100, 0), "b": s(12, 0, 2, 0), "c": s(12, 0, 97, 0), "d": s(12, 0, 100, 0)}, "[b:IdleWhilePeersBusy]"},
		{"half idle: nothing stands out", map[string]trace.Sample{"a": s(12, 0, 100, 0), "b": s(12, 0, 0, 0)}, "[]"},
		{"processes in D", map[string]trace.Sample{"a": s(12, 0, 0, 0), "b": s(12, 0, 0, 0), "c": s(12, 3, 0, 0)}, "[c:ProcessesInD]"},
		{"stale samples", map[string]trace.Sample{"a": s(12, 0, 100, 0), "b": s(12, 0, 100, 5*time.Minute), "c": s(12, 0, 100, 30*time.Second)}, "[b:StaleSamples]"},
		{"no accelerators, no outlier", map[string]trace.Sample{"a": s(4, 0, -1, 0), "b": s(4, 0, -1, 0), "c": s(4, 0, -1, 0)}, "[]"},
		{"two rules, two hosts", map[string]trace.Sample{"a": s(12, 0, 100, 0), "b": s(0, 0, 0, 0), "c": s(12, 0, 0, 0), "d": s(12, 0, 100, 0), "e": s(12, 0, 100, 0)},
			"[b:ProcessesGone c:IdleWhilePeersBusy]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range Culprits(tc.latest, testConfig()) {
				got = append(got, c.Host+":"+c.Reason)
				if c.Message == "" {
					t.Errorf("%s: no message", c.Host)
				}
			}
			if g := fmt.Sprint(got); g != tc.want {
				t.Fatalf("got %s, want %s", g, tc.want)
			}
		})
	}
}
