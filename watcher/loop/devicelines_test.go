package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/watcher/coord"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/sample"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// deviceEvents gives scripted events, one batch per call.
type deviceEvents struct {
	batches [][]trace.DeviceEvent
	err     error
	calls   int
}

func (d *deviceEvents) Poll() ([]trace.DeviceEvent, error) {
	d.calls++
	if len(d.batches) == 0 {
		return nil, d.err
	}
	b := d.batches[0]
	d.batches = d.batches[1:]
	return b, d.err
}

// nvmlWithEvents is a one-GPU node (PCI 0000:18:00) whose NVML event set
// delivers the events queued in *queue.
func nvmlWithEvents(t *testing.T, queue *[]nvml.EventData) (*sample.NVML, nvml.Device) {
	t.Helper()
	var busID [32]int8
	for i, c := range "00000000:18:00.0" {
		busID[i] = int8(c)
	}
	gpu := &mock.Device{
		GetPciInfoFunc:             func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{BusId: busID}, nvml.SUCCESS },
		GetSupportedEventTypesFunc: func() (uint64, nvml.Return) { return nvml.EventTypeXidCriticalError, nvml.SUCCESS }, // no ECC events
		RegisterEventsFunc:         func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS },
	}
	set := &mock.EventSet{
		WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
			if len(*queue) == 0 {
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			ev := (*queue)[0]
			*queue = (*queue)[1:]
			return ev, nvml.SUCCESS
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return gpu, nvml.SUCCESS },
		EventSetCreateFunc:         func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS },
	}
	n, err := sample.NewNVML(lib, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, gpu
}

// An XID event NVML reports, with /dev/kmsg unreadable, is a device
// record of this node in the trace (--record), and a lone watcher's digest
// reads it: a fault XID makes it bad-device; an application XID does not.
func TestLoopRecordsNVMLEventsAsDeviceRecords(t *testing.T) {
	var queue []nvml.EventData
	n, gpu := nvmlWithEvents(t, &queue)
	log, _ := test.NewNullLogger()
	logs := OpenJobLogs(context.Background(), nil, t.TempDir(), "gpu03", "7", []string{"gpu01", "gpu03"}, log)
	defer logs.Close()
	logs.Device = n.DeviceFaults(log)
	if logs.Device == nil {
		t.Fatal("no NVML events")
	}

	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: start}
	var rec bytes.Buffer
	c := DefaultSettings().Hang
	c.Window, c.Period, c.Grace = 6*time.Second, time.Second, 0
	det := &scriptDetector{events: map[int][]hang.Event{3: {{Time: start.Add(2 * time.Second), Host: "gpu03", Job: "7", Event: hang.EventHung, Reason: "FlatUsage"}}}}
	digests := &digestRecorder{}
	l := &Loop{Clock: clock, Period: time.Second, Sampler: &fakeSampler{}, Detector: det, Record: trace.NewWriter(&rec),
		Logs: logs, Job: coord.NewLone(c), Digests: digests, Log: logrus.New()}
	for i := range 6 {
		switch i {
		case 0:
			queue = append(queue, nvml.EventData{Device: gpu, EventType: nvml.EventTypeXidCriticalError, EventData: 13})
		case 1:
			queue = append(queue, nvml.EventData{Device: gpu, EventType: nvml.EventTypeXidCriticalError, EventData: 79})
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
		xid   int
		fault bool
	}{{13, false}, {79, true}}
	if len(got) != len(want) {
		t.Fatalf("log records %+v, want the two XIDs", got)
	}
	for i, w := range want {
		m, ok := joblog.LineIn(got[i].Log.Stream, got[i].Log.Line)
		ev, _ := trace.ParseDeviceEvent(got[i].Log.Line)
		if got[i].Log.Stream != trace.StreamDevice || got[i].Host != "gpu03" || !ok || m.Kind != joblog.KindXID || m.XID != w.xid || m.Fault != w.fault ||
			ev.PCI != "0000:18:00" || ev.Source != trace.DeviceNVML {
			t.Errorf("record %d = %+v %+v (%+v), want XID %d (fault %v) of gpu03's GPU at 0000:18:00", i, got[i], got[i].Log, m, w.xid, w.fault)
		}
	}
	if len(digests.got) != 1 || digests.got[0].Cause != digest.CauseBadDevice || len(digests.got[0].Culprits) != 1 || digests.got[0].Culprits[0].Host != "gpu03" {
		t.Fatalf("digests = %+v, want one bad-device naming gpu03", digests.got)
	}
	// The digest's evidence says the event in words, not as the record's JSON.
	if lines, _ := digests.got[0].Culprits[0].Evidence["lines"].([]string); len(lines) != 1 || lines[0] != "nvml: gpu0 (PCI:0000:18:00) Xid 79, GPU has fallen off the bus" {
		t.Errorf("evidence lines %q", lines)
	}
}

