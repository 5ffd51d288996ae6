"""Testbed speed: the full 420-problem paper grid per agent, on this machine.

    python benchmarks/testbed_speed.py                      # mlp, ensemble+ K=10, ensemble+ K=100
    python benchmarks/testbed_speed.py --agents mlp --grid quick

For each agent it runs the grid twice, each time in a fresh subprocess (so peak
memory and compile counts are its own): first with an empty persistent
compilation cache ("cold"), then with the cache the first run filled ("warm").
It prints: wall time of the grid, seconds per problem split into
train and eval, total XLA compile time and number of compilations, the seconds
JAX spends tracing and lowering the programs (Python work the persistent cache
does not save: most of what a warm run adds to the running), peak resident
memory, the leaderboard row, and whether a new num_train or a new temperature
recompiles (it evaluates one extra problem with unseen values and counts
compilations). Per-problem rows go to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
# The reference implementation's own mlp agent on the full paper grid, run on this project's 2-core machine
# (docs/researchers.md, the reproduction table): every figure here is also printed as a ratio to it.
REFERENCE_MLP_GRID_S = 2047.0
# The label of each stored table (testbed_speed_GRID[_TAG].csv) in docs/results.md.
MACHINES = {
    "amd": "2 CPU cores, AMD EPYC with AVX-512 (the project's machine since 2026-11-27), after #31",
    "": "2 CPU cores, Intel Xeon with AVX-512 (the project's machine on 2026-11-26), after #31",
    "intel-evening": "the same machine and code, a slower evening (2026-11-26; e88fd6d, which measured the mlp "
                     "rows above, re-run beside it: 8.4 s cold, 5.6 s warm)",
    "intel-before": "the same Intel machine before #31 (commit 1c5c62e)",
    "amd-before": "2 CPU cores, AMD EPYC (the project's machine until 2026-11-25), before #31",
    "h100": "NVIDIA H100 (JAX_PLATFORMS=cuda), before #31",
    "h200": "NVIDIA H200 machine 2 (JAX_PLATFORMS=cuda), jtk's GPU path: no autotuning, cuBLAS products, the "
            "grid's programs compiled side by side before the run (2026-11-27)",
    "h200-base": "NVIDIA H200 machine 1 (2026-11-27), XLA's default options, each program compiled on its first call",
    "h200-at0": "NVIDIA H200 machine 1, autotuning off (`xla_gpu_autotune_level` 0), compiled on first call",
    "h200-at0nt": "NVIDIA H200 machine 1, autotuning off and cuBLAS products (`xla_gpu_enable_triton_gemm` false), "
                  "compiled on first call",
    "h200-at0nt-t2": "NVIDIA H200 machine 1, autotuning off and cuBLAS products, two testbed threads (`JTK_THREADS=2`)",
    "h200-at0nt-wide": "NVIDIA H200 machine 1, autotuning off and cuBLAS products, chunks of up to 16 384 member "
                       "trainings (`--patch jtk.testbed.engine.MEMBERS_PER_CHUNK=16384`, 8 × the default)",
}
GPU_TAGS = ("h200", "h200-base", "h200-at0", "h200-at0nt", "h200-at0nt-t2", "h200-at0nt-wide")  # docs/platforms.md
AGENTS = {
    "mlp": ("mlp", {}),
    "ensemble+_K10": ("ensemble+", {"num_members": 10}),
    "ensemble+_K100": ("ensemble+", {"num_members": 100}),
}


def _patch(settings: list[str]) -> None:
    """``--patch MODULE.NAME=VALUE``: sets a module constant of jtk in the child before the run (a trial of another
    chunk bound, say, without editing the library); VALUE is a Python literal."""
    import ast
    import importlib

    for setting in settings:
        target, _, value = setting.partition("=")
        module, _, name = target.rpartition(".")
        mod = importlib.import_module(module)
        if not hasattr(mod, name):
            raise SystemExit(f"--patch {setting!r}: {module} has no {name}")
        setattr(mod, name, ast.literal_eval(value))


def _run_one(label: str, grid: str, new_grid: bool = True, tag: str = "", patch: tuple = ()) -> dict:
    import jax
    from jax import monitoring

    import jtk
    from jtk import _compile, executors, testbed
    from jtk.testbed import engine

    compile_s = [0.0, 0]
    python_s = {"trace": 0.0, "lower": 0.0}  # JAX's own Python work before XLA: the persistent cache cannot skip it
    by_program: dict[str, float] = {}  # XLA compile seconds per program name (the costliest are printed)

    def listener(event, duration, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compile_s[0] += duration
            compile_s[1] += 1
            name = str(kw.get("fun_name", "?"))
            by_program[name] = by_program.get(name, 0.0) + duration
        elif event == "/jax/core/compile/jaxpr_trace_duration":
            python_s["trace"] += duration
        elif event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
            python_s["lower"] += duration

    monitoring.register_event_duration_secs_listener(listener)
    _patch(list(patch))
    name, kw = AGENTS[label]
    agent = jtk.agents.make(name, **kw)
    problems = testbed.problems(grid)
    start = time.perf_counter()
    df = testbed.evaluate(agent, problems, name=label, progress=True)
    wall = time.perf_counter() - start
    grid_compiles = compile_s[1]
    grid_python_s, grid_compile_s = dict(python_s), compile_s[0]
    costliest = sorted(by_program.items(), key=lambda kv: -kv[1])[:6]
    RESULTS.mkdir(exist_ok=True)
    df.to_csv(RESULTS / f"testbed_{label}_{grid}{'_' + tag if tag else ''}.csv", index=False)

    # Recompilation check: a new grid of unseen temperatures and num_train values (in the
    # largest minibatch bucket, as num_train ∈ {100, 300, 1000} of the paper grid) and new seeds.
    before = compile_s[1]
    extra = testbed.grid(temperatures=(0.02, 0.2, 0.7), num_train=(150, 250, 700), seeds=range(10, 20))
    start_extra = time.perf_counter()
    if new_grid:
        testbed.evaluate(agent, extra, name=label, progress=False)
    extra_s = time.perf_counter() - start_extra if new_grid else None
    new_compiles = compile_s[1] - before if new_grid else None
    summary = testbed.summarize(df).iloc[0]
    from training_flops import grid_training_flops  # benchmarks/ is this script's directory

    return {"training_gflop": round(grid_training_flops(agent, problems) / 1e9, 2),
        "agent": label, "grid": grid, "problems": len(df), "wall_s": round(wall, 1),
        "train_s_per_problem": round(df.train_seconds.sum() / len(df), 3),
        "eval_s_per_problem": round(df.eval_seconds.sum() / len(df), 3),
        "compile_s": round(grid_compile_s, 1), "compilations": grid_compiles,
        "trace_s": round(grid_python_s["trace"], 2), "lower_s": round(grid_python_s["lower"], 2),
        "recompiles_for_new_num_train_and_temperature": new_compiles,
        "new_grid_problems": len(extra) if new_grid else 0, "new_grid_wall_s": extra_s and round(extra_s, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "kl_1": round(summary.kl_1, 4), "kl_1_se": round(summary.kl_1_se, 4),
        "kl_10": round(summary.kl_10, 4), "kl_10_se": round(summary.kl_10_se, 4),
        "accuracy": round(summary.accuracy, 3), "ece": round(summary.ece, 3),
        "jax": jax.__version__, "cpus": os.cpu_count(),
        "device": f"{jax.default_backend()}: {jax.devices()[0].device_kind}",
        "threads": executors.local_threads(len(engine.make_chunks(problems, agent)), [agent]),
        "compiler_options": json.dumps(_compile.compiler_options(True) or {}, sort_keys=True),
        "costliest_compiles": "; ".join(f"{k} {v:.2f} s" for k, v in costliest),
        "patch": " ".join(patch),
        "compiles_ahead": testbed.compiles_ahead(),
    }


def write_docs(grid: str) -> None:
    """Writes :func:`doc_tables` into their sections of docs/."""
    from jtk._docs import write_section

    for name, (text, path) in doc_tables(grid).items():
        write_section(name, text, path)


def doc_tables(grid: str) -> dict:
    """Section name → (text, document) of the tables made from the stored ``testbed_speed_GRID*.csv``: every cold /
    warm row in docs/results.md, and for the paper grid the GPU rows (:data:`GPU_TAGS`) in docs/platforms.md."""
    from jtk._docs import DOCS

    tables = {f"testbed-speed-{grid}": (_speed_table(grid), DOCS / "results.md")}
    if grid == "paper":
        tables["gpu-paper-grid"] = (_gpu_table(), DOCS / "platforms.md")
    return tables


def _speed_table(grid: str) -> str:
    import pandas as pd

    lines = [f"## Testbed speed: grid `{grid}`", "",
             f"`python benchmarks/testbed_speed.py --grid {grid}` (one fresh process per row; cold = empty compilation "
             "cache, warm = the cache the cold run filled). d_KL ± the standard error each run printed: the seed-mean one "
             "(`summarize`'s default) on the CPU; the H100 rows predate that default and show the per-environment one. "
             "On the CPU the chunks run one per core in threads (`jtk.executors.local_threads`), so train and eval "
             "seconds per problem are each thread's own time and add up to more than the wall time; on a GPU one chunk "
             "runs at a time, and in the `h200` rows after the grid's programs compiled side by side, so their train "
             "and eval seconds hold no compile time. "
             "Regenerate this table with `python benchmarks/testbed_speed.py --grid " + grid + " --docs`.", "",
             "Two ratios put each wall time in context: the reference implementation's mlp on the same grid took "
             f"{REFERENCE_MLP_GRID_S:.0f} s on the project's 2-core AMD EPYC machine (docs/researchers.md; not re-run on "
             "the Intel one, so its rows' ratio mixes two machines), and the *FLOP floor* is the "
             "grid's training FLOPs (`benchmarks/training_flops.py`'s count, padding included) at the machine's "
             "float32 2048 × 2048 matrix-product rate, measured before the runs: no run can train faster.", "",
             "*Trace + lower* is JAX's own Python work before XLA sees a program: tracing the functions into a jaxpr "
             "and lowering it to a StableHLO module, in every fresh process, warm or cold: the persistent compilation "
             "cache is keyed by that module, so it saves XLA's compile only. It holds the Python interpreter lock, "
             "so the two threads do it one at a time; it is not measured in the older rows.", "",
             "| machine | agent | cache | wall | × reference mlp grid | FLOP floor (wall ÷ floor) | XLA compile | "
             "trace + lower | train s / problem | eval s / problem | d_KL^1 | d_KL^10 | JAX |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    tags = [path.stem[len(f"testbed_speed_{grid}"):].lstrip("_") for path in RESULTS.glob(f"testbed_speed_{grid}*.csv")]
    order = list(MACHINES)  # the machines in MACHINES' order, then any others by name
    for tag in sorted(tags, key=lambda t: (order.index(t) if t in order else len(order), t)):
        path = RESULTS / (f"testbed_speed_{grid}_{tag}.csv" if tag else f"testbed_speed_{grid}.csv")
        machine = MACHINES.get(tag, tag)
        table = pd.read_csv(path, index_col=0)
        table = table[table.get("compilation_cache").notna()]
        rank = [(list(AGENTS).index(a) if a in AGENTS else len(AGENTS), c) for a, c in
                zip(table.agent, table.compilation_cache)]
        for _, r in table.iloc[sorted(range(len(table)), key=rank.__getitem__)].iterrows():  # agents in AGENTS' order
            ratio = f"{REFERENCE_MLP_GRID_S / r.wall_s:.0f}×"
            floor_s = r.get("training_gflop", float("nan")) / r.get("matrix_gflops_per_s", float("nan"))
            floor = f"{floor_s:.3g} s ({r.wall_s / floor_s:.0f}×)" if pd.notna(floor_s) else "not measured"
            python = (f"{r.trace_s:.2f} + {r.lower_s:.2f} s" if pd.notna(r.get("trace_s", float("nan")))
                      else "not measured")
            lines.append(f"| {machine} | {r.agent} | {r.compilation_cache} | {r.wall_s:.1f} s | {ratio} | {floor} | {r.compile_s:.1f} s "
                         f"({int(r.compilations)} programs) | {python} | {r.train_s_per_problem:.3f} | {r.eval_s_per_problem:.3f} | "
                         f"{r.kl_1:.4f} ± {r.kl_1_se:.4f} | {r.kl_10:.4f} ± {r.kl_10_se:.4f} | {r.jax} |")
    return "\n".join(lines)


def _gpu_table() -> str:
    """The GPU rows (:data:`GPU_TAGS`), shorter, for docs/platforms.md, "The paper grid on a GPU"."""
    import pandas as pd

    lines = ["| setting | agent | cache | wall | XLA compile (summed over threads) | trace + lower | train s / problem | "
             "eval s / problem | d_KL^1 | d_KL^10 | peak RSS |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for tag in GPU_TAGS:
        path = RESULTS / f"testbed_speed_paper_{tag}.csv"
        if not path.exists():
            continue
        for _, r in pd.read_csv(path, index_col=0).iterrows():
            lines.append(f"| {MACHINES[tag]} | {r.agent} | {r.compilation_cache} | {r.wall_s:.1f} s | {r.compile_s:.1f} s "
                         f"({int(r.compilations)} programs) | {r.trace_s:.2f} + {r.lower_s:.2f} s | "
                         f"{r.train_s_per_problem:.3f} | {r.eval_s_per_problem:.3f} | {r.kl_1:.4f} ± {r.kl_1_se:.4f} | "
                         f"{r.kl_10:.4f} ± {r.kl_10_se:.4f} | {r.peak_rss_mb / 1024:.1f} GB |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="+", default=list(AGENTS), choices=list(AGENTS))
    parser.add_argument("--grid", default="paper", choices=["paper", "quick"])
    parser.add_argument("--cold-only", action="store_true", help="skip the warm-cache rerun")
    parser.add_argument("--no-new-grid", action="store_true",
                        help="skip the recompilation check on 180 problems with unseen settings (ensemble+ K = 100: 6 min)")
    parser.add_argument("--tag", default="", help="suffix of the results CSV, e.g. h100 (testbed_speed_GRID_TAG.csv)")
    parser.add_argument("--docs", action="store_true",
                        help="no run: write the table of the stored CSVs into docs/results.md (its own section)")
    parser.add_argument("--patch", nargs="*", default=[], metavar="MODULE.NAME=VALUE",
                        help="set a jtk module constant in each run, e.g. jtk.testbed.engine.MEMBERS_PER_CHUNK=8192")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.docs:
        write_docs(args.grid)
        return
    if args.child:
        print("RESULT " + json.dumps(_run_one(args.child, args.grid, not args.no_new_grid, args.tag, args.patch)),
              flush=True)
        return
    # This process measures the matrix rate on the device and then only waits: on a GPU it must not take the
    # three quarters of the device's memory that JAX allocates up front by default, which the runs need.
    own_preallocation = "XLA_PYTHON_CLIENT_PREALLOCATE" not in os.environ
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    from jtk._info import gemm_gflops

    matrix_rate = gemm_gflops()  # GFLOP/s of a float32 2048 × 2048 product here, before the runs
    rows = []
    for label in args.agents:
        with tempfile.TemporaryDirectory() as cache:  # cold: empty compilation cache; warm: filled by cold
            for cache_state in ("cold",) if args.cold_only else ("cold", "warm"):
                env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"), "JTK_CACHE_DIR": cache}
                if own_preallocation:
                    env.pop("XLA_PYTHON_CLIENT_PREALLOCATE")  # the runs allocate as a user's would
                proc = subprocess.run([sys.executable, __file__, "--child", label, "--grid", args.grid, "--tag", args.tag,
                                       *(["--no-new-grid"] if args.no_new_grid else []),
                                       *(["--patch", *args.patch] if args.patch else [])],
                                      capture_output=True, text=True, env=env)
                line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
                if proc.returncode or not line:
                    print(proc.stdout, proc.stderr, file=sys.stderr)
                    raise SystemExit(f"benchmark for {label} failed")
                row = json.loads(line[0][7:])
                floor = row["training_gflop"] / matrix_rate  # all training FLOPs at the matrix-product rate
                rows.append({**row, "compilation_cache": cache_state, "load_avg_1min_end": round(os.getloadavg()[0], 2),
                             "matrix_gflops_per_s": round(matrix_rate, 1), "flop_floor_s": float(f"{floor:.3g}"),
                             "wall_over_flop_floor": round(row["wall_s"] / floor, 1),
                             "reference_mlp_grid_over_wall": round(REFERENCE_MLP_GRID_S / row["wall_s"], 1)})
                print(json.dumps(rows[-1]), flush=True)
    import pandas as pd

    table = pd.DataFrame(rows)
    table.index = table.agent + " (" + table.compilation_cache + " cache)"
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"testbed_speed_{args.grid}{'_' + args.tag if args.tag else ''}.csv"
    if out.exists():  # keep the rows of agents not rerun this time
        old = pd.read_csv(out, index_col=0)
        table = pd.concat([old[~old.index.isin(table.index)], table])
    table.to_csv(out)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(table.T.to_string())


if __name__ == "__main__":
    main()
