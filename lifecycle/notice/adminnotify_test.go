package notice

import (
	"fmt"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
)

func TestNoticeFor(t *testing.T) {
	for _, tc := range []struct {
		count, burst int
		want         noticeKind
	}{
		{1, 5, noticeNode},
		{5, 5, noticeNode},
		{6, 5, noticeSummary},
		{7, 5, noticeNone},
		{1000, 5, noticeNone},
		{1, 1, noticeNode},
		{2, 1, noticeSummary},
		{3, 1, noticeNone},
	} {
		t.Run(fmt.Sprintf("%d of burst %d", tc.count, tc.burst), func(t *testing.T) {
			if got := noticeFor(tc.count, tc.burst); got != tc.want {
				t.Errorf("noticeFor(%d, %d) = %v, want %v", tc.count, tc.burst, got, tc.want)
			}
		})
	}
}

func TestCheckFields(t *testing.T) {
	th := 600.0
	res := benchmarks.Result{Check: "gemm", Status: benchmarks.StatusFail, Reason: "GEMMBelowThreshold", Device: "gpu3",
		Message: "gpu3 412 TFLOPS < 600", Values: []benchmarks.Value{
			{Device: "gpu0", Name: "tflops", Value: 700, Unit: "TFLOPS", Threshold: &th, Op: ">=", Status: benchmarks.StatusPass},
			{Device: "gpu3", Name: "tflops", Value: 412, Unit: "TFLOPS", Threshold: &th, Op: ">=", Status: benchmarks.StatusFail},
		}}
	f := checkFields(res)
	if f["value"] != 412.0 || f["threshold"] != 600.0 || f["op"] != ">=" || f["device"] != "gpu3" || f["unit"] != "TFLOPS" {
		t.Errorf("checkFields = %v", f)
	}
}