func kmsgRoot(t *testing.T) (root, kmsg string) {
	t.Helper()
	root = t.TempDir()
	kmsg = filepath.Join(root, "dev", "kmsg")
	if err := os.MkdirAll(filepath.Dir(kmsg), 0o755); err != nil {
		t.Fatal(err)
	}
	appendFile(t, kmsg, "")
	return root, kmsg
}

func xid(pci string, n string) string {
	return "NVRM: Xid (PCI:" + pci + "): " + n + ", pid=4242, name=python, GPU has fallen off the bus."
}

func nvmlXID(pci string, n int) trace.DeviceEvent {
	return trace.DeviceEvent{Source: trace.DeviceNVML, Device: "0", PCI: pci, Kind: trace.DeviceXID, XID: n, What: "GPU has fallen off the bus"}
}

// Where /dev/kmsg is readable too, an XID both sources report counts once:
// in the same poll or in consecutive ones, the first copy read kept.
func TestJobLogsPairsKernelAndNVMLXIDs(t *testing.T) {
	root, kmsg := kmsgRoot(t)
	log, _ := test.NewNullLogger()
	j := OpenJobLogs(context.Background(), nil, root, "n1", "7", nil, log)
	defer j.Close()
	dev := &deviceEvents{}
	j.Device = dev
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	// Each record as one line: the kernel's own, or "nvml PCI XID".
	lines := func(recs []trace.Sample) []string {
		var out []string
		for _, r := range recs {
			switch e, ok := trace.ParseDeviceEvent(r.Log.Line); {
			case r.Host != "n1":
				t.Errorf("record %+v %+v, want n1's", r, r.Log)
			case r.Log.Stream == trace.StreamDevice && ok:
				out = append(out, fmt.Sprintf("nvml %s %d %s", e.PCI, e.XID, e.Kind))
			default:
				out = append(out, r.Log.Line)
			}
		}
		return out
	}
	nv := func(pci string, n int) string { return fmt.Sprintf("nvml %s %d xid", pci, n) }
	ecc := trace.DeviceEvent{Source: trace.DeviceNVML, Device: "0", PCI: "0000:3b:00", Kind: trace.DeviceECC}
	for _, tc := range []struct {
		name   string
		kernel []string
		nvml   []trace.DeviceEvent
		want   []string
	}{
		{"same poll: the kernel's line", []string{xid("0000:3b:00", "79")}, []trace.DeviceEvent{nvmlXID("0000:3b:00", 79)}, []string{xid("0000:3b:00", "79")}},
		{"NVML first, the kernel's copy a poll later", nil, []trace.DeviceEvent{nvmlXID("0000:18:00", 79)}, []string{nv("0000:18:00", 79)}},
		{"... is dropped; another GPU's is not", []string{xid("0000:18:00", "79"), xid("0000:86:00", "79")}, nil, []string{xid("0000:86:00", "79")}},
		{"the function and the case do not matter", []string{xid("0000:AF:00.0", "48")}, []trace.DeviceEvent{nvmlXID("0000:af:00", 48)}, []string{xid("0000:AF:00.0", "48")}},
		{"repeated XIDs count each time, once", []string{xid("0000:3b:00", "13"), xid("0000:3b:00", "13")},
			[]trace.DeviceEvent{nvmlXID("0000:3b:00", 13), nvmlXID("0000:3b:00", 13), nvmlXID("0000:3b:00", 13)},
			[]string{xid("0000:3b:00", "13"), xid("0000:3b:00", "13"), nv("0000:3b:00", 13)}},
		{"nothing this poll", nil, nil, nil},
		{"two polls later: another event", []string{xid("0000:3b:00", "13")}, nil, []string{xid("0000:3b:00", "13")}},
		{"ECC events are never paired", nil, []trace.DeviceEvent{ecc}, []string{"nvml 0000:3b:00 0 ecc"}},
	} {
		for _, l := range tc.kernel {
			appendFile(t, kmsg, "3,1,100,-;"+l+"\n")
		}
		dev.batches = append(dev.batches, tc.nvml)
		now = now.Add(time.Minute)
		if got := lines(j.Poll(now)); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

// Without a readable kernel log every NVML event counts, and a failing
// event poll is said once and changes nothing else.
func TestJobLogsDeviceLinesAlone(t *testing.T) {
	log, hook := test.NewNullLogger()
	j := OpenJobLogs(context.Background(), nil, t.TempDir(), "n1", "7", nil, log)
	defer j.Close()
	hook.Reset()
	dev := &deviceEvents{batches: [][]trace.DeviceEvent{{nvmlXID("0000:3b:00", 79), nvmlXID("0000:3b:00", 79)}}, err: errors.New("nvml: events: wait: GPU is lost")}
	j.Device = dev
	if got := j.Poll(time.Now()); len(got) != 2 {
		t.Errorf("records %+v, want both events", got)
	}
	j.Poll(time.Now())
	if len(hook.AllEntries()) != 1 || !strings.Contains(hook.LastEntry().Message, "fault events") {
		t.Errorf("log %+v, want the failure said once", hook.AllEntries())
	}
	if dev.calls != 2 {
		t.Errorf("%d polls of the device, want 2", dev.calls)
	}
}
