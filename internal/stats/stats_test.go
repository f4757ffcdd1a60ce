package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 2, 3}, 2.5},
		{[]float64{5, 5, 5, 1}, 5},
		{[]float64{-1, 7, 7, 7, 2, 2}, 4.5},
	}
	for _, c := range cases {
		in := slices.Clone(c.in)
		if got := Median(in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("Median modified its input: %v", in)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}

// The selection must agree with sorting on random input, duplicates included.
func TestMedianInPlaceAgreesWithSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 200; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(n/3 + 1))
		}
		s := slices.Sorted(slices.Values(v))
		want := s[n/2]
		if n%2 == 0 {
			want = (s[n/2-1] + s[n/2]) / 2
		}
		if got := MedianInPlace(v); got != want {
			t.Fatalf("n=%d: MedianInPlace = %v, want %v", n, got, want)
		}
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.5, 3}, {1, 5}, {0.25, 2}, {0.1, 1.4}, {-1, 1}, {2, 5}} {
		if got := Quantile(s, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if Quantile([]float64{7}, 0.3) != 7 || !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile of one value or none")
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	for _, c := range []struct{ p, want float64 }{{99, 5}, {50, 3}, {20, 1}, {21, 2}, {0, 1}, {100, 5}} {
		if got := Percentile(v, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile(nil) is not NaN")
	}
}

func BenchmarkMedianInPlace(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	v := make([]float64, 1024)
	c := make([]float64, len(v))
	for i := range v {
		v[i] = r.Float64()
	}
	for b.Loop() {
		copy(c, v)
		MedianInPlace(c)
	}
}
