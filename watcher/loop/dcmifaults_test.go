package loop

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dcmi/dcmifake"
	"github.com/vigil-hpc/vigil/watcher/coord"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/sample"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// dcmiSampler samples the NPUs of a sample.DCMI, as sample.Sampler does.
type dcmiSampler struct {
	d     *sample.DCMI
	reads []int // NPUs read per sample
}

func (s *dcmiSampler) Sample(now time.Time) trace.Sample {
	accel, _ := s.d.Sample()
	s.reads = append(s.reads, len(accel))
	return trace.Sample{V: trace.Version, Time: now, Host: "npu03", Job: "7", Procs: 8, Accel: accel}
}

// The DCMI source's error codes, /dev/kmsg unreadable: a new code raised in
// a major alarm on npu2 is a kernel log record of this node in the trace
// (--record), once while it persists, and a lone watcher's digest makes
// the node bad-device for it; a code in a minor alarm is recorded and
// names nobody; npu1's failing error-code reads are said once, and every
// NPU is still sampled.
func TestLoopRecordsDCMIFaultsAsDeviceRecords(t *testing.T) {
	node := dcmifake.Healthy(4)
	d, err := sample.NewDCMI(node, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, hook := test.NewNullLogger()
	logs := OpenJobLogs(context.Background(), nil, t.TempDir(), "npu03", "7", []string{"npu01", "npu03"}, log)
	defer logs.Close()
	logs.Device = d.DeviceFaults(log)
	hook.Reset()

	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start}
	var rec bytes.Buffer
	c := DefaultSettings().Hang
	c.Window, c.Period, c.Grace = 6*time.Second, time.Second, 0
	det := &scriptDetector{events: map[int][]hang.Event{4: {{Time: start.Add(3 * time.Second), Host: "npu03", Job: "7", Event: hang.EventHung, Reason: "FlatUsage"}}}}
	digests := &digestRecorder{}
	smp := &dcmiSampler{d: d}
	l := &Loop{Clock: clock, Period: time.Second, Sampler: smp, Detector: det, Record: trace.NewWriter(&rec),
		Logs: logs, Job: coord.NewLone(c), Digests: digests, Log: logrus.New()}
	for i := range 7 {
		switch i {
		case 1: // a minor alarm on npu0; npu1's error codes unreadable from now on
			node.NPUs[0].Codes, node.NPUs[0].Health = []uint32{0x80c98000}, dcmi.HealthMinor
			node.NPUs[1].Errs = map[string]error{"ErrorCodes": &dcmi.Error{Op: "dcmi_get_device_errorcode_v2", Code: dcmi.ErrTimeOut}}
		case 2: // npu2 fails
			node.NPUs[2].Codes, node.NPUs[2].Health = []uint32{0x80e18005}, dcmi.HealthMajor
		}
		if _, err := l.Step(context.Background(), start.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		clock.now = start.Add(time.Duration(i)*time.Second + 10*time.Millisecond)
	}

	r := trace.NewReader(&rec)
	var got []trace.Sample
	for {
		s, err := r.Next()
		if err != nil {
			break
		}
		if s.IsLog() && s.Log.Stream != trace.StreamEnd {
			got = append(got, s)
		}
	}
	want := []struct {
		line  string
		fault bool
	}{
		{"dcmi: npu0 (PCI:0000:c1:00.0) error code 0x80c98000, minor alarm", false},
		{"dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)", true},
	}
	if len(got) != len(want) {
		t.Fatalf("log records %+v, want the two codes once each", got)
	}
	for i, w := range want {
		m, ok := joblog.LineIn(got[i].Log.Stream, got[i].Log.Line)
		ev, _ := trace.ParseDeviceEvent(got[i].Log.Line)
		if got[i].Log.Stream != trace.StreamDevice || got[i].Host != "npu03" || ev.Text() != w.line ||
			!ok || m.Kind != joblog.KindNPUError || m.Fault != w.fault {
			t.Errorf("record %d = %+v %+v (%+v), want %q (fault %v), a device record of npu03", i, got[i], got[i].Log, m, w.line, w.fault)
		}
	}
	if len(digests.got) != 1 || digests.got[0].Cause != digest.CauseBadDevice || len(digests.got[0].Culprits) != 1 {
		t.Fatalf("digests = %+v, want one bad-device", digests.got)
	}
	cu := digests.got[0].Culprits[0]
	if cu.Host != "npu03" || cu.Reason != digest.DigestDeviceFault || !reflect.DeepEqual(cu.Evidence["error_codes"], []string{"0x80e18005"}) {
		t.Errorf("culprit %+v, want npu03 DeviceFault with error code 0x80e18005", cu)
	}
	var warned int
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "fault events") {
			warned++
			if err, _ := e.Data[logrus.ErrorKey].(error); err == nil || !strings.Contains(err.Error(), "device 1: error codes") {
				t.Errorf("warning %+v, want npu1 named", e.Data)
			}
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings of the failing reads, want 1", warned)
	}
	if !reflect.DeepEqual(smp.reads, []int{4, 4, 4, 4, 4, 4, 4}) {
		t.Errorf("NPUs sampled per period %v, want every NPU every period", smp.reads)
	}
}
