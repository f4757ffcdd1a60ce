package device

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

func TestEvaluate(t *testing.T) {
	th := Thresholds{"Ascend910B": {"x": 10}, "Ascend910B4": {"x": 5}}
	ty := &devcheck.Tally{Check: "c"}
	rs := []devcheck.Reading{{Device: "npu0", Model: "Ascend910B4", Value: 6}, {Device: "npu1", Model: "Ascend910B3", Value: 9}, {Device: "npu2", Model: "Ascend910B3", Value: 20}, {Device: "npu3", Model: "Ascend910B3", Value: 21}}
	evaluate(ty, devcheck.Metric{Name: "x", Key: "x", Unit: "u", Label: "x"}, devcheck.Tokens{Limit: "PBelowThreshold", Peers: "PBelowPeers"}, rs, th, Peers{Fraction: 0.5, Min: 3})
	// npu0 passes its own floor (5) but is below half the median (14.5);
	// npu1 is below the 910B floor (10).
	fails := ty.Faults()
	if len(fails) != 2 || fails[0].Reason != "PBelowPeers" || fails[0].Device != "npu0" ||
		fails[1].Reason != "PBelowThreshold" || fails[1].Device != "npu1" {
		t.Errorf("fails %+v", fails)
	}
	if *ty.Values[0].Threshold != 5 || *ty.Values[1].Threshold != 10 {
		t.Error("thresholds by model")
	}
}

// TestValidateGEMMNamesTheVendorsTypes: the messages list the dtypes the
// vendor measures, as each vendor's check has always worded them.
func TestValidateGEMMNamesTheVendorsTypes(t *testing.T) {
	s := GEMMSettings{Peers: Peers{Fraction: 0.85, Min: 3}, Sizes: []int{64}, MaxIters: 1, MinTime: 1}
	for _, tt := range []struct {
		dtypes []string
		vendor []DType
		want   string
	}{
		{nil, []DType{BF16, FP16, TF32, FP8}, "dtypes = []: want at least one of bf16, fp16, tf32, fp8"},
		{[]string{"int8"}, []DType{BF16, FP16, TF32, FP8}, `dtypes = "int8": want bf16, fp16, tf32 or fp8`},
		{nil, []DType{FP16, BF16}, "dtypes = []: want at least one of fp16, bf16"},
		{[]string{"tf32"}, []DType{FP16, BF16}, `dtypes = "tf32": want fp16 or bf16`},
		{[]string{"fp16"}, []DType{FP16, BF16}, ""},
	} {
		s.DTypes, s.accept = tt.dtypes, tt.vendor
		err := s.Validate()
		var se *benchmarks.SettingError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.dtypes, err)
		case tt.want != "" && (!errors.As(err, &se) || se.Key != "dtypes" || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: %v, want %q", tt.dtypes, err, tt.want)
		}
	}
}

// TestVendorsDoNotImportEachOther: the vendor packages meet here, never in
// each other.
func TestVendorsDoNotImportEachOther(t *testing.T) {
	const mod = "github.com/vigil-hpc/vigil/benchmarks/"
	for pkg, other := range map[string]string{"nvidia": "ascend", "ascend": "nvidia"} {
		files, _ := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if len(files) == 0 {
			t.Fatalf("no files in ../%s", pkg)
		}
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				if p, _ := strconv.Unquote(im.Path.Value); p == mod+other {
					t.Errorf("%s imports %s", f, p)
				}
			}
		}
	}
}

// TestValidateLaunchAndOverlap: the shared settings name the key that is
// out of range, and the overlap's dtype the vendor's GEMM types.
func TestValidateLaunchAndOverlap(t *testing.T) {
	key := func(err error) string {
		var se *benchmarks.SettingError
		if !errors.As(err, &se) {
			return ""
		}
		return se.Key
	}
	l := defaultLaunchSettings(nil)
	if err := l.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	l.Launches = 9
	if key(l.Validate()) != "launches" {
		t.Error("9 launches accepted")
	}
	l = defaultLaunchSettings(nil)
	l.Fraction = 1.5
	if l.Validate() == nil {
		t.Error("peer_fraction 1.5 accepted")
	}
	ascend := OverlapSpec{DType: BF16, DTypes: []DType{FP16, BF16}}
	o := ascend.settings()
	if err := o.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	o.DType = "fp8"
	if err := o.Validate(); key(err) != "dtype" || !strings.Contains(err.Error(), `"fp8": want fp16 or bf16`) {
		t.Errorf("fp8 on a vendor without it: %v", err)
	}
	o.accept = []DType{BF16, FP16, TF32, FP8}
	if err := o.Validate(); err != nil {
		t.Errorf("fp8 on a vendor with it: %v", err)
	}
	for _, bad := range []struct {
		key string
		set func(*OverlapSettings)
	}{
		{"size", func(s *OverlapSettings) { s.Size = 100 }},
		{"gemms", func(s *OverlapSettings) { s.GEMMs = 0 }},
		{"allreduces", func(s *OverlapSettings) { s.AllReduces = 0 }},
		{"bytes", func(s *OverlapSettings) { s.Bytes = 100 }},
		{"min_efficiency", func(s *OverlapSettings) { s.MinEfficiency = -1 }},
	} {
		o := ascend.settings()
		bad.set(o)
		if got := key(o.Validate()); got != bad.key {
			t.Errorf("%s: error names %q", bad.key, got)
		}
	}
}

