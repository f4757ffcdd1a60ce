package decide

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
)

// BenchmarkFleetCount is what a failing run adds for the guard and the
// drain notices on a 4096-node cluster: parse one `scontrol show node -o`
// (real 24.11 lines, one node in ten drained by vigil for gemm) and count
// the nodes drained for the check within the hour.
func BenchmarkFleetCount(b *testing.B) {
	line, err := os.ReadFile("../../slurm/testdata/scontrol/24.11/node-idle.txt")
	if err != nil {
		b.Fatal(err)
	}
	line = bytes.TrimSpace(line)
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.Local)
	var out bytes.Buffer
	for i := range 4096 {
		l := bytes.Replace(line, []byte("NodeName=qmgq1 "), fmt.Appendf(nil, "NodeName=gpu%04d ", i), 1)
		if i%10 == 0 {
			l = bytes.Replace(l, []byte("State=IDLE "), []byte("State=IDLE+DRAIN "), 1)
			l = fmt.Appendf(l, " Reason=vigil: gemm GEMMBelowThreshold gpu3 [root@%s]", now.Add(-time.Duration(i)*time.Second).Format("2006-01-02T15:04:05"))
		}
		out.Write(l)
		out.WriteByte('\n')
	}
	b.SetBytes(int64(out.Len()))
	b.ReportAllocs()
	for b.Loop() {
		fleet, err := slurm.ParseNodes(out.Bytes())
		if err != nil || len(fleet) != 4096 {
			b.Fatalf("%d nodes, %v", len(fleet), err)
		}
		if got := DrainedFor(fleet, "gemm", "self", now, time.Hour); len(got) != 361 {
			b.Fatalf("%d drained for gemm within the hour, want 361 (0 s to 3600 s ago)", len(got))
		}
	}
}
