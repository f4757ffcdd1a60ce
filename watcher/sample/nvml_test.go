package sample

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

type fakeGPU struct {
	util       uint32
	usedBytes  uint64
	powerMW    uint32
	powerRet   nvml.Return
	utilRet    nvml.Return
	smMHz      uint32 // 0: ERROR_NOT_SUPPORTED
	smMaxMHz   uint32 // 0: ERROR_NOT_SUPPORTED
	reasons    uint64
	reasonsRet nvml.Return
	maxReads   int // GetMaxClockInfo calls
}

func fakeNVML(gpus map[string]*fakeGPU, order []string) (*mock.Interface, *int) {
	shutdowns := 0
	dev := func(g *fakeGPU) nvml.Device {
		return &mock.Device{
			GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
				return nvml.Utilization{Gpu: g.util, Memory: 3}, g.utilRet
			},
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
				return nvml.Memory{Total: 80 << 30, Used: g.usedBytes}, nvml.SUCCESS
			},
			GetPowerUsageFunc: func() (uint32, nvml.Return) { return g.powerMW, g.powerRet },
			GetClockInfoFunc: func(c nvml.ClockType) (uint32, nvml.Return) {
				if c != nvml.CLOCK_SM || g.smMHz == 0 {
					return 0, nvml.ERROR_NOT_SUPPORTED
				}
				return g.smMHz, nvml.SUCCESS
			},
			GetMaxClockInfoFunc: func(c nvml.ClockType) (uint32, nvml.Return) {
				g.maxReads++
				if c != nvml.CLOCK_SM || g.smMaxMHz == 0 {
					return 0, nvml.ERROR_NOT_SUPPORTED
				}
				return g.smMaxMHz, nvml.SUCCESS
			},
			GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) { return g.reasons, g.reasonsRet },
		}
	}
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { shutdowns++; return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(order), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(order) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return dev(gpus[order[i]]), nvml.SUCCESS
		},
		DeviceGetHandleByUUIDFunc: func(u string) (nvml.Device, nvml.Return) {
			if g, ok := gpus[u]; ok {
				return dev(g), nvml.SUCCESS
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
		ErrorStringFunc: func(r nvml.Return) string {
			return map[nvml.Return]string{nvml.ERROR_GPU_IS_LOST: "GPU is lost", nvml.ERROR_NOT_FOUND: "Not Found"}[r]
		},
	}
	return lib, &shutdowns
}

