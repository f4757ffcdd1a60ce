package joblog

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/kmsg/kmsgtest"
	"github.com/vigil-hpc/vigil/internal/linerules"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// emitterLine is a line an emitter prints and what it says through the
// package's public API: LineIn's kind, fault, rule and peer, and the host
// Attribute gives it over emitterLayout. A kernel line's host is the node
// whose kernel log the watcher reads, never one the line names: host is
// "" for them.
type emitterLine struct {
	line     string
	stream   string // "" (the job's output) or trace.StreamKmsg
	rule     string // the shipped rule that reads it, "" for none
	kind     Kind   // "" for a line that is no evidence
	fault    bool
	host     string // Attribute(line, emitterLayout).Host
	peer     string // Match.Peer
	peerHost string // the node the peer resolves to over emitterLayout
}

// emitter is a program whose failure strings the shipped rules read: its
// rules, and its lines (every example of its rules, and lines that show
// what the rules leave alone).
type emitter struct {
	name  string
	rules []string
	lines []emitterLine
}

// emitterLayout is a job over the hosts the examples name; the peers'
// addresses are those of the reports.
var emitterLayout = Layout{
	Nodes: []string{"gpu01", "gpu02", "gpu03", "gpu04", "ubuntu", "node1", "host01", "proton", "JXQ-23-236-6",
		"ip-172-31-1-32", "tiger-i23g11", "orion-01-05", "n122-164-108", "A100-GPU-50"},
	Addrs: map[string]string{"gpu02": "192.168.70.92", "gpu03": "127.0.0.1", "gpu04": "10.0.0.2"},
	Ranks: map[int]string{0: "gpu01", 1: "gpu01", 2: "gpu02", 3: "gpu02"},
}

const kmsgStream = trace.StreamKmsg

