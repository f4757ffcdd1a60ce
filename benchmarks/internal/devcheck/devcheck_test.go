package devcheck

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
)

func TestTally(t *testing.T) {
	tests := []struct {
		name    string
		record  func(t *Tally)
		status  benchmarks.Status
		reason  string
		device  string
		message string
	}{
		{"pass", func(t *Tally) {}, benchmarks.StatusPass, "", "", "all well"},
		{"pass with a note", func(t *Tally) { t.Note("gpu1 idle") }, benchmarks.StatusPass, "", "", "all well; gpu1 idle"},
		{"unknown names the first", func(t *Tally) {
			t.Unknown("gpu0", "NotSupported", "gpu0 n/a")
			t.Unknown("gpu1", "NVMLError", "gpu1 odd")
		}, benchmarks.StatusUnknown, "NotSupported", "gpu0", "gpu0 n/a; gpu1 odd"},
		{"a fault outranks unknowns", func(t *Tally) {
			t.Unknown("gpu0", "NotSupported", "gpu0 n/a")
			t.Fail("gpu2", "ECCUncorrectable", "gpu2 ECC %d > %d", 3, 0)
			t.Fail("gpu3", "GPULost", "gpu3 lost")
			t.Note("a note")
		}, benchmarks.StatusFail, "ECCUncorrectable", "gpu2", "gpu2 ECC 3 > 0; gpu3 lost; a note"},
		{"notes alone after an empty pass message", func(t *Tally) { t.Note("only") }, benchmarks.StatusPass, "", "", "all well; only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ty := &Tally{Check: "c"}
			tt.record(ty)
			r := ty.Result("all well")
			assert.Equal(t, "c", r.Check)
			assert.Equal(t, tt.status, r.Status)
			assert.Equal(t, tt.reason, r.Reason)
			assert.Equal(t, tt.device, r.Device)
			assert.Equal(t, tt.message, r.Message)
		})
	}
	ty := &Tally{Check: "c"}
	ty.Note("n")
	assert.Equal(t, "n", ty.Result("").Message, "no leading separator")

	ty = &Tally{Check: "c"}
	ty.Value("gpu0", "x", 1, "count", Ptr(2.0), "<=", benchmarks.StatusPass)
	ty.Fail("gpu0", "R", "m")
	require.Len(t, ty.Values, 1)
	assert.Equal(t, 2.0, *ty.Values[0].Threshold)
	assert.Equal(t, []Fault{{"gpu0", "R", "m"}}, ty.Faults())

	ctx, cancel := context.WithCancel(context.Background())
	ty = &Tally{Check: "c"}
	assert.False(t, ty.Canceled(ctx))
	cancel()
	assert.True(t, ty.Canceled(ctx))
	r := ty.Result("")
	assert.Equal(t, benchmarks.StatusUnknown, r.Status)
	assert.Equal(t, ReasonCanceled, r.Reason)
}

func TestSettingsHelpers(t *testing.T) {
	v := struct{ N int }{N: 1}
	require.NoError(t, Decode(nil, &v))
	require.NoError(t, Decode(&benchmarks.Env{}, &v))
	assert.Equal(t, 1, v.N, "no settings keep the defaults")
	bad := errors.New("line 3: unknown key")
	assert.ErrorIs(t, Decode(&benchmarks.Env{Settings: func(any) error { return bad }}, &v), bad)

	r := BadSettings("ecc", errors.New("max = -1"))
	assert.Equal(t, benchmarks.Result{Check: "ecc", Status: benchmarks.StatusUnknown, Reason: ReasonInvalidSettings,
		Message: "settings of [checks.ecc]: max = -1"}, r)

	assert.Nil(t, EnvDevices(nil))
	assert.Equal(t, []int{2}, EnvDevices(&benchmarks.Env{Devices: []int{2}}))
	for n, want := range map[int]string{0: "GPUs", 1: "GPU", 2: "GPUs"} {
		assert.Equal(t, want, Plural(n, "GPU"))
	}
	assert.Equal(t, "processes", Plural(3, "process"))
}

func TestRun(t *testing.T) {
	require.NoError(t, Run(context.Background(), func() error { return nil }))
	odd := errors.New("odd")
	assert.Equal(t, odd, Run(context.Background(), func() error { return odd }))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	block := make(chan struct{})
	defer close(block)
	assert.ErrorIs(t, Run(ctx, func() error { <-block; return nil }), ErrHung)
}

