package nvidia

import (
	"github.com/vigil-hpc/vigil/benchmarks/device"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
)

// The host side of the gemm check's verification of one device at 2048³
// (the default 8192³ costs 16× as much for column sums and cross-check).
// B is all ones so that the exact product is cheap to build: D[i,j] is
// the sum of row i of A.
func BenchmarkVerifyGEMM2048(b *testing.B) {
	const n = 2048
	a := devcheck.GenMatrix(n, n, 1)
	bt := make([]float32, n*n)
	for i := range bt {
		bt[i] = 1
	}
	st := devcheck.NewGEMM(n, n, n, a, bt, outEps(device.BF16))
	d, d2 := make([]float32, n*n), make([]float32, n*n) // D and the swapped product Dᵀ
	for i := 0; i < n; i++ {
		var s float64
		for _, v := range a[i*n : (i+1)*n] {
			s += float64(v)
		}
		for j := 0; j < n; j++ {
			d[i+j*n] = roundTo(device.BF16, s)
			d2[j+i*n] = roundTo(device.BF16, s)
		}
	}
	if err := st.CheckColumnSums(d); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if st.CheckColumnSums(d) != nil || st.CheckCross(d, d2) != nil || st.CheckSamples(d, 512, 1) != nil {
			b.Fatal("verification failed")
		}
	}
}

func BenchmarkEncodeBF16(b *testing.B) {
	x := devcheck.GenMatrix(1024, 1024, 3)
	b.SetBytes(int64(len(x) * 4))
	for i := 0; i < b.N; i++ {
		encode(device.BF16, x)
	}
}

func BenchmarkGenMatrix(b *testing.B) {
	b.SetBytes(1024 * 1024 * 4)
	for i := 0; i < b.N; i++ {
		devcheck.GenMatrix(1024, 1024, uint64(i))
	}
}
