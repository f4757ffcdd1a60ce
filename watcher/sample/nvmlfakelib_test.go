package sample

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
	"github.com/vigil-hpc/vigil/watcher/sample/nvmlfake"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// openFakeLibrary opens a fake libnvidia-ml.so.1 of two GPUs through
// go-nvml's own loader (dlopen, its versioned symbols, lazy binding) and
// the watcher's own choice of devices (nvmlDevices, NewNVML), as openNVML
// does for the job's GPUs 0 and 1.
func openFakeLibrary(t *testing.T) (*NVML, nvmlfake.Dir) {
	t.Helper()
	lib := filepath.Join(nvmlfake.Build(t), nvmlfake.Name)
	dir := nvmlfake.NewDir(t, filepath.Join(t.TempDir(), "node"), 2)
	t.Setenv(nvmlfake.EnvDir, string(dir))
	l := nvml.New(nvml.WithLibraryPath(lib))
	n, err := NewNVML(l, nvmlDevices(l, []int{0, 1}))
	if err != nil {
		t.Fatalf("opening the fake library %s: %v", lib, err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return n, dir
}

// TestNVMLLibraryXIDEvent: an XID appended to the fake library's events
// comes out of the real NVMLEvents code, through go-nvml's
// EventSetWait, as a device event naming the GPU it hit (its index and
// PCI address) and the XID; one reported before the GPUs were registered
// does not, as NVML delivers only the events after registration.
func TestNVMLLibraryXIDEvent(t *testing.T) {
	n, dir := openFakeLibrary(t)
	dir.XID(t, 0, 13) // before registration: never delivered
	ev, err := n.Events()
	if err != nil || ev == nil {
		t.Fatalf("events: %v, %v", ev, err)
	}
	if got, want := ev.Registered(), "0:xid,ecc 1:xid,ecc"; got != want {
		t.Errorf("registered %q, want %q", got, want)
	}
	if got, err := ev.Poll(); err != nil || len(got) != 0 {
		t.Fatalf("poll before any fault: %v, %v; want none", got, err)
	}
	dir.XID(t, 1, 79)
	dir.XID(t, 9, 79) // no such GPU: skipped
	got, err := ev.Poll()
	if err != nil {
		t.Fatal(err)
	}
	want := trace.DeviceEvent{Source: trace.DeviceNVML, Device: "1", PCI: "0000:28:00", Kind: trace.DeviceXID, XID: 79, What: xidWords(79)}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("poll after XID 79 on GPU 1: %+v, want [%+v]", got, want)
	}
	if got[0].What == "XID" || got[0].What == "" {
		t.Errorf("XID 79 not named from the catalogue: %q", got[0].What)
	}
	if again, err := ev.Poll(); err != nil || len(again) != 0 {
		t.Errorf("a second poll gives %v, %v; want nothing: each event is delivered once", again, err)
	}
}

// TestNVMLLibraryReadings: the fake library's readings come through the
// sampler, its utilisation from the file the test writes, and the clock
// event reasons, a symbol the fake leaves out, stay absent instead of
// being called.
func TestNVMLLibraryReadings(t *testing.T) {
	n, dir := openFakeLibrary(t)
	if n.reasons != nil {
		t.Errorf("the fake lacks nvmlDeviceGetCurrentClocksEventReasons, yet the sampler would call it")
	}
	dir.Util(t, 1, 97)
	got, err := n.Sample()
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Accel{
		{ID: "0", Util: 0, MemUsedMiB: 20 << 10, PowerW: 100, SMClockMHz: 1980, SMClockMaxMHz: 1980},
		{ID: "1", Util: 97, MemUsedMiB: 20 << 10, PowerW: 585, SMClockMHz: 1980, SMClockMaxMHz: 1980},
	}
	if len(got) != len(want) {
		t.Fatalf("readings %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("reading %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestNVMLFakeNamesAreReal: every NVML function the fake library exports
// is one the real libnvidia-ml.so.1 exports (Debian's driver 535,
// libnvidia-ml1, which .ci/deps-nvidia installs), read from both ELF
// symbol tables without loading the real one: the fake answers calls
// under NVML's own names, versioned ones included, never a name go-nvml
// would not look up.
func TestNVMLFakeNamesAreReal(t *testing.T) {
	var real string
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"} {
		if _, err := os.Stat(filepath.Join(dir, nvmlfake.Name)); err == nil {
			real = filepath.Join(dir, nvmlfake.Name)
			break
		}
	}
	if real == "" {
		t.Fatalf("the real %s is not installed: install the Debian non-free package libnvidia-ml1 (bash .ci/deps-nvidia)", nvmlfake.Name)
	}
	want := dltest.ELFFuncs(t, real, "nvml")
	fake := dltest.ELFFuncs(t, filepath.Join(nvmlfake.Build(t), nvmlfake.Name), "nvml")
	for name := range fake {
		if !want[name] {
			t.Errorf("the fake exports %s, which %s does not", name, real)
		}
	}
	if fake["nvmlDeviceGetCurrentClocksEventReasons"] {
		t.Errorf("the fake exports nvmlDeviceGetCurrentClocksEventReasons: it leaves it out so that the sampler's guard is exercised")
	}
}