func TestEncodings(t *testing.T) {
	for i := -InputSteps; i <= InputSteps; i++ {
		x := float32(i) / InputScale
		assert.Equal(t, x, F16ToF32(F16FromF32(x)), "fp16 %g", x)
		assert.Equal(t, x, BF16ToF32(BF16FromF32(x)), "bf16 %g", x)
	}
	tests := []struct {
		x         float32
		bf16, f16 uint16
	}{
		{1, 0x3f80, 0x3c00},
		{-2, 0xc000, 0xc000},
		{0.125, 0x3e00, 0x3000},
		{65504, 0x4780, 0x7bff},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.bf16, BF16FromF32(tt.x), "bf16(%g)", tt.x)
		assert.Equal(t, tt.f16, F16FromF32(tt.x), "f16(%g)", tt.x)
	}
	assert.Equal(t, float32(1), F16ToF32(F16FromF32(1+1.0/4096)), "fp16 rounds to nearest")
	assert.Equal(t, float32(1+1.0/512), F16ToF32(F16FromF32(1+1.0/512+1.0/8192)), "fp16 rounds up past half")
	assert.Equal(t, uint16(0x7c00), F16FromF32(1e6), "fp16 overflows to infinity")
	assert.Equal(t, float32(math.Ldexp(1, -24)), F16ToF32(0x0001), "smallest fp16 subnormal")
	assert.Equal(t, uint16(0x0001), F16FromF32(float32(math.Ldexp(1, -24))))
	assert.Equal(t, BF16FromF32(1), BF16FromF32(1+1.0/256), "bf16 ties to even")
	assert.True(t, math.IsNaN(float64(F16ToF32(F16FromF32(float32(math.NaN()))))))
	assert.True(t, math.IsNaN(float64(BF16ToF32(BF16FromF32(float32(math.NaN()))))))
}

func TestGenMatrix(t *testing.T) {
	a := GenMatrix(8, 8, 1)
	require.Len(t, a, 64)
	distinct := map[float32]bool{}
	for _, v := range a {
		assert.True(t, v >= -2 && v <= 2 && v*InputScale == float32(int(v*InputScale)), "%g is not a multiple of 1/8 in [-2, 2]", v)
		distinct[v] = true
	}
	assert.Greater(t, len(distinct), 8)
	assert.Equal(t, a, GenMatrix(8, 8, 1), "reproducible")
	assert.NotEqual(t, a, GenMatrix(8, 8, 2))
}

// hostGEMM is D = A·Bᵀ (column-major m×n) in float64, rounded to bf16.
func hostGEMM(m, n, k int, a, bt []float32) []float32 {
	d := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for l := 0; l < k; l++ {
				s += float64(a[i*k+l]) * float64(bt[j*k+l])
			}
			d[i+j*m] = BF16ToF32(BF16FromF32(float32(s)))
		}
	}
	return d
}

func TestGEMMVerification(t *testing.T) {
	const m, n, k = 48, 32, 64
	a, bt := GenMatrix(m, k, 11), GenMatrix(n, k, 12)
	g := NewGEMM(m, n, k, a, bt, 1.0/128)
	assert.Greater(t, g.Sigma, 0.0)
	d, d2 := hostGEMM(m, n, k, a, bt), hostGEMM(n, m, k, bt, a)
	require.NoError(t, g.Verify(d, 200, 1))
	require.NoError(t, g.CheckCross(d, d2))
	assert.ErrorContains(t, g.Verify(d[:10], 10, 1), "GEMM returned 10 elements, want 1536")

	corrupt := []struct {
		name   string
		f      func(d []float32)
		checks string // which of samples/sums/cross must fail
	}{
		{"zeros", func(d []float32) {
			for i := range d {
				d[i] = 0
			}
		}, "samples sums cross"},
		{"one element off", func(d []float32) { d[5+7*m] += 40 }, "sums cross"},
		{"NaN", func(d []float32) { d[100] = float32(math.NaN()) }, "sums cross"},
		{"one column scaled", func(d []float32) {
			for i := 0; i < m; i++ {
				d[i+3*m] *= 1.5
			}
		}, "cross"},
		{"transposed tile", func(d []float32) {
			for i := 0; i < 8; i++ {
				for j := 0; j < i; j++ {
					d[i+j*m], d[j+i*m] = d[j+i*m], d[i+j*m]
				}
			}
		}, "cross"},
	}
	for _, c := range corrupt {
		t.Run(c.name, func(t *testing.T) {
			bad := append([]float32(nil), d...)
			c.f(bad)
			results := map[string]error{
				"samples": g.CheckSamples(bad, m*n*4, 1),
				"sums":    g.CheckColumnSums(bad),
				"cross":   g.CheckCross(bad, d2),
			}
			for _, want := range strings.Fields(c.checks) {
				var wr *WrongResult
				if assert.ErrorAs(t, results[want], &wr, "%s did not catch it", want) {
					assert.Positive(t, wr.Bad)
					assert.Contains(t, wr.Error(), "wrong, worst")
				}
			}
		})
	}
}

