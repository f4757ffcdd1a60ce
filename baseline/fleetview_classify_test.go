package baseline

import (
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
)

const (
	pass = benchmarks.StatusPass
	fail = benchmarks.StatusFail
)

// TestClassify: what became of a drain, from the runs after it.
func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		want  Outcome
		why   string
	}{
		{"nothing after", []step{{Run: "n1 t0"}}, Unresolved, "not re-tested yet"},
		{"repeat failure", []step{{Run: "n1 t0"}, {Run: "n1 t1", Retest: fail}}, Confirmed, "failed again (n1 t1)"},
		{"clean pass, no remedy", []step{{Run: "n1 t0"}, {Run: "n1 t1", Retest: pass}}, LikelyFalse,
			"passed its re-test (n1 t1) with no remedy in between"},
		{"runs that do not re-test are skipped", []step{{Run: "n1 t0"}, {Run: "n1 t1"}, {Run: "n1 t2"}, {Run: "n1 t3", Retest: pass}},
			LikelyFalse, "passed its re-test (n1 t3) with no remedy in between"},
		{"the first re-test decides", []step{{Run: "n1 t0"}, {Run: "n1 t1", Retest: pass}, {Run: "n1 t2", Retest: fail}},
			LikelyFalse, "passed its re-test (n1 t1) with no remedy in between"},
		{"remedy in the drain's run, then failure", []step{{Run: "n1 t0", Remedy: "reset"}, {Run: "n1 t1", Retest: fail}},
			Confirmed, "failed again (n1 t1) after reset"},
		{"remedy later, then failure", []step{{Run: "n1 t0"}, {Run: "n1 t1", Remedy: "reboot"}, {Run: "n1 t2", Retest: fail}},
			Confirmed, "failed again (n1 t2) after reboot"},
		{"remedy, then pass", []step{{Run: "n1 t0"}, {Run: "n1 t1", Remedy: "reboot"}, {Run: "n1 t2", Retest: pass}},
			Unresolved, "passed (n1 t2) after reboot: the remedy may have fixed it"},
		{"a run's remedy comes after its own re-test", []step{{Run: "n1 t0"}, {Run: "n1 t1", Retest: pass, Remedy: "reboot"}},
			LikelyFalse, "passed its re-test (n1 t1) with no remedy in between"},
		{"a run's failure before its remedy", []step{{Run: "n1 t0"}, {Run: "n1 t1", Retest: fail, Remedy: "reset"}},
			Confirmed, "failed again (n1 t1)"},
		{"remedy, no re-test", []step{{Run: "n1 t0", Remedy: "reset"}, {Run: "n1 t1"}}, Unresolved, "not re-tested since reset"},
		{"moved, then failure", []step{{Run: "n1 t0"}, {Run: "n2 t1", Moved: "moved from n1", Retest: fail}},
			Confirmed, "failed again (n2 t1) after moved from n1"},
		{"moved, then pass: a re-seat is a remedy", []step{{Run: "n1 t0"}, {Run: "n2 t1", Moved: "moved from n1", Retest: pass}},
			Unresolved, "passed (n2 t1) after moved from n1: the remedy may have fixed it"},
		{"the first remedy is named", []step{{Run: "n1 t0", Remedy: "reset"}, {Run: "n1 t1", Remedy: "reboot"}, {Run: "n1 t2", Retest: fail}},
			Confirmed, "failed again (n1 t2) after reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := classify(tt.steps)
			if got != tt.want || why != tt.why {
				t.Errorf("classify = %s (%s), want %s (%s)", got, why, tt.want, tt.why)
			}
		})
	}
}

