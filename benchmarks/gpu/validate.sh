#!/usr/bin/env bash
# validate.sh - run vigil's GPU compute checks on a GPU machine and compare
# them with PyTorch (torch.matmul) and nccl-tests (all_reduce_perf) where
# those are installed, then run the cross-node NCCL path of
# nccl-allreduce-multinode on this machine alone (vigil-prolog
# multinode-selftest: the GPUs as simulated nodes of one communicator). The machine needs no Go toolchain: build vigil-prolog
# on a development machine with `make` (it links only libc; libcuda,
# cuBLASLt and NCCL are opened at run time), copy bin/vigil-prolog and this
# script over, and run:
#
#     bash validate.sh ./vigil-prolog [OUTDIR]
#
# Environment:
#     VIGIL_CHECKS       checks to run (default: all compute checks)
#     VIGIL_GEMM_SIZE    square GEMM size (default 8192)
#     VIGIL_LIBRARY_PATH extra directories for libcublasLt / libnccl
#     VIGIL_CHECK_TIMEOUT per-check deadline (default 90s)
#     VIGIL_BUDGET       vigil-prolog's total budget (default 4m)
#     VIGIL_MULTINODE_NODES simulated nodes of multinode-selftest (default 2)
#     VIGIL_PYTHON       the interpreter with CUDA PyTorch for the model
#                        benchmarks (default python3)
#     CUDA_VISIBLE_DEVICES is honoured by vigil, torch and nccl-tests alike.
#
# Its run time is bounded: vigil-prolog by VIGIL_BUDGET (plus 30 s to write
# its report), multinode-selftest by VIGIL_CHECK_TIMEOUT (plus 15 s),
# torch.matmul by 120 s and nccl-tests by 120 s, so with the defaults it
# ends within 15 minutes even when a check hangs the GPU (the model
# benchmarks add at most 4). Without a usable
# device (no GPU, driver not loaded, no libcuda) it ends within seconds:
# every check reports unknown with the reason, and the script exits 3 after
# vigil's table without running the rest. Nothing on the machine is changed
# (--dry-run).
set -u -o pipefail

BIN=${1:-./vigil-prolog}
OUT=${2:-$(mktemp -d /tmp/vigil-validate.XXXXXX)}
CHECKS=${VIGIL_CHECKS:-gpu-count,ecc,row-remap,xid,nvlink,pcie,throttle,leftover,gemm,kernel-launch,copy,allreduce,allgather,alltoall,multi-allreduce,overlap}
SIZE=${VIGIL_GEMM_SIZE:-8192}
CHECK_TIMEOUT=${VIGIL_CHECK_TIMEOUT:-90s}
BUDGET=${VIGIL_BUDGET:-4m}
NODES=${VIGIL_MULTINODE_NODES:-2}
budget_s() { # 4m -> 240, 90s -> 90
	case $1 in *m) echo $(( ${1%m} * 60 ));; *s) echo "${1%s}";; *h) echo $(( ${1%h} * 3600 ));; *) echo "$1";; esac
}

if [ ! -x "$BIN" ]; then
	echo "validate.sh: $BIN is not an executable vigil-prolog (build it with make)" >&2
	exit 2
fi
mkdir -p "$OUT/reports"
PY=$(command -v python3 || true)

cat >"$OUT/vigil.toml" <<TOML
[prolog]
suite = "full"
check_timeout = "$CHECK_TIMEOUT"
budget = "$BUDGET"
retries = 0

[checks.gemm]
sizes = [$SIZE]
dtypes = ["bf16", "fp16", "tf32", "fp8"]
TOML

checks_linked=$("$BIN" --list-checks=names 2>/dev/null)
if ! grep -qx gemm <<<"$checks_linked"; then
	echo "validate.sh: $BIN has no compute checks linked (benchmarks/all must import benchmarks/nvidia)" >&2
	exit 2