func TestThresholds(t *testing.T) {
	th := Thresholds{"H100": {"tflops_bf16": 600}, "H100 PCIe": {"tflops_bf16": 500}}
	v, key, ok := th.Lookup("NVIDIA H100 PCIe", "tflops_bf16")
	assert.True(t, ok)
	assert.Equal(t, "H100 PCIe", key, "the longest key wins")
	assert.Equal(t, 500.0, v)
	_, _, ok = th.Lookup("NVIDIA H100 80GB HBM3", "tflops_fp8")
	assert.False(t, ok, "metric missing")

	merged := th.Merge(Thresholds{"H100": {"tflops_fp8": 1200}, "B200": {"tflops_bf16": 1500}})
	assert.Equal(t, map[string]float64{"tflops_bf16": 600, "tflops_fp8": 1200}, merged["H100"])
	assert.Equal(t, 1500.0, merged["B200"]["tflops_bf16"])
	assert.Len(t, th["H100"], 1, "Merge does not modify its receiver")
	assert.Equal(t, Thresholds{}, Thresholds(nil).Merge(nil))

	assert.NoError(t, ValidatePeers(Peers{Fraction: 0.85, Min: 3}))
	assert.ErrorContains(t, ValidatePeers(Peers{Fraction: 1.5, Min: 3}), "peer_fraction")
	assert.ErrorContains(t, ValidatePeers(Peers{Fraction: 0.5, Min: 1}), "peer_min_devices")
}

func TestEvaluate(t *testing.T) {
	higher := Metric{Name: "tflops_bf16_8192", Key: "tflops_bf16", Unit: "TFLOPS", Label: "bf16 GEMM"}
	lower := Metric{Name: "wall_us", Key: "wall_us", Unit: "us", Lower: true, Label: "launch latency"}
	th := Thresholds{"H100": {"tflops_bf16": 600, "wall_us": 10}}
	rs := func(vals ...float64) []Reading {
		var out []Reading
		for i, v := range vals {
			out = append(out, Reading{Device: "gpu" + string(rune('0'+i)), Model: "NVIDIA H100 80GB HBM3", Value: v})
		}
		return out
	}
	peers := Peers{Fraction: 0.85, Min: 3}
	tests := []struct {
		name string
		m    Metric
		rs   []Reading
		p    Peers
		want []string // device:reason of the findings
	}{
		{"all good", higher, rs(700, 710, 705), peers, nil},
		{"below floor", higher, rs(700, 500, 705), peers, []string{"gpu1:CBelowThreshold"}},
		{"below peers", higher, rs(900, 700, 905), peers, []string{"gpu1:CBelowPeers"}},
		{"too few for peers", higher, rs(900, 700), peers, nil},
		{"peers off", higher, rs(900, 700, 905), Peers{}, nil},
		{"latency above limit", lower, rs(5, 12, 5), peers, []string{"gpu1:CAboveThreshold"}},
		{"latency above peers", lower, rs(5, 9, 5), peers, []string{"gpu1:CAbovePeers"}},
		{"NaN fails", higher, rs(700, math.NaN(), 705), Peers{}, []string{"gpu1:CBelowThreshold"}},
		{"no key, peers only", Metric{Name: "x", Unit: "u", Label: "x"}, rs(100, 100, 50), peers, []string{"gpu2:CBelowPeers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals, fs := Evaluate(tt.m, tt.rs, th, tt.p)
			require.Len(t, vals, len(tt.rs))
			tok := Tokens{Limit: "CBelowThreshold", Peers: "CBelowPeers"}
			if tt.m.Lower {
				tok = Tokens{Limit: "CAboveThreshold", Peers: "CAbovePeers"}
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Device+":"+f.Reason(tok))
			}
			assert.Equal(t, tt.want, got)
			for i, v := range vals {
				failed := false
				for _, f := range fs {
					failed = failed || f.Device == tt.rs[i].Device
				}
				assert.Equal(t, failed, v.Status == benchmarks.StatusFail, "%s", v.Device)
			}
		})
	}
	vals, fs := Evaluate(higher, rs(700, 500, 705), th, Peers{})
	assert.Equal(t, ">=", vals[1].Op)
	assert.Equal(t, 600.0, *vals[1].Threshold)
	assert.Equal(t, "gpu1 bf16 GEMM 500 TFLOPS, limit >= 600", fs[0].Message)
	_, fs = Evaluate(higher, rs(900, 700, 905), th, peers)
	assert.Equal(t, "gpu1 bf16 GEMM 700 TFLOPS is 78% of the node median 900", fs[0].Message)
	assert.Equal(t, 1.2346, Round(1.234567))
	assert.True(t, math.IsInf(Round(math.Inf(1)), 1))
}

