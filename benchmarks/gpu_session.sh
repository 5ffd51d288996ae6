#!/usr/bin/env bash
# The GPU figures of docs/platforms.md ("The paper grid on a GPU"), made in one call of a lent GPU machine (the
# project's device tool; a bare machine with its own CUDA JAX, jtk from this checkout on PYTHONPATH):
#
#   bash benchmarks/gpu_session.sh probe    # compiler options, threads and chunk width, mlp and ensemble+ K = 100
#   bash benchmarks/gpu_session.sh final    # the chosen defaults: cold / warm rows and the whole zoo
#   bash benchmarks/gpu_session.sh split    # jtk.testbed.engine.SPLIT_BRANCHES_AHEAD against the default, same machine
#
# Every run is benchmarks/testbed_speed.py (or python -m jtk.testbed.zoo) with a tag; results go to benchmarks/results/ and are
# packed after each run into $OUT/gpu_results.tar.gz with the log, so a run cut off by its time limit keeps the rest.
# The probe's stored rows ("compiled on first call") were measured before the testbed compiled a grid's programs
# ahead on a GPU: run `probe` at commit 70c309a to reproduce them; at later commits it measures the settings with it.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/jtk-gpu}
mkdir -p "$OUT"
export JAX_PLATFORMS=${JAX_PLATFORMS:-cuda} PYTHONPATH=$PWD PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOG=$OUT/gpu_log.txt
AT0='{"xla_gpu_autotune_level": 0}'
AT0NT='{"xla_gpu_autotune_level": 0, "xla_gpu_enable_triton_gemm": false}'
# An option this jaxlib refuses would fail every run that names it: check each once, fall back to autotuning off alone.
"$PY" -c "from jtk import _compile; import sys; sys.exit(not _compile._accepted('xla_gpu_enable_triton_gemm', False))" ||
  { echo "xla_gpu_enable_triton_gemm refused" | tee -a "$LOG"; AT0NT=$AT0; }

pack() { tar czf "$OUT/gpu_results.tar.gz" benchmarks/results/*h200* benchmarks/results/*h100x* 2>/dev/null; true; }
speed() {  # speed SECONDS TAG [ENV=VALUE ...] -- testbed_speed.py args
  local limit=$1 tag=$2; shift 2
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "=== $(date +%T) $tag ${envs[*]} $*" | tee -a "$LOG"
  env "${envs[@]}" timeout "$limit" "$PY" benchmarks/testbed_speed.py --grid "${GRID:-paper}" --tag "$tag" "$@" >>"$LOG" 2>&1 ||
    echo "=== $tag: exit $?" | tee -a "$LOG"
  pack
}
summary() {  # one line per run: the figures that decide
  "$PY" - <<'PYEOF'
import glob, pandas as pd
cols = ["wall_s", "compile_s", "compilations", "trace_s", "lower_s", "train_s_per_problem", "eval_s_per_problem",
        "kl_1", "kl_10", "peak_rss_mb", "threads", "costliest_compiles"]
for path in sorted(glob.glob("benchmarks/results/testbed_speed_*_h*.csv")):
    t = pd.read_csv(path, index_col=0)
    for name, r in t.iterrows():
        print(path.split("testbed_speed_")[1][:-4], name, " ".join(f"{c}={r[c]}" for c in cols if c in r))
PYEOF
}

{ nvidia-smi -L; "$PY" -c "import jax, optax, pandas, sklearn; print('jax', jax.__version__, jax.devices())"; } 2>&1 | tee -a "$LOG"
tagdev=$(nvidia-smi -L 2>/dev/null | grep -q H200 && echo h200 || echo h100x)

case "${1:-probe}" in
  probe)
    speed 150 "${tagdev}-at0nt" JTK_COMPILER_OPTIONS="$AT0NT" -- --agents mlp --no-new-grid
    speed 120 "${tagdev}-base" JTK_FAST_COMPILE=0 -- --agents mlp --cold-only --no-new-grid
    speed 120 "${tagdev}-at0nt" JTK_COMPILER_OPTIONS="$AT0NT" -- --agents ensemble+_K100 --cold-only --no-new-grid
    speed 90 "${tagdev}-at0nt-wide" JTK_COMPILER_OPTIONS="$AT0NT" -- --agents ensemble+_K100 --cold-only --no-new-grid \
      --patch jtk.testbed.engine.MEMBERS_PER_CHUNK=16384
    speed 60 "${tagdev}-at0nt-t2" JTK_COMPILER_OPTIONS="$AT0NT" JTK_THREADS=2 -- --agents mlp --cold-only --no-new-grid
    speed 60 "${tagdev}-at0" JTK_FAST_COMPILE=0 JTK_COMPILER_OPTIONS="$AT0" -- --agents mlp --cold-only --no-new-grid
    speed 120 "${tagdev}-base" JTK_FAST_COMPILE=0 -- --agents ensemble+_K100 --cold-only --no-new-grid
    ;;
  split)  # jtk.testbed.engine.SPLIT_BRANCHES_AHEAD: one training program per minibatch size, against jtk's path on the same machine
    speed 120 "${tagdev}-pair" -- --agents mlp --no-new-grid
    speed 120 "${tagdev}-split" -- --agents mlp --no-new-grid --patch jtk.testbed.engine.SPLIT_BRANCHES_AHEAD=True
    speed 90 "${tagdev}-pair" -- --agents ensemble+_K100 --cold-only --no-new-grid
    speed 90 "${tagdev}-split" -- --agents ensemble+_K100 --cold-only --no-new-grid \
      --patch jtk.testbed.engine.SPLIT_BRANCHES_AHEAD=True
    ;;
  final)
    speed 150 "$tagdev" -- --agents mlp
    speed 150 "$tagdev" -- --agents ensemble+_K100 --no-new-grid
    echo "=== $(date +%T) zoo (one process)" | tee -a "$LOG"
    start=$(date +%s)
    timeout "${ZOO_LIMIT:-240}" "$PY" -m jtk.testbed.zoo --grid paper --out-dir /tmp/zoo-gpu --agents \
      dropout bbb hypermodel sgmcmc deep_kernel epinet ensemble knn random_forest bayes_optimal 2>&1 |
      grep -v "^wrote" | tee -a "$LOG" | grep "problems in"
    echo "=== zoo: exit ${PIPESTATUS[0]}, $(( $(date +%s) - start )) s in all" | tee -a "$LOG"
    tar czf "$OUT/gpu_zoo.tar.gz" -C /tmp zoo-gpu
    pack
    ;;
esac
summary 2>&1 | tee "$OUT/gpu_summary.txt"
echo "=== $(date +%T) done" | tee -a "$LOG"
