#!/usr/bin/env bash
# Figs. 8/9 on a lent GPU (the project's device tool): the bandit at d = 50, T = 50 000 for the six agents of §5,
# the paper preset's 20 problems per run, initialisation seeds 0, 1, … as far as the time limit allows.
#
#   LIMIT=480 bash benchmarks/gpu_bandit.sh      # on the GPU machine, jtk from this checkout on PYTHONPATH
#
# One process per agent (they share the GPU; JAX does not preallocate its memory), each
# `bandit_study.py --preset paper --dims 50 --agents NAME --runs-only` in its own folder seeded with the stored
# bandit_paper_regret.csv, so it runs only the missing (seed, problem)s, seed by seed. Every 30 s and at the end
# $OUT/bandit_gpu_log.txt gathers every finished run's printed line under a '# device:' / '# horizon:' header (a
# few kB), and $OUT/gpu_bandit_curves.tar.gz the curves and logs; the checkpoints stay on the machine (they are
# MBs per run: packing them once made the archive too large to come back). Here:
#   python -m jtk.testbed.bandit_study --preset paper --dims 50 --import-log bandit_gpu_log.txt --report-only
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/jtk-gpu}
LIMIT=${LIMIT:-480}
WORK=${WORK:-/tmp/gpu_bandit}
mkdir -p "$OUT" "$WORK"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false JAX_PLATFORMS=${JAX_PLATFORMS:-cuda}
PY=${PYTHON:-python3}
{ nvidia-smi -L; "$PY" -c "import jax; print('jax', jax.__version__, jax.devices())"; } 2>&1 | tee "$WORK/gpu_log.txt"
DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
pack() {  # small files only: the run lines (what --import-log reads), then curves and logs
  { echo "# benchmarks/gpu_bandit.sh LIMIT=$LIMIT, $(date -u +%F)"; echo "# device: ${DEVICE:-unknown}"
    echo "# horizon: ${HORIZON:-50000}"; cat "$WORK"/*/log.txt 2>/dev/null | grep -E "^\S+ d = [0-9]+ seed [0-9]+ problems"; } \
    >"$OUT/bandit_gpu_log.txt.tmp" && mv "$OUT/bandit_gpu_log.txt.tmp" "$OUT/bandit_gpu_log.txt"
  tar czf "$OUT/gpu_bandit_curves.tar.gz.tmp" -C "$WORK" --exclude=".bandit_paper_checkpoints" . 2>/dev/null &&
    mv "$OUT/gpu_bandit_curves.tar.gz.tmp" "$OUT/gpu_bandit_curves.tar.gz"
  true
}
pids=()
for agent in ${AGENTS:-mlp dropout bbb hypermodel ensemble ensemble+}; do
  dir="$WORK/$agent"
  mkdir -p "$dir"
  cp benchmarks/results/bandit_paper_regret.csv "$dir/"
  timeout "$LIMIT" "$PY" -m jtk.testbed.bandit_study --preset paper --dims 50 --agents "$agent" --runs-only \
    --out-dir "$dir" ${EXTRA:-} >"$dir/log.txt" 2>&1 &
  pids+=($!)
done
while kill -0 "${pids[@]}" 2>/dev/null; do sleep 30; pack; nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader >>"$WORK/gpu_log.txt"; done
wait
pack
grep -c "total regret" "$OUT/bandit_gpu_log.txt"; ls -la "$OUT"
for agent in "$WORK"/*/; do echo "== $agent"; grep -E "Error|error" "$agent/log.txt" | tail -3; done
