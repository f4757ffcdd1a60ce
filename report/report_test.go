package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

func f64(v float64) *float64 { return &v }

const (
	ascendAbsent = "no Ascend NPU on this node (PCI vendor 19e5 not found, no /dev/davinci[0-9]*)"
	nvidiaAbsent = "no NVIDIA GPU on this node (PCI vendor 10de not found, no /dev/nvidia[0-9]*)"
)

func sampleReport() *Report {
	return &Report{
		V: Version, Program: "vigil-prolog", Mode: "prolog", Node: "gpu07", Job: "4242",
		Start:        time.Date(2026, 11, 29, 15, 10, 0, 0, time.UTC),
		Duration:     1234 * time.Millisecond,
		Config:       ConfigInfo{Path: "/etc/vigil/vigil.toml", Found: true, Valid: true},
		Accelerators: Accelerators{Count: benchmarks.Hardware{benchmarks.VendorNVIDIA: 2}, Evidence: []string{"/dev/nvidia0", "/dev/nvidia1"}},
		Results: []benchmarks.Result{
			{Check: "gpu-count", Status: benchmarks.StatusPass, Attempts: 1, Duration: 3 * time.Millisecond,
				Values: []benchmarks.Value{{Name: "gpus", Value: 2, Unit: "count", Threshold: f64(2), Op: ">=", Status: benchmarks.StatusPass}}},
			{Check: "ecc", Status: benchmarks.StatusFail, Reason: "ECCUncorrectable", Device: "gpu1", Message: "gpu1: 3 uncorrectable \"volatile\" errors",
				Attempts: 1, Duration: 5 * time.Millisecond,
				Values: []benchmarks.Value{{Device: "gpu1", Name: "ecc_uncorrected", Value: 3, Unit: "count", Threshold: f64(0), Op: "<=", Status: benchmarks.StatusFail}}},
			{Check: "nvlink", Status: benchmarks.StatusUnknown, Reason: "NVMLCallFailed", Message: "nvmlDeviceGetNvLinkState: not supported", Attempts: 1, Duration: time.Millisecond},
		},
		NotApplicable: []benchmarks.NotApplicable{
			{Check: "npu-count", Vendor: benchmarks.VendorAscend, Message: ascendAbsent},
			{Check: "npu-ecc", Vendor: benchmarks.VendorAscend, Message: ascendAbsent},
		},
		Verdict:  benchmarks.StatusFail,
		Action:   Action{Kind: ActionDrain, Reason: "vigil: ecc ECCUncorrectable gpu1", Done: true},
		ExitCode: 1,
		Guarded: []Guarded{{Check: "gemm", Drained: 12, Nodes: 100, MaxShare: 0.1,
			Message: "gemm: 12 of 100 nodes (12%) drained by vigil for gemm within 1h0m0s, above [guard] max_share 10%: not draining for gemm; check its thresholds"}},
		Notices:  []Notice{{Kind: "drain", Checks: []string{"ecc"}, To: "webhook", Sent: true}},
		BadLinks: []BadLink{{A: "gpu07", B: "gpu08", State: "link-fault"}},
	}
}

func TestGoldenJSON(t *testing.T) {
	b, err := sampleReport().JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json", b)
}

func TestGoldenPrometheus(t *testing.T) {
	var b bytes.Buffer
	if err := Prometheus(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "vigil-prolog.prom", b.Bytes())
}

func TestGoldenTable(t *testing.T) {
	var b bytes.Buffer
	Table(&b, sampleReport())
	golden(t, "table.txt", b.Bytes())
}

func TestGoldenTableNoAccelerators(t *testing.T) {
	r := &Report{V: Version, Program: "vigil-prolog", Mode: "prolog", Node: "vm", DryRun: true,
		Config: ConfigInfo{Path: "/etc/vigil/vigil.toml", Valid: true},
		Results: []benchmarks.Result{
			{Check: "disk", Status: benchmarks.StatusPass, Attempts: 1, Message: "/tmp writable"},
			{Check: "gpu-count", Status: benchmarks.StatusPass, Attempts: 1, Message: "no NVIDIA devices found (libnvidia-ml.so.1 not found)"},
		},
		NotApplicable: []benchmarks.NotApplicable{
			{Check: "ecc", Vendor: benchmarks.VendorNVIDIA, Message: nvidiaAbsent},
			{Check: "npu-count", Vendor: benchmarks.VendorAscend, Message: ascendAbsent},
			{Check: "xid", Vendor: benchmarks.VendorNVIDIA, Message: nvidiaAbsent},
		},
		Verdict: benchmarks.StatusPass, Action: Action{Kind: ActionNone}}
	var b bytes.Buffer
	Table(&b, r)
	golden(t, "table-dry-run.txt", b.Bytes())
}

func TestGoldenTableInvalidConfig(t *testing.T) {
	r := &Report{V: Version, Program: "vigil-prolog", Mode: "prolog", Node: "n1",
		Config:  ConfigInfo{Path: "/etc/vigil/vigil.toml", Found: true, Errors: []string{"/etc/vigil/vigil.toml:3: prolog.bugdet: unknown key"}},
		Verdict: benchmarks.StatusUnknown, Skipped: "the config is invalid", Action: Action{Kind: ActionNone}}
	var b bytes.Buffer
	Table(&b, r)
	golden(t, "table-invalid.txt", b.Bytes())
}

func TestWriteJSONAtomicAndPrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reports")
	r := sampleReport()
	var paths []string
	for i := 0; i < 3; i++ {
		r.Start = r.Start.Add(time.Second)
		p, err := WriteJSON(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if filepath.Base(paths[0]) != "20261129T151001.000Z-prolog-gpu07-job4242.json" {
		t.Errorf("name %s", paths[0])
	}
	if err := Prune(dir, 2); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != filepath.Base(paths[1]) {
		t.Fatalf("after prune: %v (no temp files may remain)", names)
	}
}

func TestLabelEscaping(t *testing.T) {
	if got := labels("a", "x\"y\\z\nw"); got != `{a="x\"y\\z\nw"}` {
		t.Fatalf("labels = %s", got)
	}
}

func TestWriteAtomicFailsCleanly(t *testing.T) {
	if err := WriteAtomic(filepath.Join(t.TempDir(), "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("no error for a missing directory")
	}
}