func TestCollectives(t *testing.T) {
	assert.Equal(t, 2*7.0/8, BusFactor(AllReduce, 8))
	assert.Equal(t, 7.0/8, BusFactor(AllGather, 8))
	assert.Equal(t, 7.0/8, BusFactor(AllToAll, 8))
	assert.Zero(t, BusFactor(AllReduce, 1), "one rank moves nothing over the bus")
	assert.Equal(t, float64(8*4<<20), SizeBytes(AllGather, 1<<20, 8))
	assert.Equal(t, 4.0*(1<<20), SizeBytes(AllReduce, 1<<20, 8))
	assert.Equal(t, 2.0, AlgBW(4e9, 2))

	in := [][]float32{{1, 2}, {3, 4}}
	assert.Equal(t, [][]float32{{4, 6}, {4, 6}}, CollExpected(AllReduce, in))
	assert.Equal(t, [][]float32{{1, 2, 3, 4}, {1, 2, 3, 4}}, CollExpected(AllGather, in))
	assert.Equal(t, [][]float32{{1, 3}, {2, 4}}, CollExpected(AllToAll, in))
	assert.Nil(t, CollExpected("broadcast", in))

	names := []string{"gpu0", "gpu1", "gpu2", "gpu4"}
	for _, op := range []CollOp{AllReduce, AllGather, AllToAll} {
		t.Run(string(op), func(t *testing.T) {
			in := CollInputs(4, 64)
			good := CollExpected(op, in)
			require.NoError(t, VerifyCollective(op, names, in, good))
			bad := make([][]float32, len(good))
			for r := range good {
				bad[r] = append([]float32(nil), good[r]...)
			}
			bad[3][10]++
			assert.ErrorContains(t, VerifyCollective(op, names, in, bad), "gpu4: 1 of")
			assert.ErrorContains(t, VerifyCollective(op, names, in, bad[:2]), "2 output buffers, want 4")
		})
	}
	assert.ErrorContains(t, VerifyCollective("broadcast", names, CollInputs(4, 4), nil), "unsupported collective")
}

func TestDecodeThresholds(t *testing.T) {
	type settings struct {
		Bytes      int
		Thresholds Thresholds
	}
	base := Thresholds{"H100": {"d2d_gbps": 1100, "h2d_gbps": 35}}
	s := settings{Bytes: 1, Thresholds: base.Merge(nil)}
	env := &benchmarks.Env{Settings: func(v any) error {
		p := v.(*settings)
		assert.Nil(t, p.Thresholds, "the table is decoded into an empty map")
		p.Bytes = 2
		p.Thresholds = Thresholds{"H100": {"h2d_gbps": 20}, "B200": {"d2d_gbps": 2500}}
		return nil
	}}
	require.NoError(t, DecodeThresholds(env, &s, &s.Thresholds, base))
	assert.Equal(t, 2, s.Bytes)
	assert.Equal(t, Thresholds{"H100": {"d2d_gbps": 1100, "h2d_gbps": 20}, "B200": {"d2d_gbps": 2500}}, s.Thresholds)
	assert.Equal(t, 35.0, base["H100"]["h2d_gbps"], "the shipped limits are not modified")

	s = settings{Thresholds: base.Merge(nil)}
	require.NoError(t, DecodeThresholds(nil, &s, &s.Thresholds, base))
	assert.Equal(t, base, s.Thresholds, "without a table the shipped limits apply")

	bad := errors.New("unknown key")
	assert.ErrorIs(t, DecodeThresholds(&benchmarks.Env{Settings: func(any) error { return bad }}, &s, &s.Thresholds, base), bad)
}

func TestTallyLibErr(t *testing.T) {
	gone := errors.New("gone")
	ty := Tally{Check: "c", Classify: func(device, what string, err error) (bool, string, string) {
		if errors.Is(err, gone) {
			return true, "Lost", device + " " + what + " lost"
		}
		return false, "Odd", device + " " + what + ": " + err.Error()
	}}
	ty.LibErr("gpu0", "health", errors.New("busy"))
	ty.LibErr("gpu1", "health", gone)
	r := ty.Result("ok")
	assert.Equal(t, benchmarks.StatusFail, r.Status)
	assert.Equal(t, "Lost", r.Reason)
	assert.Equal(t, "gpu1", r.Device)
	assert.Equal(t, "gpu1 health lost", r.Message)
	assert.Equal(t, []benchmarks.Value{{Device: "gpu1", Name: "reachable", Status: benchmarks.StatusFail}}, r.Values)

	plain := Tally{Check: "c"}
	plain.LibErr("", "device count", errors.New("busy"))
	r = plain.Result("ok")
	assert.Equal(t, benchmarks.Result{Check: "c", Status: benchmarks.StatusUnknown, Reason: ReasonLibraryError,
		Message: " device count: busy"}, r)
}
