package sample

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dcmi"
	"github.com/vigil-hpc/vigil/cgo/dcmi/dcmifake"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

func TestDCMI(t *testing.T) {
	node := dcmifake.Healthy(4)
	for i, p := range node.NPUs {
		p.Util = uint32(90 + i)
		p.HBM.UsedMiB = uint64(40000 + i)
		p.PowerW = 300.5
	}
	node.NPUs[2].Errs = map[string]error{"PowerW": &dcmi.Error{Op: "dcmi_get_device_power_info", Code: dcmi.ErrNotSupport}}

	s, err := NewDCMI(node, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Accel{
		{ID: "0", Util: 90, MemUsedMiB: 40000, PowerW: 300.5},
		{ID: "1", Util: 91, MemUsedMiB: 40001, PowerW: 300.5},
		{ID: "2", Util: 92, MemUsedMiB: 40002, PowerW: 0},
		{ID: "3", Util: 93, MemUsedMiB: 40003, PowerW: 300.5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sample = %+v, want %+v", got, want)
	}

	// The job's devices only; a failing device is left out and named.
	node.NPUs[3].Errs = map[string]error{"HBM": &dcmi.Error{Op: "dcmi_get_device_hbm_info", Code: dcmi.ErrTimeOut}}
	s, err = NewDCMI(node, []string{"1", "3"})
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.Sample()
	if !errors.Is(err, ErrDCMI) || !strings.Contains(err.Error(), "device 3: HBM: dcmi_get_device_hbm_info: DCMI_ERR_CODE_TIME_OUT") {
		t.Errorf("err = %v", err)
	}
	if len(got) != 1 || got[0].ID != "1" {
		t.Errorf("partial sample %+v", got)
	}
	var _ Accelerators = s
}

func TestNewDCMIErrors(t *testing.T) {
	node := dcmifake.Healthy(2)
	if _, err := NewDCMI(node, []string{"5"}); !errors.Is(err, ErrDCMI) || !strings.Contains(err.Error(), "device 5: DCMI lists 2 NPUs") {
		t.Errorf("missing device: %v", err)
	}
	if _, err := NewDCMI(node, []string{"npu0"}); !errors.Is(err, ErrDCMI) {
		t.Errorf("bad id: %v", err)
	}
	node = dcmifake.Healthy(2)
	node.InitErr = &dcmi.Error{Op: "dcmi_init", Code: dcmi.ErrInnerErr}
	if _, err := NewDCMI(node, nil); !errors.Is(err, ErrDCMI) || !strings.Contains(err.Error(), "DCMI_ERR_CODE_INNER_ERR") {
		t.Errorf("init: %v", err)
	}
}

func TestAscendDevices(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"ASCEND_VISIBLE_DEVICES": "4,5"}, "4 5"},
		{map[string]string{"ASCEND_RT_VISIBLE_DEVICES": " 0, 1 ", "ASCEND_VISIBLE_DEVICES": "4,5"}, "0 1"},
	} {
		got := ascendDevices(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if strings.Join(got, " ") != tc.want {
			t.Errorf("ascendDevices(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
