package sample

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dcmi/dcmifake"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

func openFaults(t *testing.T, node *dcmifake.Node, devices ...string) *DCMIFaults {
	t.Helper()
	s, err := NewDCMI(node, devices)
	if err != nil {
		t.Fatal(err)
	}
	return s.Faults()
}

// faultLines polls f and says each event in words (trace.DeviceEvent.Text).
func faultLines(t *testing.T, f *DCMIFaults) []string {
	t.Helper()
	evs, err := f.Poll()
	if err != nil {
		t.Fatalf("events %+v: %v", evs, err)
	}
	return texts(evs)
}

func texts(evs []trace.DeviceEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Text())
	}
	return out
}

func TestDCMIFaultsNewCodesAndECC(t *testing.T) {
	node := dcmifake.Healthy(4)
	node.NPUs[1].Codes = []uint32{0x80cb8009} // carried before the watcher started
	node.NPUs[3].HBMECC.DoubleBit = 1
	f := openFaults(t, node)
	if got := faultLines(t, f); len(got) != 0 {
		t.Fatalf("first read %q: it only takes note", got)
	}
	if f.Watched() != "0:codes,ecc 1:codes,ecc 2:codes,ecc 3:codes,ecc" {
		t.Errorf("watched %q", f.Watched())
	}

	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"a fault code on npu2, its ECC count up",
			func() {
				node.NPUs[2].Codes, node.NPUs[2].Health, node.NPUs[2].HBMECC.DoubleBit = []uint32{0x80e18005}, dcmi.HealthMajor, 2
			},
			[]string{"dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)",
				"dcmi: npu2 (PCI:0000:c3:00.0) uncorrectable ECC errors 2 (was 0)"}},
		{"persisting: nothing", func() {}, nil},
		{"a minor code on npu0, a second code on npu2 in a critical alarm",
			func() {
				node.NPUs[0].Codes, node.NPUs[0].Health = []uint32{0x80c98000}, dcmi.HealthMinor
				node.NPUs[2].Codes, node.NPUs[2].Health = []uint32{0x80e18005, 0x80e18402}, dcmi.HealthCritical
			},
			[]string{"dcmi: npu0 (PCI:0000:c1:00.0) error code 0x80c98000, minor alarm",
				"dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18402, critical alarm (fault)"}},
		{"cleared, an ECC count reset", func() {
			node.NPUs[2].Codes, node.NPUs[2].HBMECC.DoubleBit = nil, 0
		}, nil},
		{"back again: reported again", func() { node.NPUs[2].Codes = []uint32{0x80e18005} },
			[]string{"dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, critical alarm (fault)"}},
		{"a code listed twice counts once", func() { node.NPUs[1].Codes = []uint32{0x80cb8009, 0x80cb800a, 0x80cb800a} },
			[]string{"dcmi: npu1 (PCI:0000:c2:00.0) error code 0x80cb800a, OK"}},
	}
	for _, st := range steps {
		st.change()
		if got := faultLines(t, f); strings.Join(got, "\n") != strings.Join(st.want, "\n") {
			t.Errorf("%s: got\n%s\nwant\n%s", st.name, strings.Join(got, "\n"), strings.Join(st.want, "\n"))
		}
	}
	if node.Calls["Health"] != 5 {
		t.Errorf("%d health reads, want one per NPU with new codes (5)", node.Calls["Health"])
	}
}