// TestShippedThresholdsHeldOnce: a spec's thresholds are the defaults'
// table (a copy: settings never change them) and the base that the
// config's table adds to, model by model and metric by metric.
func TestShippedThresholdsHeldOnce(t *testing.T) {
	th := Thresholds{"H100": {"tflops_bf16": 600, "tflops_fp16": 600}}
	v := &Vendor{Vendor: benchmarks.VendorNone, Reasons: []string{"X"},
		Classify:    func(error) (benchmarks.Status, string) { return benchmarks.StatusUnknown, "X" },
		BadSettings: devcheck.BadSettings}
	spec := GEMMSpec{Common: Common{Name: "g", Description: "d", Vendor: v, Thresholds: th,
		Open: func(context.Context, *benchmarks.Env, []int) (Node, error) { return nil, errors.New("no node") }},
		DTypes: []DType{BF16, FP16}}
	c := NewGEMM(spec).(*gemmCheck)
	shown := c.Spec().Settings().(*GEMMSettings)
	if !reflect.DeepEqual(shown.Thresholds, th) {
		t.Fatalf("defaults' thresholds %v, want the spec's %v", shown.Thresholds, th)
	}
	shown.Thresholds["H100"]["tflops_bf16"] = 1
	if th["H100"]["tflops_bf16"] != 600 {
		t.Fatal("the defaults share the spec's table")
	}
	s := spec.settings()
	env := &benchmarks.Env{Settings: func(v any) error {
		v.(*GEMMSettings).Thresholds = Thresholds{"H100": {"tflops_bf16": 500}, "B200": {"tflops_bf16": 1400}}
		return nil
	}}
	if _, res := c.start(context.Background(), env, s); res == nil || res.Reason != "X" {
		t.Fatalf("start: %+v, want the node's error", res)
	}
	want := Thresholds{"H100": {"tflops_bf16": 500, "tflops_fp16": 600}, "B200": {"tflops_bf16": 1400}}
	if got := s.gemm().Thresholds; !reflect.DeepEqual(got, want) {
		t.Errorf("decoded thresholds %v, want %v", got, want)
	}
}

// TestSettingsKeysPerSpec: the spec says which keys a vendor's settings
// have beyond the shared ones (cross_check, concurrent), and each set
// validates itself with the vendor's input types.
func TestSettingsKeysPerSpec(t *testing.T) {
	if _, ok := (GEMMSpec{}).settings().(*GEMMSettings); !ok {
		t.Error("a GEMM without CrossCheck has cross_check")
	}
	g, ok := (GEMMSpec{CrossCheck: true, DTypes: []DType{FP8}}).settings().(*CrossCheckedGEMMSettings)
	if !ok || !g.CrossCheck || !g.crossCheck() || g.DTypes[0] != "fp8" || g.Validate() != nil {
		t.Errorf("cross-checked GEMM settings %+v", g)
	}
	if _, ok := (CollectiveSpec{}).settings().(*CollectiveSettings); !ok {
		t.Error("a collective without Concurrent has concurrent")
	}
	cs, ok := (CollectiveSpec{Concurrent: 4}).settings().(*ConcurrentCollectiveSettings)
	if !ok || cs.concurrent() != 4 {
		t.Fatalf("concurrent collective settings %+v", cs)
	}
	cs.Concurrent = 0
	var se *benchmarks.SettingError
	if err := cs.Validate(); !errors.As(err, &se) || se.Key != "concurrent" {
		t.Errorf("concurrent = 0: %v", err)
	}
}