fi
if command -v nvidia-smi >/dev/null 2>&1; then
	# A wedged driver can hang nvidia-smi: it gets 20 s.
	smi=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)
	src=$?
	if [ $src -eq 0 ]; then
		echo "== $(head -8 <<<"$smi" | paste -sd';')"
	else
		echo "== nvidia-smi failed (exit $src): $(head -2 <<<"$smi" | paste -sd' ')"
	fi
fi
echo "== checks: $CHECKS (report and logs in $OUT; budget $BUDGET, $CHECK_TIMEOUT a check)"
start=$(date +%s)
timeout $(( $(budget_s "$BUDGET") + 30 )) "$BIN" --dry-run --config "$OUT/vigil.toml" --checks "$CHECKS" \
	--report-dir "$OUT/reports" --log-level info >"$OUT/vigil.out" 2>"$OUT/vigil.log"
rc=$?
echo "== vigil-prolog exit $rc after $(( $(date +%s) - start ))s"
cat "$OUT/vigil.out"
report=$(ls -t "$OUT"/reports/*.json 2>/dev/null | head -1)
if [ -z "$report" ]; then
	echo "validate.sh: no JSON report was written; log:" >&2
	tail -50 "$OUT/vigil.log" >&2
	exit 1
fi

# No usable GPU (cuInit found none, or the driver is not loaded): nothing
# can be measured, so say so and stop rather than run torch and nccl-tests.
# The table's lines are "CHECK STATUS REASON ...".
no_gpu=$(awk '$1 ~ /^(gemm|kernel-launch|copy)$/ { n++; if ($2 == "unknown" && $3 ~ /^(NoDevices|LibraryMissing)$/) u++ }
	END { print (n > 0 && u == n) ? 1 : 0 }' "$OUT/vigil.out")
if [ "$no_gpu" = 1 ]; then
	echo "validate.sh: no usable GPU on this machine: nothing was measured; vigil says:" >&2
	grep -E '^unavailable:|^ {14}[a-z]' "$OUT/vigil.out" >&2
	exit 3
fi

# The cross-node path of nccl-allreduce-multinode without Slurm: the GPUs
# split into simulated nodes, one NCCL communicator over all of them in
# one process (exit 0 pass, 1 fail, 3 unknown; 124 killed by timeout).
echo "== multinode-selftest: the GPUs as $NODES simulated nodes of one NCCL communicator (timeout $CHECK_TIMEOUT)"
start=$(date +%s)
timeout $(( $(budget_s "$CHECK_TIMEOUT") + 15 )) "$BIN" multinode-selftest --config "$OUT/vigil.toml" \
	--nodes "$NODES" --timeout "$CHECK_TIMEOUT" >"$OUT/multinode.out" 2>&1
mrc=$?
[ $mrc -eq 124 ] && echo "verdict: unknown Killed: multinode-selftest did not end within its timeout + 15 s" >>"$OUT/multinode.out"
cat "$OUT/multinode.out"
echo "== multinode-selftest exit $mrc after $(( $(date +%s) - start ))s"

# The model benchmarks (model-gpt, model-resnet) on the GPUs with the
# site's PyTorch, when python3 has it with CUDA (VIGIL_PYTHON names
# another interpreter): step time, rate and loss per model. Bounded by the
# checks' own budgets (1 and 2 minutes) plus 30 s.
MPY=${VIGIL_PYTHON:-$PY}
if [ -n "$MPY" ] && timeout 60 "$MPY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	cat >"$OUT/model.toml" <<TOML
[prolog]
budget = "4m"
retries = 0
[checks.model-gpt]
python = "$MPY"
[checks.model-resnet]
python = "$MPY"
TOML
	echo "== model benchmarks: model-gpt, model-resnet with $MPY"
	mkdir -p "$OUT/model-reports"
	timeout 220 "$BIN" --dry-run --config "$OUT/model.toml" --checks model-gpt,model-resnet \
		--report-dir "$OUT/model-reports" >"$OUT/model.out" 2>"$OUT/model.log"
	echo "== model benchmarks exit $?"
	mreport=$(ls -t "$OUT"/model-reports/*.json 2>/dev/null | head -1)
	if [ -n "$mreport" ]; then
		"$PY" - "$mreport" <<'PYEOF'
import json, sys
rep = json.load(open(sys.argv[1]))
print("%-14s %-8s %-18s %10s %14s %10s  %s" % ("model", "status", "reason", "step ms", "rate", "loss", "message"))
for r in rep.get("results", []):
    vals = {v["name"]: v for v in r.get("values", [])}
    rate = next((v for n, v in vals.items() if n.endswith("_per_s")), None)
    print("%-14s %-8s %-18s %10s %14s %10s  %s" % (r["check"], r["status"], r.get("reason", "") or "-",
        "%.1f" % vals["step_ms"]["value"] if "step_ms" in vals else "-",
        "%.0f %s" % (rate["value"], rate.get("unit", "")) if rate else "-",
        "%.3f" % vals["final_loss"]["value"] if "final_loss" in vals else "-", r.get("message", "")[:120]))
PYEOF
	else
		echo "validate.sh: the model benchmarks wrote no report; log:"; tail -20 "$OUT/model.log"
	fi
else
	echo "== model benchmarks: skipped (${MPY:-no python3} has no PyTorch with CUDA; VIGIL_PYTHON names another)"
fi

# torch.matmul on the same shapes and layout: A (m×k) · Bᵀ with B (n×k),
# row-major, which is cuBLAS's TN layout that vigil uses.
if [ -n "$PY" ] && "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	echo "== torch.matmul"
	timeout 120 "$PY" - "$SIZE" >"$OUT/torch.json" 2>"$OUT/torch.log" <<'PYEOF'
import json, sys, time, torch
n = int(sys.argv[1])
out = {}
def bench(fn, min_time=0.3):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    one = s.elapsed_time(e) / 1e3
    iters = max(1, min(200, int(min_time / max(one, 1e-6)) + 1))
    s.record()
    for _ in range(iters):
        fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / 1e3 / iters
for dev in range(torch.cuda.device_count()):
    torch.cuda.set_device(dev)
    cc = torch.cuda.get_device_capability(dev)
    res = {}
    for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("tf32", torch.float32)):
        torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        a = torch.randn(n, n, device="cuda", dtype=dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        t = bench(lambda: torch.matmul(a, b.t()))
        res[name] = 2 * n ** 3 / t / 1e12
    if cc >= (8, 9) and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
        try:
            a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
            b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
            one = torch.tensor(1.0, device="cuda")
            t = bench(lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
            res["fp8"] = 2 * n ** 3 / t / 1e12
        except Exception as e:  # API differs across torch versions
            print("fp8:", e, file=sys.stderr)
    out["gpu%d" % dev] = res
print(json.dumps(out))
PYEOF
	[ $? -eq 0 ] || { echo "torch run failed:"; tail -5 "$OUT/torch.log"; }
else
	echo "== torch.matmul: skipped (no python3 with CUDA-enabled PyTorch)"
fi

if command -v all_reduce_perf >/dev/null 2>&1; then
	echo "== nccl-tests all_reduce_perf"
	ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
	[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && ngpu=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | wc -l)
	timeout 120 all_reduce_perf -b 256M -e 256M -g "${ngpu:-1}" -w 5 -n 20 >"$OUT/nccl-tests.out" 2>&1 || true
	grep -E '^ +268435456' "$OUT/nccl-tests.out" | tail -1
else
	echo "== nccl-tests: skipped (all_reduce_perf not on PATH)"
fi

# NCCL's own view of a hung job (RAS, NCCL >= 2.24): a 2-process NCCL job
# does a few all_reduces, then rank 1 sleeps before its next one while rank
# 0 waits in it; vigil-watch ras-query (and NCCL's ncclras, when on PATH)
# asks the job's RAS service how it stands, then the job is killed. Bounded
# to about 90 s. vigil-watch is taken beside $BIN unless VIGIL_WATCH names it.
WATCH=${VIGIL_WATCH:-$(dirname "$BIN")/vigil-watch}
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && ngpu=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | wc -l)
nccl_ver=$([ -n "$PY" ] && timeout 60 "$PY" -c 'import torch; assert torch.cuda.is_available(); print("%d.%d.%d" % torch.cuda.nccl.version())' 2>/dev/null)
if [ ! -x "$WATCH" ]; then
	echo "== nccl-ras: skipped ($WATCH is not an executable vigil-watch)"
elif [ -z "$nccl_ver" ] || [ "${ngpu:-0}" -lt 2 ]; then
	echo "== nccl-ras: skipped (needs python3 with CUDA PyTorch and 2 GPUs; NCCL '${nccl_ver:-none}', ${ngpu:-0} GPUs)"
elif [ "$(printf '%s\n2.24.0\n' "$nccl_ver" | sort -V | head -1)" != "2.24.0" ]; then
	echo "== nccl-ras: skipped (PyTorch's NCCL $nccl_ver has no RAS: needs 2.24 or later)"
else
	port=$(( 28100 + RANDOM % 800 ))
	echo "== nccl-ras: PyTorch's NCCL $nccl_ver, 2 ranks, RAS on 127.0.0.1:$port"
	cat >"$OUT/ras_job.py" <<'PYEOF'
import os, sys, time
import torch
import torch.distributed as dist
rank = int(sys.argv[1])
torch.cuda.set_device(rank)
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:" + sys.argv[2], rank=rank, world_size=2)
x = torch.ones(1 << 20, device="cuda")
for _ in range(20):
    dist.all_reduce(x)
torch.cuda.synchronize()
print("rank %d: 20 all_reduces done" % rank, flush=True)
if rank == 1:
    time.sleep(600)  # behind: rank 0 waits in the next all_reduce
dist.all_reduce(x)
torch.cuda.synchronize()
PYEOF
	store=$(( port + 1000 ))
	pids=""
	for r in 0 1; do
		NCCL_RAS_ADDR=127.0.0.1:$port timeout 100 "$PY" "$OUT/ras_job.py" $r $store >"$OUT/ras_job.$r.log" 2>&1 &
		pids="$pids $!"
	done
	for _ in $(seq 60); do
		[ "$(grep -l 'all_reduces done' "$OUT"/ras_job.*.log 2>/dev/null | wc -l)" -ge 2 ] && break
		sleep 1
	done
	sleep 5 # rank 0 is in its all_reduce, rank 1 asleep
	echo "-- vigil-watch ras-query 127.0.0.1:$port"
	timeout 20 "$WATCH" ras-query 127.0.0.1:$port | tee "$OUT/ras-vigil.json" || echo "vigil-watch ras-query failed"
	if command -v ncclras >/dev/null 2>&1; then
		echo "-- ncclras -h 127.0.0.1 -p $port -v"
		timeout 20 ncclras -h 127.0.0.1 -p $port -v | tee "$OUT/ras-ncclras.txt" || echo "ncclras failed"
	else
		echo "-- ncclras: not on PATH; the raw answer instead"
		printf 'CLIENT PROTOCOL 2\nVERBOSE STATUS\n' | timeout 20 "$PY" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=15)
s.sendall(sys.stdin.buffer.read())
out = b""
while True:
    b = s.recv(65536)
    if not b: break
    out += b
sys.stdout.write(out.decode(errors="replace"))' $port | tee "$OUT/ras-raw.txt" || echo "raw query failed"
	fi
	kill $pids 2>/dev/null
	sleep 1
	kill -9 $pids 2>/dev/null
	wait $pids 2>/dev/null
fi

if [ -z "$PY" ]; then
	echo "== summary: python3 missing; the full report is $report"
	exit 0
fi
echo
echo "== summary"
"$PY" - "$report" "$OUT/torch.json" "$OUT/nccl-tests.out" "$OUT/multinode.out" <<'PYEOF'
import json, os, re, sys
report = json.load(open(sys.argv[1]))
torch = {}
if os.path.exists(sys.argv[2]) and os.path.getsize(sys.argv[2]) > 0:
    try:
        torch = json.load(open(sys.argv[2]))
    except ValueError:
        pass
nccl_busbw = None
if os.path.exists(sys.argv[3]):
    for line in open(sys.argv[3]):
        f = line.split()
        if len(f) >= 8 and f[0] == "268435456":
            nccl_busbw = float(f[7])  # out-of-place busbw column
res = {r["check"]: r for r in report.get("results", [])}
for name, r in res.items():
    print("%-16s %-7s %-28s %s" % (name, r["status"], r.get("reason", ""), r.get("message", "")[:160]))
print()
g = res.get("gemm", {})
rows = []
for v in g.get("values", []):
    m = re.match(r"tflops_(\w+?)_(\d+)$", v["name"])
    if not m:
        continue
    dt = m.group(1)
    t = torch.get(v["device"], {}).get(dt)
    ratio = "%.0f%%" % (100 * v["value"] / t) if t else "-"
    rows.append((v["device"], dt, m.group(2), v["value"], t, ratio))
if rows:
    print("%-6s %-5s %-6s %12s %12s %8s" % ("device", "dtype", "size", "vigil TFLOPS", "torch TFLOPS", "vigil/torch"))
    for d, dt, n, vv, t, ratio in sorted(rows):
        print("%-6s %-5s %-6s %12.1f %12s %8s" % (d, dt, n, vv, "%.1f" % t if t else "-", ratio))
    print()
for check, names in (("kernel-launch", ("event_us", "wall_us", "wall_us_p99")), ("copy", ("h2d_gbps", "d2h_gbps", "d2d_gbps"))):
    vals = {}
    for v in res.get(check, {}).get("values", []):
        vals.setdefault(v["device"], {})[v["name"]] = v["value"]
    if vals:
        print("%-6s " % "device" + " ".join("%12s" % n for n in names))
        for d in sorted(vals, key=lambda s: (len(s), s)):
            print("%-6s " % d + " ".join("%12s" % vals[d].get(n, "-") for n in names))
        print()
for check in ("allreduce", "allgather", "alltoall", "multi-allreduce", "overlap"):
    for v in res.get(check, {}).get("values", []):
        extra = ""
        if check == "allreduce" and v["name"] == "busbw_gbps" and nccl_busbw:
            extra = "   nccl-tests all_reduce_perf busbw %.1f (vigil/nccl-tests %.0f%%)" % (nccl_busbw, 100 * v["value"] / nccl_busbw)
        print("%-16s %-20s %10s %s%s" % (check, v["name"], v["value"], v.get("unit", ""), extra))
# multinode-selftest: one line per simulated node with busbw_gbps=, then
# "verdict: STATUS ...".
nodes, verdict = [], "verdict: unknown: multinode-selftest printed nothing"
if os.path.exists(sys.argv[4]):
    for line in open(sys.argv[4]):
        m = re.match(r"(node\d+)\s.*\sbusbw_gbps=([0-9.e+-]+)", line)
        if m:
            nodes.append((m.group(1), float(m.group(2))))
        elif line.startswith("verdict: "):
            verdict = line.strip()
status = verdict.split()[1]
if nodes and status == "pass":
    low = min(b for _, b in nodes)
    extra = ""
    if nccl_busbw:
        extra = "   nccl-tests all_reduce_perf busbw %.1f (vigil/nccl-tests %.0f%%)" % (nccl_busbw, 100 * low / nccl_busbw)
    print("%-16s %-20s %10s %s%s" % ("multinode", "busbw_gbps", low, "GB/s", extra))
    print("%-16s %s (lowest of %d simulated nodes: %s)" % ("", verdict, len(nodes), ", ".join("%s %g" % n for n in nodes)))
else:
    print("%-16s %s" % ("multinode", verdict[:200]))
PYEOF