// TestStatusOn: what one result says of one device.
func TestStatusOn(t *testing.T) {
	gpu := func(dev string, st benchmarks.Status) benchmarks.Value {
		return benchmarks.Value{Device: dev, Name: "tflops_bf16_8192", Value: 700, Status: st}
	}
	gemm := func(st benchmarks.Status, dev string, vs ...benchmarks.Value) benchmarks.Result {
		return benchmarks.Result{Check: "gemm", Status: st, Device: dev, Values: vs}
	}
	tests := []struct {
		name  string
		res   benchmarks.Result
		names []string
		want  benchmarks.Status
	}{
		{"its value passed", gemm(pass, "", gpu("gpu0", pass), gpu("gpu3", pass)), []string{"gpu3"}, pass},
		{"it failed", gemm(fail, "gpu3", gpu("gpu0", pass), gpu("gpu3", fail)), []string{"gpu3"}, fail},
		{"another failed, it passed", gemm(fail, "gpu0", gpu("gpu0", fail), gpu("gpu3", pass)), []string{"gpu3"}, pass},
		{"its second failed value", gemm(fail, "gpu0", gpu("gpu0", fail), gpu("gpu3", fail)), []string{"gpu3"}, fail},
		{"not among the job's devices", gemm(pass, "", gpu("gpu0", pass)), []string{"gpu3"}, ""},
		{"a pass naming no device covers all", benchmarks.Result{Check: "disk", Status: pass}, []string{"gpu3"}, pass},
		{"unknown says nothing", gemm(benchmarks.StatusUnknown, "gpu3"), []string{"gpu3"}, ""},
		{"the node: the result's own status", gemm(fail, "gpu0", gpu("gpu0", fail)), nil, fail},
		{"by PCI address", benchmarks.Result{Check: "gpu-count", Status: fail, Device: "0000:3b:00.0"}, []string{"gpu3", "0000:3b:00.0"}, fail},
		{"failed without a value of it", gemm(fail, "gpu3"), []string{"gpu3"}, fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statusOn(tt.res, tt.names); got != tt.want {
				t.Errorf("statusOn = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestLemonRule: which histories are lemons, and why.
func TestLemonRule(t *testing.T) {
	day := func(d int) time.Time { return fleetStart.Add(time.Duration(d) * 24 * time.Hour) }
	days := func(ds ...int) []time.Time {
		var out []time.Time
		for _, d := range ds {
			out = append(out, day(d))
		}
		return out
	}
	tests := []struct {
		name string
		rule LemonRule
		h    History
		want string
	}{
		{"one node, one episode", DefaultLemonRule, History{FailedOn: []string{"n1"}, Episodes: days(0)}, ""},
		{"two nodes", DefaultLemonRule, History{FailedOn: []string{"n1", "n7"}, Episodes: days(0, 40)}, "failed in 2 nodes (n1, n7)"},
		{"three episodes within 30 days", DefaultLemonRule, History{FailedOn: []string{"n1"}, Episodes: days(0, 20, 45, 60, 70)},
			"3 failure episodes within 30d from 2026-12-16 00:00:00"},
		{"three episodes, but spread", DefaultLemonRule, History{FailedOn: []string{"n1"}, Episodes: days(0, 20, 31, 52)}, ""},
		{"exactly the window", DefaultLemonRule, History{FailedOn: []string{"n1"}, Episodes: days(0, 10, 30)},
			"3 failure episodes within 30d from 2026-11-01 00:00:00"},
		{"nodes rule off", LemonRule{Episodes: 3, Window: 30 * 24 * time.Hour}, History{FailedOn: []string{"n1", "n2"}, Episodes: days(0, 1)}, ""},
		{"any time", LemonRule{Episodes: 2}, History{FailedOn: []string{"n1"}, Episodes: days(0, 300)}, "2 failure episodes"},
		{"all off", LemonRule{}, History{FailedOn: []string{"n1", "n2", "n3"}, Episodes: days(0, 1, 2)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.Judge(&tt.h); got != tt.want {
				t.Errorf("Judge = %q, want %q", got, tt.want)
			}
		})
	}
	if s := DefaultLemonRule.String(); s != "failed in >= 2 nodes, or >= 3 failure episodes within 30d" {
		t.Errorf("String = %q", s)
	}
}
