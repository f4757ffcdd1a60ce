package devcheck

import "fmt"

// CollOp is a collective operation.
type CollOp string

// Collectives.
const (
	AllReduce CollOp = "allreduce"
	AllGather CollOp = "allgather"
	AllToAll  CollOp = "alltoall"
)

// Bandwidths with the nccl-tests definitions (PERFORMANCE.md in
// NVIDIA/nccl-tests), which HCCL's hccl_test reports alike: S is the size
// nccl-tests prints for the operation, t the time of one operation.
//
//	algbw = S / t
//	all-reduce:             busbw = algbw × 2(n−1)/n   (S: each rank's buffer)
//	all-gather, all-to-all: busbw = algbw × (n−1)/n    (S: the gathered buffer;
//	                                                    each rank's send buffer)

// AlgBW returns algbw in GB/s (1e9 B/s) for bytes moved in seconds.
func AlgBW(bytes, seconds float64) float64 { return bytes / seconds / 1e9 }

// BusFactor is busbw/algbw for op over n ranks (0 for fewer than 2).
func BusFactor(op CollOp, n int) float64 {
	if n < 2 {
		return 0
	}
	f := float64(n-1) / float64(n)
	if op == AllReduce {
		return 2 * f
	}
	return f
}

// SizeBytes is the nccl-tests size S in bytes of op for count float32
// elements in each rank's send buffer over n ranks.
func SizeBytes(op CollOp, count, n int) float64 {
	if op == AllGather {
		return float64(count) * 4 * float64(n)
	}
	return float64(count) * 4
}

// CollInputs makes the per-rank send buffers of a verification run: small
// integers, so that sums over up to 256 ranks are exact in float32.
func CollInputs(n, count int) [][]float32 {
	in := make([][]float32, n)
	for r := range in {
		in[r] = make([]float32, count)
		for i := range in[r] {
			in[r][i] = float32((i*7 + r*13 + 1) % 61)
		}
	}
	return in
}

// CollExpected is what each rank must receive from op for the send
// buffers in (all of one length; for all-to-all a multiple of len(in)).
// It returns nil for an operation it does not know.
func CollExpected(op CollOp, in [][]float32) [][]float32 {
	n := len(in)
	count := len(in[0])
	out := make([][]float32, n)
	switch op {
	case AllReduce:
		sum := make([]float32, count)
		for _, b := range in {
			for i, v := range b {
				sum[i] += v
			}
		}
		for r := range out {
			out[r] = sum
		}
	case AllGather:
		all := make([]float32, 0, n*count)
		for _, b := range in {
			all = append(all, b...)
		}
		for r := range out {
			out[r] = all
		}
	case AllToAll:
		c := count / n
		for r := range out {
			out[r] = make([]float32, 0, count)
			for j := 0; j < n; j++ {
				out[r] = append(out[r], in[j][r*c:(r+1)*c]...)
			}
		}
	default:
		return nil
	}
	return out
}

// VerifyCollective compares what each rank received (got) with what op
// must deliver for the send buffers in, exactly. names[r] is how messages
// name rank r's device ("gpu3").
func VerifyCollective(op CollOp, names []string, in, got [][]float32) error {
	want := CollExpected(op, in)
	if want == nil {
		return fmt.Errorf("unsupported collective %s", op)
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d output buffers, want %d", len(got), len(want))
	}
	for r := range want {
		if len(got[r]) != len(want[r]) {
			return fmt.Errorf("%s: %d elements received, want %d", names[r], len(got[r]), len(want[r]))
		}
		bad, first := 0, -1
		for i := range want[r] {
			if got[r][i] != want[r][i] {
				if first < 0 {
					first = i
				}
				bad++
			}
		}
		if bad > 0 {
			return fmt.Errorf("%s: %d of %d elements wrong, first [%d] = %g, want %g", names[r], bad, len(want[r]), first, got[r][first], want[r][first])
		}
	}
	return nil
}
