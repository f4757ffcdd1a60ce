package joblog

import "testing"

// TestAttributeLauncherPrefixes: every launcher's prefix places a line on
// the host it proves, and no other: torchrun --tee's "[defaultL]:[rankN]:"
// only through the layout's ranks (a torchrun rank is no srun task id),
// PyTorch's process-group tags, Open MPI's --tag-output and "[host:pid]",
// pdsh's "host: " (DeepSpeed), Ray's "(pid=P, ip=ADDR)" through the nodes'
// addresses, and mpirun's "on node HOST". Lines are real (hosts renamed to
// the job's).
func TestAttributeLauncherPrefixes(t *testing.T) {
	nodes := []string{"gpu01", "gpu02", "gpu03", "gpu04"}
	// torchrun under srun: one task per node, four ranks each.
	torchrun := Layout{Nodes: nodes, Tasks: map[int]string{0: "gpu01", 1: "gpu02", 2: "gpu03", 3: "gpu04"},
		Ranks: map[int]string{}}
	for r := range 16 {
		torchrun.Ranks[r] = nodes[r/4]
	}
	tasksOnly := Layout{Nodes: nodes, Tasks: torchrun.Tasks}
	addrs := Layout{Nodes: nodes, Addrs: map[string]string{"gpu01": "10.0.0.1", "gpu03": "10.0.0.3"}}
	tests := []struct {
		name string
		l    Layout
		line string
		want Source
	}{
		// torchrun --tee 3 --role default: "[default<local rank>]:" before the rank's own tag.
		{"torchrun --tee through the ranks", torchrun,
			"[default0]:[rank12]:[W318 10:00:41.915284135 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=135): Connection reset by peer",
			Source{"gpu04", ByRank}},
		{"torchrun --tee without ranks is no task id", tasksOnly,
			"[default2]:[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered",
			Source{}},
		{"a rank beyond the tasks, without ranks", tasksOnly,
			"[rank12]: Traceback (most recent call last):",
			Source{}},
		// https://github.com/sgl-project/sglang/issues/20859
		{"[PG ID N PG GUID N Rank N]", torchrun,
			`[rank8]:[W318 10:00:41.929037914 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0 Rank 8] Failed to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Connection reset by peer`,
			Source{"gpu03", ByRank}},
		{"[PG ID N PG GUID N(default_pg) Rank N] alone", torchrun,
			"[E ProcessGroupNCCL.cpp:1316] [PG ID 0 PG GUID 0(default_pg) Rank 13] Timeout at NCCL work: 1234, last enqueued NCCL work: 1234, last completed NCCL work: 1233.",
			Source{"gpu04", ByRank}},
		{"[PG N (default_pg) Rank N]", torchrun,
			"[E ProcessGroupNCCL.cpp:1316] [PG 0 (default_pg) Rank 5] Timeout at NCCL work: 1234, last enqueued NCCL work: 1234, last completed NCCL work: 1233.",
			Source{"gpu02", ByRank}},
		// https://github.com/horovod/horovod/issues/1012
		{"Open MPI --tag-output", torchrun,
			"[1,9]<stderr>:[2019-04-13 13:53:31.851506: W horovod/common/operations.cc:588] HorovodBroadcast_dense_1_bias_Momentum_0 [missing ranks: 1]",
			Source{"gpu03", ByMPITag}},
		{"Open MPI --tag-output without ranks is no task id", tasksOnly,
			"[1,1]<stderr>:RuntimeError: boom",
			Source{}},
		// https://github.com/NVIDIA/nccl/issues/230: mpirun's tag after a
		// time stamp, then NCCL's prefix with a source file of NCCL 2.4 (.cu).
		{"NCCL's prefix behind a time stamp and Open MPI's tag, a .cu file", tasksOnly,
			"2019-06-02T16:13:44.884Z: [1,12]<stdout>:gpu04:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local catastrophic error",
			Source{"gpu04", ByNCCLPrefix}},
		{"a .cu file after a host that is no node", tasksOnly,
			"[1,12]<stdout>:gpu09:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local catastrophic error",
			Source{}},
		// https://github.com/NVIDIA/nccl/issues/1029 (pdsh, DeepSpeed's launcher)
		{"pdsh's host prefix", torchrun,
			"gpu02: [rank9]: RuntimeError: CUDA error: an illegal memory access was encountered",
			Source{"gpu02", ByHostPrefix}},
		{"a prefix that is no node", torchrun,
			"Traceback: [rank9]: boom",
			Source{}},
		// https://github.com/ray-project/ray/issues/47759 (a worker on another node: ", ip=ADDR")
		{"Ray's worker prefix with its address", addrs,
			"(RayTrainWorker pid=43515, ip=10.0.0.3) [rank1]: AttributeError: 'Worker' object has no attribute 'core_worker'",
			Source{"gpu03", ByRay}},
		{"Ray's plain worker prefix", addrs,
			"(pid=8760, ip=10.0.0.1) RuntimeError: boom",
			Source{"gpu01", ByRay}},
		// https://github.com/ray-project/ray/issues/29412 (a node's raylet)
		{"Ray's raylet prefix", addrs,
			"(raylet, ip=10.0.0.3) [2022-10-27 16:30:03,850 E 98551 98592] (raylet) agent_manager.cc:134: The raylet exited immediately because the Ray agent failed. The raylet fate shares with the agent. This can happen because the Ray agent was unexpectedly killed or failed. See `dashboard_agent.log` for the root cause.",
			Source{"gpu03", ByRay}},
		{"Ray's address that is no node's", addrs,
			"(RayTrainWorker pid=43515, ip=10.9.9.9) RuntimeError: boom",
			Source{}},
		{"Ray's local worker names no address", addrs,
			"(RayTrainWorker pid=43515) [rank1]: AttributeError: 'Worker' object has no attribute 'core_worker'",
			Source{}},
		// https://github.com/open-mpi/ompi/issues/2661
		{"mpirun's signalled rank", torchrun,
			"mpirun noticed that process rank 0 with PID 21183 on node gpu01 exited on signal 9 (Killed).",
			Source{"gpu01", ByMPIRun}},
		{"mpirun's node by address", addrs,
			"mpirun noticed that process rank 3 with PID 21183 on node 10.0.0.3 exited on signal 9 (Killed).",
			Source{"gpu03", ByMPIRun}},
		// https://github.com/open-mpi/ompi/issues/9797
		{"Open MPI's [host:pid]", torchrun,
			"[gpu02:04113] *** Process received signal ***",
			Source{"gpu02", ByMPIHost}},
		// https://github.com/open-mpi/ompi/pull/7735: the peer a line names is not its host.
		{"Open MPI's peer host is no source", torchrun,
			"  Peer host:  gpu03",
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
