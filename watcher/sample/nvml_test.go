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
	util      uint32
	usedBytes uint64
	powerMW   uint32
	powerRet  nvml.Return
	utilRet   nvml.Return
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
		"GPU-bbbb": {util: 0, usedBytes: 1 << 20, powerRet: nvml.ERROR_NOT_SUPPORTED},
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
	t.Run("no driver", func(t *testing.T) {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
		if _, err := NewNVML(lib, nil); !errors.Is(err, ErrNVML) || !strings.Contains(err.Error(), "init") {
			t.Fatalf("got %v", err)
		}
	})
}