// emitters are the shipped rules by the program that prints their lines.
var emitters = []emitter{
	{"aws-ofi-nccl", []string{"ofi-request-completed-with-error"}, []emitterLine{
		{line: "[1,13]<stdout>:gpu02:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb944701b8 completed with error. RC: 20. Error: unknown error. Completed length: 0, Request: { buffer_index: 255, dev: 1, size: 0, state: CREATED, direction: SEND }",
			rule: "ofi-request-completed-with-error", kind: KindNCCLNet},
		{line: "NET/OFI Selected Provider is efa"},
	}},
	{"abseil-failure-signal-handler", []string{"abseil-fatal-signal"}, []emitterLine{
		{line: "(RayWorkerWrapper pid=376235, ip=10.0.0.2) *** SIGSEGV received at time=1745722347 on cpu 48 ***", rule: "abseil-fatal-signal", kind: KindTaskExit, host: "gpu04"},
		{line: "*** SIGTERM received at time=1739523108 on cpu 0 ***"},
	}},
	{"cpython", []string{"traceback"}, []emitterLine{
		{line: "[rank2]: Traceback (most recent call last):", rule: "traceback", kind: KindTraceback, host: "gpu02"},
		{line: "Traceback (most recent call last):", rule: "traceback", kind: KindTraceback},
	}},
	{"cuda-runtime", []string{"uncorrectable-ecc", "cuda-error"}, []emitterLine{
		// The application's words: the device is at fault, the line names no host.
		{line: "RuntimeError: CUDA error: uncorrectable ECC error encountered", rule: "uncorrectable-ecc", kind: KindECC, fault: true},
		{line: "F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to fetch value instead of handling error Internal: failed initializing StreamExecutor for CUDA device ordinal 0: Internal: failed call to cuDevicePrimaryCtxRetain: CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered",
			rule: "uncorrectable-ecc", kind: KindECC, fault: true},
		{line: "RuntimeError: CUDA error: an illegal memory access was encountered", rule: "cuda-error", kind: KindCUDAError},
		{line: "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 38.00 MiB (GPU 0; 4.00 GiB total capacity; 3.41 GiB already allocated; 0 bytes free; 3.44 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
			rule: "cuda-error", kind: KindCUDAError},
		{line: "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered", rule: "cuda-error", kind: KindCUDAError, host: "gpu02"},
	}},
	{"nvidia-driver", []string{"fallen-off-the-bus"}, []emitterLine{
		{line: "NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.", stream: kmsgStream, rule: "fallen-off-the-bus", kind: KindXID, fault: true},
		{line: "NVRM: fallen off the bus and is not responding to commands.", stream: kmsgStream, rule: "fallen-off-the-bus", kind: KindXID, fault: true},
		// The same words in the job's output are no driver's line.
		{line: "NVRM: GPU 0000:09:00.0: GPU has fallen off the bus."},
	}},
	{"kernel-pcie-aer", []string{"aer-gpu-no-recovery"}, []emitterLine{
		{line: "nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)", stream: kmsgStream, rule: "aer-gpu-no-recovery", kind: KindXID, fault: true},
		// The GPU's audio function, and the root port's report naming a
		// device only by its address: no GPU's fault.
		{line: "snd_hda_intel 0000:03:00.1: AER: can't recover (no error_detected callback)", stream: kmsgStream},
		{line: "pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received: 0000:00:03.0", stream: kmsgStream},
		{line: "nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)"},
	}},
	{"nccl", []string{"nccl-cuda-failure", "nccl-cuda-calloc-failed", "nccl-retrying", "nccl-ib-port-down", "nccl-ib-completion-error", "nccl-socket-reset",
		"nccl-socket-unreachable", "nccl-socket-connect-failed", "nccl-socket-timed-out", "nccl-nvls-bind-failed", "nccl-ib-dmabuf-reg-failed", "nccl-socket-closed", "nccl-mismatched-collective", "nccl-service-thread-closed"}, []emitterLine{
		{line: "gpu01:3063028:3066152 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 6291456 bytes", rule: "nccl-cuda-calloc-failed", kind: KindCUDAError, host: "gpu01"},
		{line: "gpu02: Failed to CUDA calloc async 1920 bytes", rule: "nccl-cuda-calloc-failed", kind: KindCUDAError, host: "gpu02"},
		{line: "NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 113(No route to host) errno 115(Operation now in progress)",
			rule: "nccl-socket-unreachable", kind: KindNCCLNet, peer: "10.0.0.4"},
		{line: "gpu02:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.2<56849> returned 113(No route to host) errno 115(Operation now in progress)",
			rule: "nccl-socket-unreachable", kind: KindNCCLNet, host: "gpu02", peer: "10.0.0.2", peerHost: "gpu04"},
		{line: "socket.c:485 NCCL WARN socketStartConnect: Connect to 10.0.0.82<38455> failed : Software caused connection abort",
			rule: "nccl-socket-connect-failed", kind: KindNCCLNet, peer: "10.0.0.82"},
		{line: "[15]gpu02:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from 10.0.0.3<41468> failed : Connection timed out",
			rule: "nccl-socket-timed-out", kind: KindNCCLNet, host: "gpu02", peer: "10.0.0.3"},
		{line: "gpu02:4962:5097 [1] transport/nvls.cc:223 NCCL WARN Cuda failure 999 'unknown error", rule: "nccl-nvls-bind-failed", kind: KindXID, fault: true, host: "gpu02"},
		// A refused connection is a peer not listening yet: no evidence.
		{line: "NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 111(Connection refused) errno 115(Operation now in progress)", kind: KindNCCLWarn},
		{line: "gpu01:104934:104934 [1] init.cc:204 NCCL WARN Cuda failure 'an illegal memory access was encountered'", rule: "nccl-cuda-failure", kind: KindCUDAError, host: "gpu01"},
		{line: "n122-164-108:7400:7642 [1] include/alloc.h:125 NCCL WARN Cuda failure 700 'an illegal memory access was encountered'", rule: "nccl-cuda-failure", kind: KindCUDAError, host: "n122-164-108"},
		{line: "NCCL INFO Call to connect returned Connection refused, retrying", rule: "nccl-retrying", kind: KindNCCLRetry},
		{line: "gpu01:1:2 [0] misc/socket.cc:582 NCCL WARN socketStartConnect: connect to 10.0.0.2<1> returned Connection refused, exceeded error retry count after 35 attempts",
			kind: KindNCCLWarn, host: "gpu01"},
		{line: "gpu01:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error", rule: "nccl-ib-port-down", kind: KindNCCLNet, host: "gpu01"},
		{line: "gpu02:1:2 [0] transport/net_ib.cc:171 NCCL WARN NET/IB : mlx5_0:1 Got async error event: port error", rule: "nccl-ib-port-down", kind: KindNCCLNet, host: "gpu02"},
		{line: "gpu04:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local catastrophic error", rule: "nccl-ib-port-down", kind: KindNCCLNet, host: "gpu04"},
		{line: "gpu01:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fd00::ff22 remoteGidsfd00::ff1f",
			rule: "nccl-ib-completion-error", kind: KindNCCLNet, host: "gpu01", peer: "10.0.0.2", peerHost: "gpu04"},
		{line: "what(): NCCL error: remote process exited or there was a network error, NCCL version 2.14.3 ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely. Last error: NET/IB : Got completion from peer 10.0.0.2<39138> with error 12, opcode 0, len 0, vendor err 129",
			rule: "nccl-ib-completion-error", kind: KindNCCLNet, peer: "10.0.0.2", peerHost: "gpu04"},
		{line: "gpu02:73076:73185 [4] transport/net_ib.cc:1238 NCCL WARN NET/IB : Got completion from peer gpu01<37948> with error 12, opcode 2, len 1, vendor err 129",
			rule: "nccl-ib-completion-error", kind: KindNCCLNet, host: "gpu02", peer: "gpu01", peerHost: "gpu01"},
		{line: "socketProgressOpt: Call to recv from 172....<33759> failed : Connection reset by peer", rule: "nccl-socket-reset", kind: KindNCCLNet, peer: "172...."},
		{line: "gpu01 [5] misc/socket.cc:46 NCCL WARN socketProgressOpt: Call to send to 10.0.0.2<52905> failed : Connection reset by peer",
			rule: "nccl-socket-reset", kind: KindNCCLNet, peer: "10.0.0.2", peerHost: "gpu04"},
		{line: "misc/ibvwrap.cc:288 NCCL WARN Call to ibv_reg_dmabuf_mr failed with error Operation not supported", rule: "nccl-ib-dmabuf-reg-failed", kind: KindNCCLNet},
		{line: "ubuntu:39964:40044 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node1<57557>",
			rule: "nccl-socket-closed", kind: KindNCCLNet, host: "ubuntu", peer: "node1", peerHost: "node1"},
		{line: "init.cc:1247 NCCL WARN Mismatched collective detected, please check your collective calls at and around rank 39. You can use NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=COLL to see the collective logs",
			rule: "nccl-mismatched-collective", kind: KindMismatch},
		// The proxy's service thread: a local rank of the printing host
		// closed its connection. The peer is that local rank, never a
		// host (no node resolves it); the warning that the socket could
		// not be read is no such line.
		{line: "A100-GPU-50:343:1213 [5] NCCL INFO [Service thread] Connection closed by localRank 7",
			rule: "nccl-service-thread-closed", kind: KindPeerClosed, host: "A100-GPU-50", peer: "localRank 7"},
		{line: "gpu01:1:2 [0] proxy.cc:1874 NCCL WARN [Service thread] Could not receive type from localRank 7, res=3, closed=1",
			kind: KindNCCLWarn, host: "gpu01"},
		// A CUDA failure NCCL reports at INFO it ignores and goes on
		// (checks.h's CUDACHECKIGNORE): no evidence; a retry is read, as
		// no evidence either.
		{line: "gpu01:1:2 [0] NCCL INFO Cuda failure 2 'out of memory'", host: "gpu01"},
	}},
	{"slurm-srun", []string{"srun-task-exit", "srun-task-oom", "srun-node-failure"}, []emitterLine{
		{line: "srun: error: Node failure on jean-zay-iam37", rule: "srun-node-failure", kind: KindPeerClosed, peer: "jean-zay-iam37"},
		{line: "srun: error: Node failure on gpu02", rule: "srun-node-failure", kind: KindPeerClosed, peer: "gpu02", peerHost: "gpu02"},
		// srun signalled from outside (a cancel), not a task's failure.
		{line: "srun: forcing job termination", kind: KindCancelled},
		{line: "srun: error: gpu03: task 2: Exited with exit code 1", rule: "srun-task-exit", kind: KindTaskExit, host: "gpu03"},
		{line: "srun: error: gpu04: tasks 3,7: Killed", rule: "srun-task-exit", kind: KindTaskExit, host: "gpu04"},
		{line: "srun: error: orion-01-05: task 289: Bus error", rule: "srun-task-exit", kind: KindTaskExit, host: "orion-01-05"},
		{line: "srun: error: tiger-i23g11: task 0: Out Of Memory", rule: "srun-task-oom", kind: KindOOMKill, host: "tiger-i23g11"},
		{line: "srun: error: gpu03: tasks 8-15: Out Of Memory", rule: "srun-task-oom", kind: KindOOMKill, host: "gpu03"},
		{line: "srun: error: Unable to create step for job 7: Job/step already completing or completed"},
	}},
	{"slurm-slurmstepd", []string{"slurmstepd-oom-kill"}, []emitterLine{
		{line: "slurmstepd: error: Detected 1 oom-kill event(s) in step 3955284.0 cgroup. Some of your processes may have been killed by the cgroup out-of-memory handler.",
			rule: "slurmstepd-oom-kill", kind: KindOOMKill},
		{line: "slurmstepd: error: Detected 1 oom_kill event in StepId=42.0. Some of the step tasks have been OOM Killed.", rule: "slurmstepd-oom-kill", kind: KindOOMKill},
	}},
	{"torch-elastic", []string{"torchrun-child-exit", "torchrun-child-signal", "torchrun-exit-barrier"}, []emitterLine{
		// The agent's exit barrier at a job's normal end: no failure.
		{line: "E1202 16:06:45.876000 28574 torch/distributed/elastic/agent/server/api.py:954] Error waiting on exit barrier. Elapsed: 0.010487079620361328 seconds",
			rule: "torchrun-exit-barrier"},
		{line: "E1202 16:06:45.876000 28574 torch/distributed/elastic/agent/server/api.py:954] Traceback (most recent call last):", rule: "torchrun-exit-barrier"},
		{line: "  exitcode  : -9 (pid: 14750)", rule: "torchrun-child-exit", kind: KindTaskExit},
		{line: "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 (pid: 16) of binary: /opt/conda/bin/python",
			rule: "torchrun-child-exit", kind: KindTaskExit},
		{line: "traceback : signal 9 (SIGKILL) received by PID 36071", rule: "torchrun-child-signal", kind: KindTaskExit},
		{line: "  traceback : Signal 6 (SIGABRT) received by PID 16", rule: "torchrun-child-signal", kind: KindTaskExit},
		// The summary's host line names the host (ByTorchrun).
		{line: "  host      : gpu03", host: "gpu03"},
	}},
	{"torch-c10d", []string{"c10d-collective-mismatch", "c10d-monitored-barrier", "c10d-desync-lagging-ranks", "c10d-nccl-unhandled-cuda-error", "c10d-watchdog-exit-cuda-shutdown", "c10d-store-connect-failed"}, []emitterLine{
		// A rank that could not reach the store to meet its peers.
		{line: "gpu02: torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of (192.168.121.122, 1040). The client socket has failed to connect to 192.168.121.122:1040 (errno: 113 - No route to host).",
			rule: "c10d-store-connect-failed", kind: KindRendezvous, host: "gpu02"},
		{line: "The client socket has failed to connect to any network address of ( x.x.x.x, 48247)", rule: "c10d-store-connect-failed", kind: KindRendezvous},
		{line: "[I socket.cpp:787] [c10d] The client socket will attempt to connect to an IPv4 or IPv6 address of (10.0.0.1, 29500)."},
		{line: "[rank7]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.17.1",
			rule: "c10d-nccl-unhandled-cuda-error", kind: KindCUDAError},
		{line: "Test NCCL failure common.cu:497 'unhandled cuda error'"},
		// A process's normal exit: its CUDA error is the driver unloading.
		{line: "[I628 20:15:42.000370615 ProcessGroupNCCL.cpp:1501] [PG  Rank 1] main process destroyed cuda before watchdog loop exited, terminating watchdog. (Watchdog caught exception: CUDA error: driver shutting down",
			rule: "c10d-watchdog-exit-cuda-shutdown"},
		{line: "             [7] finished collective #182, but didn't join collective #183 (count from 1)", rule: "c10d-desync-lagging-ranks", kind: KindMismatch},
		{line: "\t   - [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] joined but didn't finish collective #730 (count from 1)", rule: "c10d-desync-lagging-ranks", kind: KindMismatch},
		// The snapshot of the ranks' latest states lists every rank: no accusation.
		{line: "             [7] finished ALLREDUCE"},
		{line: "             [0, 1, 2] started ALLREDUCE"},
		{line: "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=0, OpType=_ALLGATHER_BASE, TensorShape=[359, 1, 1435, 16]), but Rank 2 is running collective: CollectiveFingerPrint(SequenceNumber=0, OpType=_ALLGATHER_BASE, TensorShape=[359, 1, 1436, 16]).",
			rule: "c10d-collective-mismatch", kind: KindMismatch},
		// Rank 0 prints who failed the barrier: the line is rank 0's.
		{line: "RuntimeError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms", rule: "c10d-monitored-barrier", kind: KindMismatch, host: "gpu01"},
		{line: "[Rank 0]: Ranks 2, 5 failed to pass monitoredBarrier in 30000 ms", rule: "c10d-monitored-barrier", kind: KindMismatch, host: "gpu01"},
	}},
	{"gloo", []string{"gloo-connection-closed", "gloo-connection-reset", "gloo-connect-full-mesh-failed"}, []emitterLine{
		{line: "(RayWorkerWrapper pid=1061) ERROR 02-12 02:14:01 worker_base.py:574] RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
			rule: "gloo-connect-full-mesh-failed", kind: KindNCCLNet},
		{line: "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:10895",
			rule: "gloo-connection-closed", kind: KindPeerClosed, peer: "127.0.0.1", peerHost: "gpu03"},
		{line: "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [192.168.70.92]:25266: Connection reset by peer",
			rule: "gloo-connection-reset", kind: KindPeerClosed, peer: "192.168.70.92", peerHost: "gpu02"},
		// The peer is accused; the printing rank's host comes from its own prefix.
		{line: "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Read error [192.168.70.92]:25266: Connection reset by peer",
			rule: "gloo-connection-reset", kind: KindPeerClosed, host: "gpu01", peer: "192.168.70.92", peerHost: "gpu02"},
	}},
	{"kernel-oom-killer", []string{"oom-killer"}, []emitterLine{
		{line: "Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0",
			stream: kmsgStream, rule: "oom-killer", kind: KindOOMKill},
		{line: "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice/user-1000.slice/user@1000.service,task=python,pid=698405,uid=1000",
			stream: kmsgStream, rule: "oom-killer", kind: KindOOMKill},
		{line: "Memory cgroup out of memory: Killed process 63214 (uwsgi) total-vm:3149468kB, anon-rss:164992kB, file-rss:52176kB, shmem-rss:92kB, UID:0 pgtables:1372kB oom_score_adj:986",
			stream: kmsgStream, rule: "oom-killer", kind: KindOOMKill},
		{line: "oom_reaper: reaped process 698405 (python), now anon-rss:0kB, file-rss:68664kB, shmem-rss:53172kB", stream: kmsgStream},
	}},
	{"kernel-hung-task", []string{"hung-task"}, []emitterLine{
		{line: "INFO: task strat1_sim:78808 blocked for more than 120 seconds.", stream: kmsgStream, rule: "hung-task", kind: KindHungTask},
	}},
	{"kernel-nfs-client", []string{"nfs-not-responding"}, []emitterLine{
		{line: "nfs: server ease not responding, still trying", stream: kmsgStream, rule: "nfs-not-responding", kind: KindNFS},
		{line: "nfs: server ease OK", stream: kmsgStream},
	}},
	{"kernel-mlx5", []string{"mlx5-health-compromised"}, []emitterLine{
		{line: "mlx5_core 0000:5e:00.0: device's health compromised - reached miss count", stream: kmsgStream, rule: "mlx5-health-compromised", kind: KindNCCLNet},
		{line: "mlx5_core 0000:5e:00.0: irisc_index 0", stream: kmsgStream},
	}},
	{"lustre-client", []string{"lustre-connection-lost"}, []emitterLine{
		{line: "Lustre: no2zxbmv-MDT0000-mdc-000000001785e248: Connection to no2zxbmv-MDT0000 (at 10.0.47.232@tcp) was lost; in progress operations using this service will wait for recovery to complete",
			stream: kmsgStream, rule: "lustre-connection-lost", kind: KindNFS},
	}},
	{"prrte-mpirun", []string{"mpirun-rank-signalled"}, []emitterLine{
		{line: "mpirun noticed that process rank 0 with PID 21183 on node host01 exited on signal 9 (Killed).", rule: "mpirun-rank-signalled", kind: KindTaskExit, host: "host01"},
		{line: "mpiexec noticed that process rank 0 with PID 10313 on node proton exited on", rule: "mpirun-rank-signalled", kind: KindTaskExit, host: "proton"},
	}},
	{"openmpi", []string{"ompi-process-received-signal", "ompi-peer-disconnected", "ompi-peer-hung-up", "ompi-mpi-error-fatal"}, []emitterLine{
		{line: "[gpu01:21445] *** An error occurred in MPI_Send", rule: "ompi-mpi-error-fatal", kind: KindTraceback, host: "gpu01"},
		{line: "[gpu01:21445] *** reported by process [139981018365953,21474836480]"},
		{line: "[JXQ-23-236-6:04113] *** Process received signal ***", rule: "ompi-process-received-signal", kind: KindTaskExit, host: "JXQ-23-236-6"},
		{line: "  Peer host:  ip-172-31-1-32", rule: "ompi-peer-disconnected", kind: KindPeerClosed, peer: "ip-172-31-1-32", peerHost: "ip-172-31-1-32"},
		{line: "An MPI communication peer process has unexpectedly disconnected.  This", rule: "ompi-peer-hung-up", kind: KindPeerClosed},
	}},
	{"horovod", []string{"horovod-stalled-ranks", "horovod-missing-rank-tensors", "horovod-stall-warning"}, []emitterLine{
		{line: "HorovodBroadcast_fully_connected_weights_0 [missing ranks: 0]", rule: "horovod-stalled-ranks", kind: KindMismatch},
		{line: "DistributedAdamOptimizer_Allreduce/HorovodAllreduce_gradients_0 [missing ranks: 1, 3]", rule: "horovod-stalled-ranks", kind: KindMismatch},
		{line: "1: [DistributedGradientTape_Allreduce/cond_163/then/_1304/DistributedGradientTape_Allreduce/cond_163/HorovodAllreduce_AddN_103_0, DistributedGradientTape_Allreduce/cond_164/HorovodAllreduce_gradient_0]",
			rule: "horovod-missing-rank-tensors", kind: KindMismatch},
		{line: " WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 seconds.",
			rule: "horovod-stall-warning", kind: KindMismatch},
	}},
	{"cann-runtime", []string{"ascend-device-lost-heartbeat"}, []emitterLine{
		{line: "        Device[0] lost heartbeat.[FUNC:SyncTask][FILE:direct_hwts_engine.cc][LINE:407]", rule: "ascend-device-lost-heartbeat", kind: KindNPUError, fault: true},
		{line: "        rtDeviceSynchronizeWithTimeout execution failed, reason=lost heartbeat[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:65]"},
	}},
	{"mindspore-msrun", []string{"msrun-worker-exit"}, []emitterLine{
		{line: "[WARNING] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:12.444.000 [mindspore/parallel/cluster/process_entity/_api.py:318] There's worker exits with exception, kill all other workers.",
			rule: "msrun-worker-exit", kind: KindTaskExit},
		{line: "[WARNING] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.721.000 [mindspore/parallel/cluster/process_entity/_api.py:334] Analyzing exception log..."},
	}},
	{"hccl", []string{"hccl-transport-init", "hccl-connect-timeout", "hccl-roce-error-cqe"}, []emitterLine{
		{line: "(VllmWorker TP0 pid=975) ERROR 09-04 09:44:06 [multiproc_executor.py:596]         Transport init error. Reason: [Create][DestLink]Create Dest error! creakLink para:rank[0]-localUserrank[0]-localIpAddr[192.168.1.3], dst_rank[8]-remoteUserrank[8]-remote_ip_addr[192.168.1.4]",
			rule: "hccl-transport-init", kind: KindNCCLNet},
		{line: "[rank8]:[E313 06:55:05.872961040 compiler_depend.ts:1693] [Rank 1] HCCL watchdog thread terminated with exception: [PID: 222] 2026-03-13-06:55:05.267.372 Execution_Error_ROCE_CQE(EI0013): An error CQE occurred during operator execution. Local information: server xx.xx.xx.199, device ID 0, device IP 10.20.10.9. Peer information: server xx.xx.xx.195, device ID 0, device IP 10.20.10.5.",
			rule: "hccl-roce-error-cqe", kind: KindNCCLNet, peer: "xx.xx.xx.195"},
		{line: "[rank8]:[E313 06:55:05.872961040 compiler_depend.ts:1693] [Rank 1] HCCL watchdog thread terminated with exception: [PID: 222] 2026-03-13-06:55:05.267.372 Execution_Error_ROCE_CQE(EI0013): An error CQE occurred during operator execution. Local information: server 10.0.0.1, device ID 0, device IP 10.20.10.9. Peer information: server 10.0.0.2, device ID 0, device IP 10.20.10.5.",
			rule: "hccl-roce-error-cqe", kind: KindNCCLNet, peer: "10.0.0.2", peerHost: "gpu04"},
		{line: "[ERROR] HCCL(80812,):2026-06-17-02:21:43.853.333 [transport_manager.cc:954] [86231][InitChannelStage][RunFailed]Transport init error! createLink para:rank[7]-localUserrank[7]-localIpAddr[80.5.5.39/7], remoteRank[15]-remoteUserrank[15]-remoteIpAddr[80.5.5.67/7], machineType[0], linkMode[1], isUsedRdma[1], tag[AllGather_group_name_119]",
			rule: "hccl-transport-init", kind: KindNCCLNet},
		{line: "[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error. Reason: [Create][DestLink]Create Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr[172.16.0.114], dst_rank[0]-remoteUserrank[0]-remote_ip_addr[172.16.0.114]",
			rule: "hccl-transport-init", kind: KindNCCLNet, host: "gpu01"},
		{line: "[ERROR] HCCL(80812,):2026-06-17-02:21:43.853.226 [detect_connect_anomalies.cc:126] [86231]-------------------CONNECT TIMEOUT DETECT RESULT-----------------------",
			rule: "hccl-connect-timeout", kind: KindNCCLNet},
	}},
	{"xla-coordination-service", []string{"jax-heartbeat-timeout", "xla-barrier-timed-out", "xla-barrier-deadline", "xla-listed-task"}, []emitterLine{
		// The barrier's list of the tasks that never came, one per line.
		{line: "/job:jax_worker/replica:0/task:6", rule: "xla-listed-task", kind: KindMismatch},
		{line: "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: 0_async_write_complete.0.1. This usually happens because a task triggered the barrier too early or too slowly. Please look at the task logs (both timed out and first task) to debug further.",
			rule: "xla-barrier-deadline", kind: KindWatchdog},
		{line: ":{\"created\":\"@1706211255.371885374\",\"description\":\"Error received from peer ipv4:10.142.0.55:8476\",\"file\":\"external/com_github_grpc_grpc/src/core/lib/surface/call.cc\",\"file_line\":1056,\"grpc_message\":\"Barrier timed out. Barrier_id: multihost_broadcast_sync0. Timed out task names:\\n/job:jax_worker/replica:0/task:3\\n/job:jax_worker/replica:0/task:0\\n\",\"grpc_status\":4}",
			rule: "xla-barrier-timed-out", kind: KindMismatch},
		{line: "The first task at the barrier: /job:jax_worker/replica:0/task:13."},
		{line: "2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/coordination_service.cc:1170] /job:jax_worker/replica:0/task:0 has been set to ERROR in coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:0 heartbeat timeout. This indicates that the remote task has failed, got preempted, or crashed unexpectedly. Check the task logs for an earlier error to debug further. [type.googleapis.com/tensorflow.CoordinationServiceError='']",
			rule: "jax-heartbeat-timeout", kind: KindPeerClosed, peer: "/job:jax_worker/replica:0/task:0", peerHost: "gpu01"},
	}},
	{"mpich-hydra", []string{"hydra-exit-code", "hydra-exit-string", "hydra-running-at", "impi-killed-by-signal"}, []emitterLine{
		// Intel MPI's Hydra: its banner names the rank too.
		{line: "=   RANK 2 PID 30362 RUNNING AT node2", rule: "hydra-running-at", kind: KindHostBanner, peer: "node2"},
		{line: "=   KILLED BY SIGNAL: 9 (Killed)", rule: "impi-killed-by-signal", kind: KindTaskExit},
		{line: "=   KILLED BY SIGNAL: 15 (Terminated)"},
		// mpiexec's block names the host ("=   PID 9665 RUNNING AT
		// NeuroRTX6000") of the EXIT CODE line after it: a host banner,
		// which the digest uses to place that line (hang.hostBanner).
		{line: "=   EXIT CODE: 9", rule: "hydra-exit-code", kind: KindTaskExit},
		{line: "=   EXIT CODE: 139", rule: "hydra-exit-code", kind: KindTaskExit},
		{line: "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)", rule: "hydra-exit-string", kind: KindTaskExit},
		{line: "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault: 11 (signal 11)", rule: "hydra-exit-string", kind: KindTaskExit},
		// SIGTERM is the teardown (pyiron/executorlib#192, #197).
		{line: "=   EXIT CODE: 15"},
		{line: "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Terminated (signal 15)"},
		{line: "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"},
		{line: "=   PID 9665 RUNNING AT gpu02", rule: "hydra-running-at", kind: KindHostBanner, peer: "gpu02"},
		{line: "=   PID 108257 RUNNING AT jetson@gpu01", rule: "hydra-running-at", kind: KindHostBanner, peer: "gpu01"},
	}},
	{"deepspeed-launcher", []string{"deepspeed-launcher-exit"}, []emitterLine{
		{line: "[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/global/D1/homes/sushant/sushanta/venv/bin/python3.10', '-u', 'trainCLM.py', '--local_rank=1', '--deepspeed', '/home/sushant/D1/sushanta/try/nepaligpt/clm/config/deepspeed_config.json'] exits with return code = -11",
			rule: "deepspeed-launcher-exit", kind: KindTaskExit},
		// Across nodes the launcher runs under pdsh, whose prefix names the host.
		{line: "gpu02: [2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['python3', '-u', 'train.py', '--local_rank=1'] exits with return code = -11",
			rule: "deepspeed-launcher-exit", kind: KindTaskExit, host: "gpu02"},
		{line: "[2023-07-10 04:26:05,876] [INFO] [launch.py:318:sigkill_handler] Killing subprocess 94984"},
		// A cancel: SIGINT or SIGTERM.
		{line: "gpu02: [2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['python3', '-u', 'train.py', '--local_rank=1'] exits with return code = -15", host: "gpu02"},
	}},
	{"ray", []string{"ray-memory-monitor-oom"}, []emitterLine{
		{line: "(raylet) node_manager.cc:3040: 1 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 2c82620270df6b9dd7ae2791ef51ee4b5a9d5df9f795986c10dd219c, IP: 172.31.183.172) over the last time period. To see more information about the Workers killed on this node, use `ray logs raylet.out -ip 172.31.183.172`",
			rule: "ray-memory-monitor-oom", kind: KindOOMKill},
		// The caller's word that an actor died names neither its node nor
		// why (hiyouga/EasyR1#324 leaves the cause unknown): not read.
		{line: "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task."},
	}},
}

