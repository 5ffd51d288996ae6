#!/usr/bin/env bash
# One call of a lent GPU machine (the project's device tool), about 7 minutes: the testbed's goal rows through the
# command line, then as many of Figs. 8/9's bandit runs as the rest of the time allows.
#
#   JTK_COMMIT=$(git rev-parse --short HEAD) LIMIT=390 bash benchmarks/gpu_lease.sh   # on the GPU machine
#
# 1. benchmarks/cli_speed.py: `jtk testbed --agent mlp --grid paper` from fresh processes, cold (empty caches),
#    warm, and warm without jtk's store of compiled programs; ensemble+ K = 100 cold and warm. Nothing else runs
#    on the GPU meanwhile. Rows: $OUT/cli_speed_gpu.csv.
# 2. The bandit, `bandit_study --preset figs89` (d = 50, T = 50 000, 20 problems drawn per seed, seeds 0-9): one
#    process per agent, side by side on the GPU, each running its missing seeds as few compiled programs
#    (SEEDS_PER_PROGRAM below), seeded with the stored bandit_paper_regret.csv so that only missing runs run.
#    Beside them, one check that the GPU reproduces stored GPU rows (mlp, seed 3, the fixed problems 0-19).
#    Every 20 s and at the end: $OUT/bandit_gpu_log.txt (the finished runs' lines under a '# device:' /
#    '# horizon:' header, what `bandit_study --import-log` reads) and $OUT/bandit_work.tar.gz (each agent's run
#    CSV, curves and log). Programs still running at the limit are lost (their checkpoints stay on the machine).
# Here, after the call:
#   python -m jtk.testbed.bandit_study --preset figs89 --import-log bandit_gpu_log.txt --report-only
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/jtk-gpu}
LIMIT=${LIMIT:-390}  # seconds for the whole script
WORK=${WORK:-/tmp/gpu_lease}
START=$(date +%s)
left() { echo $(( LIMIT - ($(date +%s) - START) )); }
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 JAX_PLATFORMS=${JAX_PLATFORMS:-cuda}
PY=${PYTHON:-python3}
LOG=$OUT/gpu_lease_log.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used,utilization.gpu --format=csv
  "$PY" -c "import jax, jaxlib, optax, pandas, scipy, sklearn, tqdm; print('jax', jax.__version__, jaxlib.__version__, jax.devices())"
  echo "commit ${JTK_COMMIT:-unknown}, nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"; } 2>&1 | tee -a "$LOG"
DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)

# 1. The testbed through the CLI (the GPU to itself).
if [ "${SKIP_TESTBED:-0}" != 1 ]; then
  echo "=== $(date +%T) testbed rows ($(left) s left)" | tee -a "$LOG"
  "$PY" benchmarks/cli_speed.py --agent mlp --grid "${GRID:-paper}" --runs cold warm warm-nostore --tag gpu \
    --timeout 60 --out "$OUT/cli_speed_gpu.csv" >>"$LOG" 2>&1
  "$PY" benchmarks/cli_speed.py --agent ensemble+_K100 --grid "${GRID:-paper}" --runs cold warm --tag gpu \
    --timeout 60 --out "$OUT/cli_speed_gpu.csv" >>"$LOG" 2>&1
  cat "$OUT/cli_speed_gpu.csv" | tee -a "$LOG"
fi

# 2. The bandit, side by side until the limit.
export XLA_PYTHON_CLIENT_PREALLOCATE=false  # several processes share the GPU's memory
declare -A SEEDS_PER_PROGRAM=([mlp]=10 [dropout]=10 [bbb]=10 [hypermodel]=${HYPER_SEEDS:-3} [ensemble+]=1 [ensemble]=1)
pack() {
  { echo "# benchmarks/gpu_lease.sh LIMIT=$LIMIT, $(date -u +%F), commit ${JTK_COMMIT:-unknown}"
    echo "# device: ${DEVICE:-unknown}"; echo "# horizon: 50000"
    cat "$WORK"/*/log.txt 2>/dev/null | grep -E "^\S+ d = [0-9]+ seed [0-9]+ problems"; } \
    >"$OUT/bandit_gpu_log.txt.tmp" && mv "$OUT/bandit_gpu_log.txt.tmp" "$OUT/bandit_gpu_log.txt"
  tar czf "$OUT/bandit_work.tar.gz.tmp" -C "$WORK" --exclude=".bandit_paper_checkpoints" . 2>/dev/null &&
    mv "$OUT/bandit_work.tar.gz.tmp" "$OUT/bandit_work.tar.gz"
  true
}
budget=$(( $(left) - 15 ))
echo "=== $(date +%T) bandit, $budget s" | tee -a "$LOG"
pids=()
for agent in ${AGENTS:-mlp dropout bbb hypermodel ensemble+ ensemble}; do
  dir="$WORK/$agent"
  mkdir -p "$dir"
  cp benchmarks/results/bandit_paper_regret.csv "$dir/"
  timeout "$budget" "$PY" -m jtk.testbed.bandit_study --preset figs89 --agents "$agent" --runs-only \
    --seeds-per-program "${SEEDS_PER_PROGRAM[$agent]:-1}" --out-dir "$dir" ${BANDIT_ARGS:-} >"$dir/log.txt" 2>&1 &
  pids+=($!)
done
# The check: mlp seed 3 on the fixed problems 0-19 alone, then seeds 3 and 4 in one program, against the stored
# rows (an H100's, one seed per program): whether the GPU's rows depend on the program's batch, and on the GPU.
timeout "$budget" "$PY" - "${CHECK_HORIZON:-50000}" >"$WORK/check.txt" 2>&1 <<'PYEOF' &
import sys, time
import numpy as np, pandas as pd
from jtk.testbed import bandit
horizon = int(sys.argv[1])
stored = pd.read_csv("benchmarks/results/bandit_paper_regret.csv")
stored = stored[(stored.agent == "mlp") & (stored.input_dim == 50) & (stored.horizon == horizon)]
problems = bandit.make_problems(50, seeds=range(20))
for seeds in ([3], [3, 4]):
    t0 = time.perf_counter()
    results = bandit.run_seeds("mlp", seeds, problems, horizon=horizon, progress=False)
    for s, res in zip(seeds, results):
        old = stored[stored.agent_seed == s].sort_values("seed")
        if len(old) != 20:
            print(f"seeds {seeds}: seed {s} has no stored rows at T = {horizon}")
            continue
        diff = np.abs(res.total_regret - old.total_regret.to_numpy())
        print(f"check mlp seeds {seeds} (one program), seed {s}, d = 50, T = {horizon}, against {old.device.iloc[0]}: "
              f"{int((diff == 0).sum())}/20 identical, max |difference| {diff.max():.4g}; "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        print("  now   ", np.round(res.total_regret, 1).tolist())
        print("  stored", np.round(old.total_regret.to_numpy(), 1).tolist(), flush=True)
PYEOF
pids+=($!)
while kill -0 "${pids[@]}" 2>/dev/null; do
  sleep 20; pack
  echo "$(date +%T) $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)" >>"$LOG"
done
wait
pack
cp "$WORK/check.txt" "$OUT/" 2>/dev/null
{ echo "=== $(date +%T) done"; cat "$WORK/check.txt"; grep -c "total regret" "$OUT/bandit_gpu_log.txt"
  for agent in "$WORK"/*/; do echo "== $agent"; grep -E "total regret|Error|error|runs:" "$agent/log.txt" | tail -12; done
  } 2>&1 | tee -a "$LOG"
