package joblog

import (
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/xid"
)

// TestLine is the curated table of lines seen in the field (and their
// look-alikes that must not count as evidence).
func TestLine(t *testing.T) {
	none := Match{Rank: -1, Seq: -1, Completed: -1, Status: -1, XID: -1, Epoch: -1, Step: -1}
	with := func(f func(*Match)) Match { m := none; f(&m); return m }
	tests := []struct {
		name, line string
		want       Match
		ok         bool
	}{
		{"xid fallen off the bus", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
			with(func(m *Match) { m.Kind, m.XID, m.Fault = KindXID, 79, true }), true},
		{"xid 48", "NVRM: Xid (PCI:0000:b1:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
			with(func(m *Match) { m.Kind, m.XID, m.Fault = KindXID, 48, true }), true},
		{"application xid 13", "NVRM: Xid (PCI:0000:3b:00): 13, pid=4321, name=python, Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address",
			with(func(m *Match) { m.Kind, m.XID = KindXID, 13 }), true},
		{"application xid 31", "NVRM: Xid (PCI:0000:3b:00): 31, pid=4321, name=python, Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. Fault is of type FAULT_PDE ACCESS_TYPE_READ",
			with(func(m *Match) { m.Kind, m.XID = KindXID, 31 }), true},
		// NVIDIA's catalogue: 68 and 69 are RESTART_APP (internal/xid). No real XID 68 line was
		// found: this one is in the driver's form with the catalogue's description.
		{"video decoder exception is the application's", "NVRM: Xid (PCI:0000:3b:00): 68, pid=4321, name=python, NVDEC0 Exception",
			with(func(m *Match) { m.Kind, m.XID = KindXID, 68 }), true},
		// NVIDIA/NVSentinel, syslog-health-monitor parser tests.
		{"graphics class error is the application's", "NVRM: Xid (PCI:0001:ab:cd): 69, pid=1310987, name=train.3, Class Error: ChId 0008, Class 0000cbc0, Offset 00000184, Data ffffffff, ErrorCode 00000004",
			with(func(m *Match) { m.Kind, m.XID = KindXID, 69 }), true},
		// NVIDIA/open-gpu-kernel-modules issue 1150: the cleanup is the NVLink5 error's effect.
		{"cleanup caused by an nvlink error", "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
			with(func(m *Match) { m.Kind, m.XID, m.Fault = KindXID, 45, true }), true},
		{"recovery action: reboot", "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
			with(func(m *Match) { m.Kind, m.XID, m.Fault = KindXID, 154, true }), true},
		{"recovery action: none", "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
			with(func(m *Match) { m.Kind, m.XID = KindXID, 154 }), true},
		// NVIDIA/NVSentinel issue 1357.
		{"nonfatal nvlink5 error", "NVRM: Xid (PCI:0000:c5:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507 0x00000004 0x00000000 0x00000000 0x00000000 0x00000000",
			with(func(m *Match) { m.Kind, m.XID = KindXID, 145 }), true},
		{"uncorrectable ecc", "NVRM: GPU at PCI:0000:3b:00: GPU-1234: Uncorrectable ECC error detected",
			with(func(m *Match) { m.Kind, m.Fault, m.Rule = KindECC, true, "uncorrectable-ecc" }), true},
		{"npu fault code", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)",
			with(func(m *Match) { m.Kind, m.Code, m.Fault = KindNPUError, "0x80e18005", true }), true},
		{"npu code in a minor alarm is no fault", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80c98000, minor alarm",
			with(func(m *Match) { m.Kind, m.Code = KindNPUError, "0x80c98000" }), true},
		{"npu code, health unknown", "dcmi: npu12 (PCI:unknown) error code 0x80e18005, health unknown",
			with(func(m *Match) { m.Kind, m.Code = KindNPUError, "0x80e18005" }), true},
		{"npu fault mark not at the end is no fault", "dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80c98000, minor alarm (fault) rank 3",
			with(func(m *Match) { m.Kind, m.Code = KindNPUError, "0x80c98000" }), true},
		{"npu uncorrectable ecc", "dcmi: npu2 (PCI:0000:c3:00.0) uncorrectable ECC errors 2 (was 0)",
			with(func(m *Match) { m.Kind, m.Fault, m.Rule = KindECC, true, "uncorrectable-ecc" }), true},
		{"an application's error code is not an npu code", "RuntimeError: ACL stream synchronize failed, error code 0x80e18005 (fault)", Match{}, false},
		{"an npu code line without a code", "dcmi: npu2 (PCI:0000:c3:00.0) error code unknown (fault)", Match{}, false},
		{"corrected ecc is not matched", "EDAC MC0: 1 CE memory read error on CPU_SrcID#0", Match{}, false},
		{"ib completion from peer", "gpu02:81234:81290 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<57223> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.2 remoteGid ::ffff:10.0.0.3",
			with(func(m *Match) {
				m.Kind, m.Peer, m.Status, m.Rule = KindNCCLNet, "10.0.0.3", 12, "nccl-ib-completion-error"
			}), true},
		{"ib port down, the host's own adapter", "gpu01:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error",
			with(func(m *Match) { m.Kind, m.PortDown, m.Rule = KindNCCLNet, true, "nccl-ib-port-down" }), true},
		{"socket reset by the peer", "socketProgressOpt: Call to recv from 10.0.0.2<33759> failed : Connection reset by peer",
			with(func(m *Match) { m.Kind, m.Peer, m.Socket, m.Rule = KindNCCLNet, "10.0.0.2", true, "nccl-socket-reset" }), true},
		{"ib completion, older wording", "gpu02:81234:81290 [3] NCCL WARN NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129",
			with(func(m *Match) { m.Kind, m.Status = KindNCCLNet, 12 }), true},
		{"gdr", "gpu02:1:2 [0] NCCL WARN NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)",
			with(func(m *Match) { m.Kind, m.GDR = KindNCCLNet, true }), true},
		{"retried warning", "gpu02:1:2 [0] NCCL WARN Call to connect returned Connection refused, retrying",
			with(func(m *Match) { m.Kind, m.Rule = KindNCCLRetry, "nccl-retrying" }), true},
		{"other warning", "gpu02:1:2 [0] NCCL WARN NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file",
			with(func(m *Match) { m.Kind = KindNCCLWarn }), true},
		{"NCCL's CUDA failure is a CUDA error (rules.toml)", "gpu02:1:2 [0] NCCL WARN Cuda failure 'out of memory'",
			with(func(m *Match) { m.Kind, m.Rule = KindCUDAError, "nccl-cuda-failure" }), true},
		{"info is not evidence", "gpu02:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read", Match{}, false},
		{"oob address", "gpu02:81234:81234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.2<0>",
			with(func(m *Match) { m.Kind, m.Addr = KindNCCLAddr, "10.0.0.2" }), true},
		{"watchdog timeout", "[rank3]:[E ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600094 milliseconds before timing out.",
			with(func(m *Match) { m.Kind, m.Rank, m.Seq, m.Op = KindWatchdog, 3, 1234, "ALLREDUCE" }), true},
		{"watchdog last completed", "[rank5]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 5] Timeout at NCCL work: 1234, last enqueued NCCL work: 1234, last completed NCCL work: 1233.",
			with(func(m *Match) { m.Kind, m.Rank, m.Seq, m.Completed = KindWatchdog, 5, 1234, 1233 }), true},
		{"traceback", "[rank2]: Traceback (most recent call last):",
			with(func(m *Match) { m.Kind, m.Rank, m.Rule = KindTraceback, 2, "traceback" }), true},
		{"cuda error", "RuntimeError: CUDA error: an illegal memory access was encountered",
			with(func(m *Match) { m.Kind, m.Rule = KindCUDAError, "cuda-error" }), true},
		{"progress epoch step", "[rank0]: epoch 3 step 1500 loss 2.113",
			with(func(m *Match) { m.Kind, m.Rank, m.Epoch, m.Step = KindProgress, 0, 3, 1500 }), true},
		{"progress imagenet", "Epoch: [2][ 300/5004]\tTime  0.412 ( 0.430)\tLoss 3.1e+00",
			with(func(m *Match) { m.Kind, m.Epoch, m.Step = KindProgress, 2, 300 }), true},
		{"progress megatron", " iteration     1200/  100000 | consumed samples:       153600 | elapsed time per iteration (ms): 812.3",
			with(func(m *Match) { m.Kind, m.Step = KindProgress, 1200 }), true},
		{"progress key=value", "step=42 rank=7 loss=0.1",
			with(func(m *Match) { m.Kind, m.Rank, m.Step = KindProgress, 7, 42 }), true},
		{"plain output", "loss 2.113 lr 3e-4", Match{}, false},
		{"steps as a word", "warmup steps done", Match{}, false},
		{"empty", "", Match{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := LineIn("", tc.line)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("LineIn(%q)\n got %+v %v\nwant %+v %v", tc.line, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzLine checks that the matchers never panic, that a match has a kind
// and a non-match is the zero Match, and that the numbers are in range.
func FuzzLine(f *testing.F) {
	for _, s := range []string{
		"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234",
		"NVRM: Xid (PCI:0000:3b:00): 99999999999999999999, x",
		"h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<57223> with status=12",
		"h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.2<0>",
		"[Rank 3] WorkNCCL(SeqNum=1, OpType=BROADCAST) last completed NCCL work: 0",
		"Epoch: [2][ 300/5004]", "step=-1 rank=99999999999999999999", "Traceback (most recent call last):",
		"dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		m, ok := LineIn("", line)
		if !ok {
			if m != (Match{}) {
				t.Fatalf("no match, but %+v", m)
			}
			return
		}
		if m.Kind == "" {
			t.Fatalf("match without a kind: %+v", m)
		}
		for _, n := range []int64{int64(m.Rank), m.Seq, m.Completed, int64(m.Status), int64(m.XID), m.Epoch, m.Step} {
			if n < -1 {
				t.Fatalf("negative number in %+v", m)
			}
		}
		if ev, ok := xid.Parse(line[:min(len(line), MaxLine)]); m.Kind == KindXID && (!ok || m.XID != ev.Code || m.Fault != ev.Fault()) {
			t.Fatalf("xid match %+v", m)
		}
		if (m.Kind == KindNPUError) != (m.Code != "") {
			t.Fatalf("npu-error match %+v", m)
		}
		if m.Kind == KindProgress && m.Epoch < 0 && m.Step < 0 {
			t.Fatalf("progress without numbers: %+v", m)
		}
		if len(line) > MaxLine {
			if m2, _ := LineIn("", line[:MaxLine]); m2 != m {
				t.Fatalf("a line is judged by its first %d bytes: %+v vs %+v", MaxLine, m, m2)
			}
		}
		if strings.Contains(m.Peer, " ") || strings.Contains(m.Addr, " ") {
			t.Fatalf("address with a space: %+v", m)
		}
	})
}
