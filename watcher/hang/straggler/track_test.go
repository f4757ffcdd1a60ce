package straggler

import (
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// TestTrackKeepsTheWindow: a host's Track gives the load of its readings
// and progress lines of the last window only: older readings leave it,
// readings without devices or marked "accel" do not count, stopped
// processes are counted, and the pace of its ranks is read from its lines.
func TestTrackKeepsTheWindow(t *testing.T) {
	c := testConfig() // 10-minute window, 1-minute period
	var tr Track
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	for m := 0; m <= 20; m++ {
		s := trace.Sample{V: 1, Time: at(m), Host: "a", Job: "9", Procs: 4,
			Accel: []trace.Accel{{ID: "0", Util: 40}, {ID: "1", Util: 60}}}
		switch {
		case m == 15:
			s.Missing = []string{"accel"}
		case m == 16:
			s.Accel = nil
		case m >= 18:
			s.ProcsT = 1
		}
		tr.ObserveReading(s, c.Window)
		tr.ObserveProgress(at(m), joblog.Match{Kind: joblog.KindProgress, Rank: 0, Epoch: 1, Step: int64(10 * m)}, c.Window)
	}
	l := tr.Load("a", at(20), c.Window)
	// Minutes 10 to 20 are in the window; 15 and 16 read no devices.
	if l.Host != "a" || l.Samples != 9 || l.Util != 50 || l.Epoch != -1 || l.Step != -1 {
		t.Errorf("load %+v: want host a, 9 samples at 50%%, progress left unknown", l)
	}
	if l.HeldSamples != 11 || l.Stopped != 3 || !l.HeldSince.Equal(at(18)) {
		t.Errorf("held: %d readings, %d stopped since %v; want 11, 3 since %v", l.HeldSamples, l.Stopped, l.HeldSince, at(18))
	}
	if l.Steps == nil || l.Steps.rank != 0 || l.Steps.perStep != 6 {
		t.Errorf("steps %+v: want rank 0 at 6 s per step", l.Steps)
	}
	if l := new(Track).Load("b", at(20), c.Window); l.Samples != 0 || l.HeldSamples != 0 || l.Steps != nil {
		t.Errorf("an empty track's load %+v", l)
	}
}
