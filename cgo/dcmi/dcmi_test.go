package dcmi

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

func TestOpenMissingNamesCandidates(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dl.Options{Names: []string{"libdcmi.so.vigil-absent"}, Dirs: []string{dir}})
	if !errors.Is(err, dl.ErrNotFound) {
		t.Fatalf("err = %v, want dl.ErrNotFound", err)
	}
	for _, want := range []string{"libdcmi.so.vigil-absent not found", "searched:", dir, "/usr/local/dcmi"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestOpenWrongLibrary(t *testing.T) {
	// libc opens fine but has none of DCMI's symbols: an error, not a crash.
	_, err := Open(dl.Options{Names: []string{"libc.so.6"}})
	if !errors.Is(err, dl.ErrSymbol) {
		t.Fatalf("err = %v, want dl.ErrSymbol", err)
	}
	if !strings.Contains(err.Error(), "dcmi_init") {
		t.Errorf("error %q does not name dcmi_init", err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name        string
		code        Code
		want        string
		unsupported bool
		noDevice    bool
	}{
		{"not support", -8255, "dcmi_get_device_health: DCMI_ERR_CODE_NOT_SUPPORT (-8255)", true, false},
		{"container", -8013, "dcmi_get_device_health: DCMI_ERR_CODE_NOT_SUPPORT_IN_CONTAINER (-8013)", true, false},
		{"no device", -8008, "dcmi_get_device_health: DCMI_ERR_CODE_DEVICE_NOT_EXIST (-8008)", false, true},
		{"timeout", -8006, "dcmi_get_device_health: DCMI_ERR_CODE_TIME_OUT (-8006)", false, false},
		{"unknown code", -1, "dcmi_get_device_health: dcmi error -1 (-1)", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check("dcmi_get_device_health", int(tt.code))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if errors.Is(err, ErrNotSupported) != tt.unsupported {
				t.Errorf("Is(ErrNotSupported) = %v", !tt.unsupported)
			}
			if errors.Is(err, ErrNoDevice) != tt.noDevice {
				t.Errorf("Is(ErrNoDevice) = %v", !tt.noDevice)
			}
			var de *Error
			if !errors.As(err, &de) || de.Code != tt.code {
				t.Errorf("errors.As = %+v", de)
			}
		})
	}
	if check("x", int(OK)) != nil {
		t.Error("DCMI_OK is an error")
	}
}

func TestNames(t *testing.T) {
	if HealthName(HealthCritical) != "critical alarm" || HealthName(HealthAbsent) != "device absent" || HealthName(7) != "health 7" {
		t.Error("HealthName")
	}
	if NetUnreachable.String() != "unreachable" || NetHealth(42).String() != "network health 42" {
		t.Error("NetHealth.String")
	}
	if (ChipInfo{Type: "Ascend", Name: "910B3"}).Model() != "Ascend910B3" {
		t.Error("Model")
	}
}

func TestStubLibrary(t *testing.T) {
	dir := dltest.Build(t, filepath.Join("testdata", "stubdcmi.c"), "libdcmi.so")
	so := filepath.Join(dir, "libdcmi.so")
	l, err := Open(dl.Options{Names: []string{"libdcmi.so"}, Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Path() != so {
		t.Errorf("Path = %q, want %q", l.Path(), so)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	devs, err := l.Devices()
	if err != nil {
		t.Fatal(err)
	}
	want := []Device{{Card: 3, Chip: 0, Logic: 0, PCI: "0000:c1:00.0"}, {Card: 5, Chip: 0, Logic: 1, PCI: "0000:01:00.0"}}
	if !reflect.DeepEqual(devs, want) {
		t.Fatalf("Devices = %+v, want %+v", devs, want)
	}
	bad := devs[1]
	if ci, err := l.ChipInfo(bad); err != nil || ci != (ChipInfo{Type: "Ascend", Name: "910B3", Version: "V1", AICores: 20}) {
		t.Errorf("ChipInfo = %+v, %v", ci, err)
	}
	if e, err := l.ELabel(bad); err != nil || e != (ELabel{Product: "Atlas 800T A2", Model: "IT21PMNB", Manufacturer: "Huawei",
		Date: "2024/03/11", Serial: "102385467XYZ"}) {
		t.Errorf("ELabel = %+v, %v", e, err)
	}
	if h, err := l.Health(bad); err != nil || h != HealthMajor {
		t.Errorf("Health = %d, %v", h, err)
	}
	if codes, err := l.ErrorCodes(bad); err != nil || !reflect.DeepEqual(codes, []uint32{0x80E01801, 0x80CB8009}) {
		t.Errorf("ErrorCodes = %x, %v", codes, err)
	}
	if codes, err := l.ErrorCodes(devs[0]); err != nil || len(codes) != 0 {
		t.Errorf("ErrorCodes(healthy) = %x, %v", codes, err)
	}
	if e, err := l.ECC(bad, MemoryHBM); err != nil || e != (ECCInfo{Enabled: true, DoubleBit: 3, TotalDoubleBit: 4, DoubleBitIsolatedPages: 2}) {
		t.Errorf("ECC = %+v, %v", e, err)
	}
	if _, err := l.ECC(bad, MemoryDDR); !errors.Is(err, ErrNotSupported) {
		t.Errorf("ECC(DDR) err = %v, want ErrNotSupported", err)
	}
	if u, err := l.Utilization(bad, UtilAICore); err != nil || u != 87 {
		t.Errorf("Utilization = %d, %v", u, err)
	}
	if p, err := l.PowerW(bad); err != nil || p != 312.5 {
		t.Errorf("PowerW = %v, %v", p, err)
	}
	if h, err := l.HBM(bad); err != nil || h != (HBMInfo{TotalMiB: 65536, UsedMiB: 3379, FreqMHz: 1600, TempC: 40, BandwidthUtil: 5}) {
		t.Errorf("HBM = %+v, %v", h, err)
	}
	if ps, err := l.Processes(bad); err != nil || !reflect.DeepEqual(ps, []Process{{PID: 4242, MemBytes: 1 << 30}}) {
		t.Errorf("Processes = %+v, %v", ps, err)
	}
	// The stub lacks dcmi_get_device_network_health: an error naming it.
	_, err = l.NetworkHealth(bad)
	if !errors.Is(err, dl.ErrSymbol) || !strings.Contains(err.Error(), "dcmi_get_device_network_health") {
		t.Errorf("NetworkHealth err = %v, want a missing-symbol error", err)
	}
}