// The events are what joblog reads: an error code raised in a major or
// critical alarm (or with the device gone) is a fault; one in a minor alarm,
// or whose alarm could not be read, is recorded and is no fault.
func TestDCMIFaultEventsMatch(t *testing.T) {
	ecc := trace.DeviceEvent{Source: trace.DeviceDCMI, Device: "2", PCI: "0000:c3:00.0", Kind: trace.DeviceECC, Count: 2}
	for _, tc := range []struct {
		ev    trace.DeviceEvent
		kind  joblog.Kind
		code  string
		fault bool
	}{
		{ErrorCodeEvent("2", "0000:c3:00.0", 0x80e18005, dcmi.HealthMajor, true), joblog.KindNPUError, "0x80e18005", true},
		{ErrorCodeEvent("2", "0000:c3:00.0", 0x80e18005, dcmi.HealthCritical, true), joblog.KindNPUError, "0x80e18005", true},
		{ErrorCodeEvent("2", "", 0x80e18005, dcmi.HealthAbsent, true), joblog.KindNPUError, "0x80e18005", true},
		{ErrorCodeEvent("2", "0000:c3:00.0", 0x80c98000, dcmi.HealthMinor, true), joblog.KindNPUError, "0x80c98000", false},
		{ErrorCodeEvent("2", "0000:c3:00.0", 0x80c98000, dcmi.HealthOK, true), joblog.KindNPUError, "0x80c98000", false},
		{ErrorCodeEvent("2", "0000:c3:00.0", 0x80e18005, 0, false), joblog.KindNPUError, "0x80e18005", false},
		{ecc, joblog.KindECC, "", true},
	} {
		rec := trace.DeviceRecord("n1", "7", time.Now(), tc.ev)
		m, ok := joblog.LineIn(rec.Log.Stream, rec.Log.Line)
		if !ok || m.Kind != tc.kind || m.Code != tc.code || m.Fault != tc.fault || m.Rank != -1 {
			t.Errorf("joblog.LineIn(device, %q) = %+v, %v; want %s %q fault %v", rec.Log.Line, m, ok, tc.kind, tc.code, tc.fault)
		}
	}
	if l := ErrorCodeEvent("2", "", 0x1, dcmi.HealthAbsent, true).Text(); l != "dcmi: npu2 (PCI:unknown) error code 0x00000001, device absent (fault)" {
		t.Errorf("text %q", l)
	}
}

// A failing read names the NPU and keeps what was known of it; the other
// NPUs' lines still come, and ECC that is not reported is not asked again.
func TestDCMIFaultsReadErrors(t *testing.T) {
	node := dcmifake.Healthy(3)
	node.NPUs[1].Codes = []uint32{0x80e18005}
	node.NPUs[1].Health = dcmi.HealthMajor
	node.NPUs[2].Errs = map[string]error{"ECC": &dcmi.Error{Op: "dcmi_get_device_ecc_info", Code: dcmi.ErrNotSupport}}
	f := openFaults(t, node, "1", "2")
	faultLines(t, f)
	if f.Watched() != "1:codes,ecc 2:codes" {
		t.Errorf("watched %q", f.Watched())
	}

	timeout := &dcmi.Error{Op: "dcmi_get_device_errorcode_v2", Code: dcmi.ErrTimeOut}
	node.NPUs[1].Errs = map[string]error{"ErrorCodes": timeout}
	node.NPUs[2].Codes, node.NPUs[2].Health = []uint32{0x80e01801}, dcmi.HealthCritical
	evs, err := f.Poll()
	lines := texts(evs)
	if !errors.Is(err, ErrDCMI) || !strings.Contains(err.Error(), "device 1: error codes: dcmi_get_device_errorcode_v2: DCMI_ERR_CODE_TIME_OUT") {
		t.Errorf("error %v, want npu1 named", err)
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "dcmi: npu2 ") {
		t.Errorf("lines %q, want npu2's", lines)
	}
	node.NPUs[1].Errs = nil // the same code still current: nothing new
	if got := faultLines(t, f); len(got) != 0 {
		t.Errorf("after the failure: %q", got)
	}
	if node.Calls["ECC"] != 3+1 { // npu1 each time, npu2 once
		t.Errorf("%d ECC reads", node.Calls["ECC"])
	}

	t.Run("health unreadable", func(t *testing.T) {
		node.NPUs[1].Codes = append(node.NPUs[1].Codes, 0x80e18402)
		node.NPUs[1].Errs = map[string]error{"Health": &dcmi.Error{Op: "dcmi_get_device_health", Code: dcmi.ErrInnerErr}}
		evs, err := f.Poll()
		lines := texts(evs)
		if !errors.Is(err, ErrDCMI) || len(lines) != 1 || lines[0] != "dcmi: npu1 (PCI:0000:c2:00.0) error code 0x80e18402, health unknown" {
			t.Errorf("lines %q, %v", lines, err)
		}
	})
	var none *DCMIFaults
	if l, err := none.Poll(); l != nil || err != nil {
		t.Errorf("nil faults: %+v, %v", l, err)
	}
}