func TestNVML(t *testing.T) {
	gpus := map[string]*fakeGPU{
		"GPU-aaaa": {util: 100, usedBytes: 70312 << 20, powerMW: 612500},
		"GPU-bbbb": {util: 0, usedBytes: 1 << 20, powerRet: nvml.ERROR_NOT_SUPPORTED, reasonsRet: nvml.ERROR_NOT_SUPPORTED},
	}
	order := []string{"GPU-aaaa", "GPU-bbbb"}
	t.Run("all devices", func(t *testing.T) {
		lib, shutdowns := fakeNVML(gpus, order)
		n, err := NewNVML(lib, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := n.Sample()
		want := []trace.Accel{{ID: "0", Util: 100, MemUsedMiB: 70312, PowerW: 612.5}, {ID: "1", Util: 0, MemUsedMiB: 1, PowerW: 0}}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v, %v", got, err)
		}
		if err := n.Close(); err != nil || *shutdowns != 1 {
			t.Fatalf("close: %v, %d shutdowns", err, *shutdowns)
		}
	})
	t.Run("by UUID and index", func(t *testing.T) {
		lib, _ := fakeNVML(gpus, order)
		n, err := NewNVML(lib, []string{"GPU-bbbb", "0"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := n.Sample()
		if err != nil || len(got) != 2 || got[0].ID != "GPU-bbbb" || got[1].ID != "0" || got[1].Util != 100 {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("unknown device", func(t *testing.T) {
		lib, shutdowns := fakeNVML(gpus, order)
		_, err := NewNVML(lib, []string{"GPU-cccc"})
		if !errors.Is(err, ErrNVML) || !strings.Contains(err.Error(), "GPU-cccc: Not Found") || *shutdowns != 1 {
			t.Fatalf("got %v, %d shutdowns", err, *shutdowns)
		}
		if _, err := NewNVML(lib, []string{"gpu0"}); !errors.Is(err, ErrNVML) {
			t.Fatalf("bad id: %v", err)
		}
	})
	t.Run("a lost GPU", func(t *testing.T) {
		lost := map[string]*fakeGPU{"GPU-aaaa": gpus["GPU-aaaa"], "GPU-bbbb": {utilRet: nvml.ERROR_GPU_IS_LOST}}
		lib, _ := fakeNVML(lost, order)
		n, err := NewNVML(lib, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := n.Sample()
		if !errors.Is(err, ErrNVML) || !strings.Contains(err.Error(), "device 1: utilization: GPU is lost") || len(got) != 1 || got[0].ID != "0" {
			t.Fatalf("got %+v, %v", got, err)
		}
		// Through the Sampler: readings kept, "accel" missing.
		s := Sampler{Root: "testdata", PIDs: pids(), Accel: n}
		smp := s.Sample(now)
		if len(smp.Accel) != 1 || !smp.HasMissing("accel") {
			t.Fatalf("sample %+v", smp)
		}
	})
	t.Run("clocks and clock event reasons", func(t *testing.T) {
		slow := map[string]*fakeGPU{
			"GPU-aaaa": {util: 100, usedBytes: 1 << 20, powerMW: 300000, smMHz: 1110, smMaxMHz: 1980,
				reasons: nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown},
			// Clocks unsupported, reasons failing: absent, no error.
			"GPU-bbbb": {util: 100, usedBytes: 1 << 20, powerMW: 650000, reasonsRet: nvml.ERROR_UNKNOWN},
		}
		lib, _ := fakeNVML(slow, order)
		n, err := NewNVML(lib, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []trace.Accel{
			{ID: "0", Util: 100, MemUsedMiB: 1, PowerW: 300, SMClockMHz: 1110, SMClockMaxMHz: 1980, Throttle: trace.ThrottleSwPowerCap | trace.ThrottleHwPowerBrakeSlowdown},
			{ID: "1", Util: 100, MemUsedMiB: 1, PowerW: 650}}
		for i := 0; i < 3; i++ {
			got, err := n.Sample()
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("sample %d: got %+v, %v", i+1, got, err)
			}
		}
		// The maximum is read once where known, retried where not.
		if a, b := slow["GPU-aaaa"].maxReads, slow["GPU-bbbb"].maxReads; a != 1 || b != 3 {
			t.Fatalf("max clock read %d and %d times", a, b)
		}
	})
	t.Run("a library without the clock event reasons call", func(t *testing.T) {
		for _, tc := range []struct {
			has  bool
			want uint64
		}{{true, nvml.ClocksEventReasonSwThermalSlowdown}, {false, 0}} {
			lib, _ := fakeNVML(map[string]*fakeGPU{"GPU-aaaa": {util: 100, reasons: nvml.ClocksEventReasonSwThermalSlowdown}}, []string{"GPU-aaaa"})
			lib.ExtensionsFunc = func() nvml.ExtendedInterface {
				return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
					if tc.has && s == "nvmlDeviceGetCurrentClocksEventReasons" {
						return nil
					}
					return errors.New("undefined symbol " + s)
				}}
			}
			n, err := NewNVML(lib, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.has {
				// Calling it would crash on a real library: it must not be called.
				n.devices[0].(*mock.Device).GetCurrentClocksEventReasonsFunc = nil
			}
			got, err := n.Sample()
			if err != nil || len(got) != 1 || got[0].Throttle != tc.want {
				t.Fatalf("symbol present %v: got %+v, %v; want throttle %d", tc.has, got, err, tc.want)
			}
		}
	})
	t.Run("no driver", func(t *testing.T) {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
		if _, err := NewNVML(lib, nil); !errors.Is(err, ErrNVML) || !strings.Contains(err.Error(), "init") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestThrottleBitsAreNVMLs: the trace's Throttle bits are nvml.h's clock
// event reasons, so the NVML source writes the bitmask as it reads it.
func TestThrottleBitsAreNVMLs(t *testing.T) {
	for _, b := range []struct {
		trace uint64
		nvml  uint64
	}{
		{trace.ThrottleGpuIdle, nvml.ClocksEventReasonGpuIdle},
		{trace.ThrottleApplicationsClocksSetting, nvml.ClocksEventReasonApplicationsClocksSetting},
		{trace.ThrottleSwPowerCap, nvml.ClocksEventReasonSwPowerCap},
		{trace.ThrottleHwSlowdown, nvml.ClocksThrottleReasonHwSlowdown},
		{trace.ThrottleSyncBoost, nvml.ClocksEventReasonSyncBoost},
		{trace.ThrottleSwThermalSlowdown, nvml.ClocksEventReasonSwThermalSlowdown},
		{trace.ThrottleHwThermalSlowdown, nvml.ClocksThrottleReasonHwThermalSlowdown},
		{trace.ThrottleHwPowerBrakeSlowdown, nvml.ClocksThrottleReasonHwPowerBrakeSlowdown},
		{trace.ThrottleDisplayClockSetting, nvml.ClocksEventReasonDisplayClockSetting},
	} {
		if b.trace != b.nvml {
			t.Errorf("trace bit %#x (%v), nvml.h %#x", b.trace, trace.ThrottleNames(b.trace), b.nvml)
		}
	}
}
