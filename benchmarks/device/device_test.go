package device

import (
	"errors"
	"go/parser"
	"go/token"
	"path/filepath"
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
		s.DTypes = tt.dtypes
		err := ValidateGEMM(&s, tt.vendor...)
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
	l := DefaultLaunchSettings(nil)
	if err := ValidateLaunch(&l); err != nil {
		t.Errorf("defaults: %v", err)
	}
	l.Launches = 9
	if key(ValidateLaunch(&l)) != "launches" {
		t.Error("9 launches accepted")
	}
	l = DefaultLaunchSettings(nil)
	l.Fraction = 1.5
	if ValidateLaunch(&l) == nil {
		t.Error("peer_fraction 1.5 accepted")
	}
	o := DefaultOverlapSettings(BF16)
	if err := ValidateOverlap(&o, FP16, BF16); err != nil {
		t.Errorf("defaults: %v", err)
	}
	o.DType = "fp8"
	if err := ValidateOverlap(&o, FP16, BF16); key(err) != "dtype" || !strings.Contains(err.Error(), `"fp8": want fp16 or bf16`) {
		t.Errorf("fp8 on a vendor without it: %v", err)
	}
	if err := ValidateOverlap(&o, BF16, FP16, TF32, FP8); err != nil {
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
		o := DefaultOverlapSettings(BF16)
		bad.set(&o)
		if got := key(ValidateOverlap(&o, BF16)); got != bad.key {
			t.Errorf("%s: error names %q", bad.key, got)
		}
	}
}
