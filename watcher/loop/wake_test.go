package loop

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/watcher/coord"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// runToXID runs a lone watcher at the shipped defaults (period 30 s) on a
// one-GPU node whose job stops writing at minute 20, with NVML reporting
// XID code on the GPU at 20m47s (between two samples), and returns the
// digests and when the event was reported.
func runToXID(t *testing.T, code int) (*digestRecorder, time.Time, *fakeClock) {
	t.Helper()
	var queue []nvml.EventData
	n, gpu := nvmlWithEvents(t, &queue)
	log, _ := test.NewNullLogger()
	logs := OpenJobLogs(context.Background(), nil, t.TempDir(), "n1", "7", []string{"n1"}, log)
	defer logs.Close()
	dev := n.DeviceFaults(log)
	if dev == nil {
		t.Fatal("no NVML events")
	}
	watch := &DeviceWatch{Device: dev}
	logs.Device = watch

	c := DefaultSettings().Hang
	if c.Period != 30*time.Second || c.ConfirmPeriods != 3 {
		t.Fatalf("shipped period %v, confirm_periods %d: the test assumes 30 s and 3", c.Period, c.ConfirmPeriods)
	}
	event := t0.Add(20*time.Minute + 47*time.Second)
	stop := event.Add(10 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &fakeClock{now: t0}
	queued := false
	clock.onWait = func() {
		if !queued && !clock.now.Before(event) {
			queued = true
			queue = append(queue, nvml.EventData{Device: gpu, EventType: nvml.EventTypeXidCriticalError, EventData: uint64(code)})
		}
		if clock.now.After(stop) {
			cancel()
		}
	}
	digests := &digestRecorder{}
	l := &Loop{Clock: clock, Period: c.Period, Sampler: &fakeSampler{write: func(t time.Time) bool { return t.Before(t0.Add(20 * time.Minute)) }},
		Detector: hang.New(c), Logs: logs, Early: watch, Job: coord.NewLone(c), Digests: digests, Log: log}
	if err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return digests, event, clock
}

// TestEarlyWakeUnhealableXID: an XID 79 that NVML reports between two
// samples gives the digest, detected by evidence that cannot heal, within
// 30 s of the event at the shipped defaults: the loop reads the device's
// events every EarlyCheck and samples at once.
func TestEarlyWakeUnhealableXID(t *testing.T) {
	digests, event, clock := runToXID(t, 79)
	if len(digests.got) == 0 {
		t.Fatal("no digest")
	}
	d := digests.got[0]
	if d.Detection == nil || d.Detection.By != digest.DetectedEvidence || !d.Detection.Unhealable {
		t.Fatalf("detection %+v, want evidence that cannot heal", d.Detection)
	}
	if after := d.Time.Sub(event); after < 0 || after > 30*time.Second {
		t.Errorf("digest at %v, %v after the XID; want within 30 s", d.Time, after)
	} else if after > EarlyCheck+time.Second {
		t.Errorf("digest %v after the XID; want within one early check (%v)", after, EarlyCheck)
	}
	if d.Cause != digest.CauseBadDevice || len(d.Culprits) != 1 || d.Culprits[0].Host != "n1" {
		t.Errorf("digest %s %+v, want bad-device on n1", d.Cause, d.Culprits)
	}
	// The grid is kept: the waits after the early sample end on the
	// period's grid again.
	grid := 0
	at := t0
	for _, w := range clock.waits {
		at = at.Add(w)
		if at.Sub(t0)%(30*time.Second) == 0 {
			grid++
		}
	}
	if grid < 50 {
		t.Errorf("%d waits ended on the 30 s grid, want the samples on it", grid)
	}
}

// TestEarlyWakeHealableXID: an XID 13 (restart the application) wakes
// nothing and gives no digest at once: the job waits for the evidence
// rule's confirmation or the window.
func TestEarlyWakeHealableXID(t *testing.T) {
	digests, event, _ := runToXID(t, 13)
	for _, d := range digests.got {
		if d.Detection != nil && d.Detection.Unhealable || d.Time.Sub(event) < 3*30*time.Second {
			t.Errorf("digest at %v (%+v), %v after the XID 13: want none before a confirmation", d.Time, d.Detection, d.Time.Sub(event))
		}
	}
}