// checkURLs reports what is wrong with a rule's source: one or more
// public https URLs, space-separated.
func checkURLs(source string) string {
	fields := strings.Fields(source)
	if len(fields) == 0 {
		return "no source"
	}
	for _, f := range fields {
		u, err := url.Parse(f)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			return "not a public report's URL: " + f
		}
	}
	return ""
}

// TestEveryShippedRuleHasOriginAndSource: each shipped rule says where its
// wording comes from (the emitter's source or documentation) and which
// public reports hold its examples, and belongs to one emitter below.
func TestEveryShippedRuleHasOriginAndSource(t *testing.T) {
	s, err := ShippedRules()
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, e := range emitters {
		for _, n := range e.rules {
			if o, ok := owner[n]; ok {
				t.Errorf("rule %s listed under %s and %s", n, o, e.name)
			}
			owner[n] = e.name
		}
	}
	for _, r := range s.Rules() {
		if o := RuleOrigin(r.Name); len(o) < 20 {
			t.Errorf("rule %s: origin %q", r.Name, o)
		}
		if msg := checkURLs(r.Source); msg != "" {
			t.Errorf("rule %s: %s", r.Name, msg)
		}
		if owner[r.Name] == "" {
			t.Errorf("rule %s belongs to no emitter", r.Name)
		}
		delete(owner, r.Name)
	}
	for n, e := range owner {
		t.Errorf("%s: rule %s is not shipped", e, n)
	}
}

