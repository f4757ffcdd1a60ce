package joblog

import "testing"

// TestAttribute: each line is charged to the host whose process printed
// it, from the line's own text and the step's layout, and never to the
// node that read the job's output. The formats are those of real jobs
// (NCCL WARN lines with a source location and a timestamp before them,
// PyTorch's "[rankN]:", srun's --label and its error line, torchrun's
// failure summary).
func TestAttribute(t *testing.T) {
	l := Layout{Nodes: []string{"gpu01", "gpu02", "gpu03", "gpu04"},
		Tasks: map[int]string{0: "gpu01", 1: "gpu02", 2: "gpu03", 3: "gpu04"}}
	byRank := Layout{Nodes: l.Nodes, Ranks: map[int]string{0: "gpu01", 1: "gpu01", 2: "gpu03", 3: "gpu03"}}
	tests := []struct {
		name string
		l    Layout
		line string
		want Source
	}{
		{"NCCL WARN with a source location", l,
			"gpu02:984:1357 [4] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.3<52318> with error 12, opcode 1, len 0, vendor err 129",
			Source{"gpu02", ByNCCLPrefix}},
		{"NCCL WARN behind a timestamp", l,
			"2024-05-01 10:00:00 gpu03:2231:2290 [0] misc/ibvwrap.cc:291 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out",
			Source{"gpu03", ByNCCLPrefix}},
		{"NCCL INFO without a location, behind srun's label", l,
			"1: gpu02:984:984 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.2<0>",
			Source{"gpu02", ByNCCLPrefix}},
		{"a fully qualified host", l,
			"gpu02.cluster.example:984:1357 [4] NCCL WARN NET/Socket : peer 10.0.0.4<45678> message truncated",
			Source{"gpu02", ByNCCLPrefix}},
		{"the peer a socket error names is not the line's host", l,
			"gpu01:100:200 [0] NCCL WARN socketProgress: Connection closed by remote peer gpu03<52318>",
			Source{"gpu01", ByNCCLPrefix}},
		{"a host that is not one of the job's nodes", l,
			"gpu09:1:1 [0] NCCL WARN Something",
			Source{}},
		{"PyTorch's [rankN] through one task per rank", l,
			"[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.",
			Source{"gpu04", ByRank}},
		{"PyTorch's [rankN] through the ranks of torchrun per node", byRank,
			"[rank2]: RuntimeError: CUDA error: uncorrectable ECC error encountered",
			Source{"gpu03", ByRank}},
		{"PyTorch's own [Rank N] tag, without the launcher's prefix", byRank,
			"[E ProcessGroupNCCL.cpp:916] [Rank 2] NCCL watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered",
			Source{"gpu03", ByRank}},
		{"PyTorch's [PG N Rank M] tag", byRank,
			"[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Timeout at NCCL work: 1234, last enqueued NCCL work: 1234, last completed NCCL work: 1233.",
			Source{"gpu01", ByRank}},
		{"srun's error line names the host", l,
			"srun: error: gpu03: task 2: Exited with exit code 1",
			Source{"gpu03", BySrunError}},
		{"srun's error line for several tasks", l,
			"srun: error: gpu04: tasks 3,7: Killed",
			Source{"gpu04", BySrunError}},
		{"srun --label's task id", l,
			"2: RuntimeError: CUDA error: an illegal memory access was encountered",
			Source{"gpu03", ByTask}},
		{"torchrun's failure summary names the host", l,
			"  host      : gpu03",
			Source{"gpu03", ByTorchrun}},
		{"a CUDA error with no prefix is job-level", l,
			"RuntimeError: CUDA error: uncorrectable ECC error encountered",
			Source{}},
		{"a traceback is job-level", l,
			"Traceback (most recent call last):",
			Source{}},
		{"a rank the layout does not know", byRank,
			"[rank7]: RuntimeError: boom",
			Source{}},
		{"no layout, no rank attribution", Layout{Nodes: l.Nodes},
			"[rank3]: RuntimeError: boom",
			Source{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Attribute(tt.line, tt.l); got != tt.want {
				t.Errorf("Attribute(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
		})
	}
}

// TestTaskExitLine: srun's word that a task ended badly is evidence, and
// names its host.
func TestTaskExitLine(t *testing.T) {
	for _, line := range []string{
		"srun: error: gpu03: task 2: Exited with exit code 1",
		"srun: error: gpu04: tasks 3,7: Killed",
	} {
		m, ok := LineIn("", line)
		if !ok || m.Kind != KindTaskExit {
			t.Errorf("LineIn(%q) = %+v, %v; want a task exit", line, m, ok)
		}
	}
	if m, ok := LineIn("", "srun: error: Unable to create step for job 7: Job/step already completing or completed"); ok && m.Kind == KindTaskExit {
		t.Errorf("a step error is no task exit: %+v", m)
	}
}
