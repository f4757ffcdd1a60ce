package benchmarks

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// vendorCheck is a check that declares a vendor, for selection tests.
type vendorCheck struct {
	name   string
	kind   Kind
	vendor Vendor
	off    bool
	gres   bool
}

func (c vendorCheck) Spec() Descriptor {
	return Descriptor{Name: c.name, Kind: c.kind, Vendor: c.vendor, Default: !c.off, ChecksGres: c.gres,
		Description: "the " + c.name + " check"}
}
func (c vendorCheck) Run(context.Context, *Env) Result { return Result{Status: StatusPass} }

// plainCheck names no vendor: it is vendor neutral.
type plainCheck string

func (c plainCheck) Spec() Descriptor {
	return Descriptor{Name: string(c), Default: true, Description: "a plain check"}
}
func (plainCheck) Run(context.Context, *Env) Result { return Result{Status: StatusPass} }

// suite is a small registry in name order: NVIDIA and Ascend checks of
// both kinds, gpu-count (which compares Gres), neutral checks and one that
// is off by default.
var suite = []Check{
	vendorCheck{name: "command", kind: KindPerf, vendor: VendorNone, off: true},
	vendorCheck{name: "disk", kind: KindPerf, vendor: VendorNone},
	vendorCheck{name: "ecc", vendor: VendorNVIDIA},
	vendorCheck{name: "gemm", kind: KindPerf, vendor: VendorNVIDIA},
	vendorCheck{name: "gpu-count", vendor: VendorNVIDIA, gres: true},
	vendorCheck{name: "npu-count", vendor: VendorAscend},
	vendorCheck{name: "npu-gemm", kind: KindPerf, vendor: VendorAscend},
	plainCheck("undeclared"),
}

func names(cs []Check) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Spec().Name)
	}
	return strings.Join(s, ",")
}

func naNames(na []NotApplicable) string {
	var s []string
	for _, n := range na {
		s = append(s, n.Check)
	}
	return strings.Join(s, ",")
}

func TestSelectByVendor(t *testing.T) {
	nvidia, ascend, both, none := Hardware{VendorNVIDIA: 8}, Hardware{VendorAscend: 8}, Hardware{VendorNVIDIA: 2, VendorAscend: 8}, Hardware{}
	tests := []struct {
		name       string
		names      []string
		skip       []string
		healthOnly bool
		hw         *Hardware
		want       string
		na         string
	}{
		{name: "nvidia only", hw: &nvidia, want: "disk,ecc,gemm,gpu-count,undeclared", na: "npu-count,npu-gemm"},
		{name: "ascend only", hw: &ascend, want: "disk,npu-count,npu-gemm,undeclared", na: "ecc,gemm,gpu-count"},
		{name: "both vendors", hw: &both, want: "disk,ecc,gemm,gpu-count,npu-count,npu-gemm,undeclared"},
		{name: "no accelerator: gpu-count still compares Gres", hw: &none, want: "disk,gpu-count,undeclared", na: "ecc,gemm,npu-count,npu-gemm"},
		{name: "health only on nvidia", hw: &nvidia, healthOnly: true, want: "ecc,gpu-count,undeclared", na: "npu-count"},
		{name: "skipped checks are not called not applicable", hw: &nvidia, skip: []string{"npu-gemm", "ecc"},
			want: "disk,gemm,gpu-count,undeclared", na: "npu-count"},
		{name: "explicit list runs as asked on nvidia", hw: &nvidia, names: []string{"npu-count", "gemm", "command"},
			want: "npu-count,gemm,command"},
		{name: "explicit list runs as asked without accelerators", hw: &none, names: []string{"ecc", "npu-gemm"},
			want: "ecc,npu-gemm"},
		{name: "explicit list still honours skip and health only", hw: &none, names: []string{"ecc", "npu-gemm", "disk"},
			skip: []string{"ecc"}, healthOnly: true, want: ""},
		{name: "no hardware given: every vendor", want: "disk,ecc,gemm,gpu-count,npu-count,npu-gemm,undeclared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, na, err := selectChecks(suite, tt.names, tt.skip, tt.healthOnly, tt.hw)
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tt.want || naNames(na) != tt.na {
				t.Fatalf("selected %q, not applicable %q; want %q and %q", names(got), naNames(na), tt.want, tt.na)
			}
		})
	}
}

func TestNotApplicableMessages(t *testing.T) {
	_, na, err := selectChecks(suite, nil, nil, false, &Hardware{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]NotApplicable{
		"ecc":       {Check: "ecc", Vendor: VendorNVIDIA, Message: "no NVIDIA GPU on this node (PCI vendor 10de not found, no /dev/nvidia[0-9]*)"},
		"npu-count": {Check: "npu-count", Vendor: VendorAscend, Message: "no Ascend NPU on this node (PCI vendor 19e5 not found, no /dev/davinci[0-9]*)"},
	}
	for _, n := range na {
		if w, ok := want[n.Check]; ok && n != w {
			t.Errorf("got %+v, want %+v", n, w)
		}
		delete(want, n.Check)
	}
	if len(want) > 0 {
		t.Errorf("not reported: %v", want)
	}
}

func TestSelectForUnknownNames(t *testing.T) {
	_, _, err := SelectFor([]string{"nope"}, []string{"nada"}, false, Hardware{VendorNVIDIA: 1})
	if !errors.Is(err, ErrUnknownCheck) || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), `"nada" in skip`) {
		t.Fatalf("err = %v", err)
	}
}

func TestDescribeAndInfos(t *testing.T) {
	if v := Describe(plainCheck("x")).Vendor; v != VendorNone {
		t.Errorf("undeclared vendor = %q", v)
	}
	if v := Describe(vendorCheck{vendor: VendorAscend}).Vendor; v != VendorAscend {
		t.Errorf("vendor = %q", v)
	}
	if Describe(vendorCheck{off: true}).Default || !Describe(plainCheck("x")).Default {
		t.Error("Default")
	}
	var fault CheckInfo
	for _, i := range Infos() {
		if i.Name == FaultCheckName {
			fault = i
		}
	}
	if fault.Default || fault.Vendor != VendorNone || fault.Kind != KindHealth || fault.Description == "" {
		t.Errorf("fault-inject info %+v", fault)
	}
}

func TestListTable(t *testing.T) {
	got := ListTable([]CheckInfo{
		{Name: "gpu-count", Kind: KindHealth, Vendor: VendorNVIDIA, Default: true, Description: "NVML's GPUs against Gres and the PCI bus",
			Reasons: []string{"GPUCountMismatch", "GPUFellOffBus"}},
		{Name: "command", Kind: KindPerf, Vendor: VendorNone, Description: "an admin's command"},
	})
	want := "" +
		"CHECK      KIND    VENDOR  DEFAULT  DESCRIPTION\n" +
		"gpu-count  health  nvidia  yes      NVML's GPUs against Gres and the PCI bus\n" +
		"           reasons: GPUCountMismatch GPUFellOffBus\n" +
		"command    perf    none    no       an admin's command\n" +
		"\n" +
		"any check: CheckTimedOut CheckCrashed CheckNotStarted CheckPanicked CheckBadResult BudgetExpired Canceled InvalidSettings Failed\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
