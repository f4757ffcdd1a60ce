package joblog

import "testing"

// benchLines is what a training job prints, most of it progress and
// chatter: the lines every rule is tried on before a hang or a failure.
var benchLines = []string{
	"[rank3]: epoch 3 step 450/1000 loss 2.3100",
	"{'loss': 1.2345, 'grad_norm': 0.98, 'learning_rate': 4.9e-05, 'epoch': 0.12}",
	"Epoch 0:  45%|████▌     | 450/1000 [01:23<01:41,  5.42it/s, loss=2.31]",
	"completed step: 48, seconds: 64.648, TFLOP/s/device: 422.845, Tokens/s/device: 887.018, total_weights: 7310686, loss: 6.532",
	"gpu01:1234:1290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
	"INFO:root:saving checkpoint to /scratch/run7/ckpt-450.pt",
	"[2024-02-24 04:37:50,964] [INFO] [logging.py:96:log_dist] [Rank 0] step=450, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]",
	"Validation: 100%|██████████| 50/50 [00:04<00:00, 11.2it/s]",
	"[rank0]:[E515 18:36:47.341808597 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=241, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran for 600086 milliseconds before timing out.",
	"srun: error: gpu03: task 2: Exited with exit code 1",
}

// BenchmarkLineIn is the cost of reading one line of the job's output
// against the built-in parsers and every shipped rule.
func BenchmarkLineIn(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		LineIn("", benchLines[i%len(benchLines)])
	}
}