// TestEmitterRules: per emitter, every example of its rules and its other
// lines read as the table says through LineIn and Attribute: the kind, a
// device fault, the host the line names (a kernel line names none: it is
// the reading host's) and the peer it accuses; no counter-example is read
// by the rule.
func TestEmitterRules(t *testing.T) {
	s, err := ShippedRules()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]linerules.Rule{}
	for _, r := range s.Rules() {
		byName[r.Name] = r
	}
	for _, e := range emitters {
		t.Run(e.name, func(t *testing.T) {
			listed := map[string]bool{}
			for _, l := range e.lines {
				listed[l.line] = true
				checkEmitterLine(t, e, l)
			}
			for _, n := range e.rules {
				r, ok := byName[n]
				if !ok {
					t.Errorf("rule %s not shipped", n)
					continue
				}
				if RuleOrigin(n) == "" || r.Source == "" {
					t.Errorf("rule %s: origin %q, source %q", n, RuleOrigin(n), r.Source)
				}
				stream := ""
				if r.Stream == linerules.StreamKmsg {
					stream = kmsgStream
				}
				for _, ex := range r.Examples {
					if !listed[ex] {
						t.Errorf("rule %s: example %q is not in the emitter's lines", n, ex)
					}
				}
				for _, u := range r.Unlike {
					if m, ok := LineIn(stream, u); ok && m.Rule == n {
						t.Errorf("rule %s reads its counter-example %q", n, u)
					}
				}
			}
		})
	}
}

// checkEmitterLine checks one line of an emitter's table.
func checkEmitterLine(t *testing.T, e emitter, l emitterLine) {
	t.Helper()
	m, ok := LineIn(l.stream, l.line)
	if l.kind == "" {
		if ok && (m.Rule != "" || m.Kind != KindProgress) {
			t.Errorf("%q reads as %+v, want no evidence", l.line, m)
		}
		if l.host != "" {
			checkHost(t, l)
		}
		return
	}
	if !ok || m.Kind != l.kind || m.Fault != l.fault || m.Rule != l.rule || m.Peer != l.peer {
		t.Errorf("%q reads as %+v (%v); want kind %s fault %v rule %s peer %q", l.line, m, ok, l.kind, l.fault, l.rule, l.peer)
	}
	if l.rule != "" && !slices.Contains(e.rules, l.rule) {
		t.Errorf("%q: rule %s is not %s's", l.line, l.rule, e.name)
	}
	checkHost(t, l)
	if l.peerHost != "" {
		h := emitterLayout.Node(m.Peer)
		if r, ok := CoordinatedTask(m.Peer); ok {
			h = emitterLayout.RankHost(r)
		}
		if h != l.peerHost {
			t.Errorf("%q: peer %q is node %q, want %q", l.line, m.Peer, h, l.peerHost)
		}
	}
}

// checkHost checks the host Attribute gives a line of the job's output.
func checkHost(t *testing.T, l emitterLine) {
	t.Helper()
	if l.stream == kmsgStream {
		if l.host != "" {
			t.Errorf("%q: a kernel line names no host, the table says %q", l.line, l.host)
		}
		return
	}
	if got := Attribute(l.line, emitterLayout).Host; got != l.host {
		t.Errorf("%q is attributed to %q, want %q", l.line, got, l.host)
	}
}

// TestRealSegfaultNamedLikeAnAERLine: a program run as nobody from a file
// named like the kernel's AER line for an NVIDIA GPU crashes; the kernel's
// record of it carries that text and reads as nothing.
func TestRealSegfaultNamedLikeAnAERLine(t *testing.T) {
	const forged = "nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)"
	raw, rec := kmsgtest.Segfault(t, forged)
	t.Logf("the kernel logged: %s", raw)
	if rec.User || !strings.Contains(rec.Text, " in "+forged+"[") {
		t.Fatalf("the kernel's record: %+v", rec)
	}
	if m, ok := LineIn(kmsgStream, rec.Text); ok {
		t.Errorf("%q reads as %+v", rec.Text, m)
	}
}
