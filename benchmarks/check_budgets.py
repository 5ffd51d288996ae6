"""The CPU time correct answers need per check call, against the budget `jtk grade` gives a check call.

    python benchmarks/check_budgets.py [--busy N] [--no-docs]
    python benchmarks/check_budgets.py --docs-only    # rewrite the docs section from the last run's CSV

Under ``jtk grade --timeout 30`` a check cell with a visible and a hidden call gives each call 10 CPU seconds
(``jtk.course._answers._Budget``): the student's function may run for 3 of them (``RUN_SHARE``), and JAX's tracing and
compilation are not counted, up to 30 s (the ``--timeout``) of them per call. The budget must let every correct
answer finish, however it is written, and stop an answer that loops as soon as it safely can: a looping notebook
costs its running share once per check cell. This script runs correct answers to every check under that budget:

* ``solution``: the answer cell of the notebook in solutions/;
* slower ways a student might write a correct answer: plain Python loops, JAX operations one at a time (each new
  shape compiles), ``jax.jit`` on the answer (it compiles again for every new shape of the cases).

Each answer runs in a fresh Python process with an empty compilation cache, as in a grading kernel
(``JTK_COMPILATION_CACHE=0``), first on the quiet machine and then beside ``--busy N`` processes that spin (default
2 × the cores). Per call (the visible and the hidden one) it measures CPU seconds from the first case to the last,
the compilation JAX reported, and what the budget counted: CPU seconds less the compilation credited.

It prints one row per check and answer: the slower call's figures quiet and busy, the cases passed in both runs
(an answer the budget stopped would show it), and the margin, the running share over the most the budget counted.
It writes benchmarks/results/grading/check_budgets.csv and the section ``check-budgets`` of docs/grading.md.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import subprocess
import sys
import time

import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks")]

from jtk._docs import DOCS, md_table, write_section  # noqa: E402
from busy_machine import Busy  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "grading" / "check_budgets.csv"
SOLUTIONS = ROOT / "solutions"

PREAMBLE = """
import functools
import math
import numpy as np
from scipy.special import log_softmax, logsumexp
import jax
import jax.numpy as jnp
import jtk
from jtk import nets
"""
X64 = "jax.config.update('jax_enable_x64', True)\n"  # the checks compare to 1e-8: float32 answers are wrong ones

SLOWER: dict[str, dict[str, str]] = {
    "coin_joint": {
        "jax, one operation at a time": X64 + """
def answer(biases, prior, flips):
    b, p = jnp.asarray(biases), jnp.asarray(prior)
    out = np.zeros((2,) * flips)
    for outcome in np.ndindex(*out.shape):
        heads = sum(outcome)
        out[outcome] = float(jnp.sum(p * b ** heads * (1 - b) ** (flips - heads)))
    return out
""",
        "jax.jit per shape": X64 + """
@functools.partial(jax.jit, static_argnums=2)
def _joint(b, p, flips):
    heads = sum(jnp.meshgrid(*[jnp.arange(2)] * flips, indexing="ij"))[..., None]
    return jnp.sum(p * b ** heads * (1 - b) ** (flips - heads), -1)

def answer(biases, prior, flips):
    return np.asarray(_joint(jnp.asarray(biases), jnp.asarray(prior), flips))
""",
    },
    "try_then_commit": {
        "python loops, flip by flip": """
def answer(biases, prior, horizon):
    value = sum(p * b for b, p in zip(biases, prior))
    for first in (1, 0):
        like = [p * (b if first else 1 - b) for b, p in zip(biases, prior)]
        z = sum(like)
        if z == 0:
            continue
        post = [w / z for w in like]
        for _ in range(horizon - 1):  # each later flip: the better of the coin and the sure 0.5
            value += z * max(sum(w * b for w, b in zip(post, biases)), 0.5)
    return value
""",
    },
    "joint_log_likelihood": {
        "python loops": """
def answer(logits, y):
    per_sample = []
    for m in range(logits.shape[0]):
        total = 0.0
        for t in range(logits.shape[1]):
            row = [float(v) for v in logits[m, t]]
            top = max(row)
            total += row[int(y[t])] - top - math.log(sum(math.exp(v - top) for v in row))
        per_sample.append(total)
    top = max(per_sample)
    return top + math.log(sum(math.exp(v - top) for v in per_sample) / len(per_sample))
""",
        "jax, one operation at a time": X64 + """
def answer(logits, y):
    log_p = jax.nn.log_softmax(jnp.asarray(logits), axis=-1)
    per_sample = jnp.take_along_axis(log_p, jnp.asarray(y)[None, :, None], -1)[..., 0].sum(-1)
    return float(jax.scipy.special.logsumexp(per_sample) - jnp.log(per_sample.shape[0]))
""",
        "jax.jit per shape": X64 + """
@jax.jit
def _jll(logits, y):
    log_p = jax.nn.log_softmax(logits, axis=-1)
    per_sample = jnp.take_along_axis(log_p, y[None, :, None], -1)[..., 0].sum(-1)
    return jax.scipy.special.logsumexp(per_sample) - jnp.log(per_sample.shape[0])

def answer(logits, y):
    return float(_jll(jnp.asarray(logits), jnp.asarray(y)))
""",
    },
    "prior_member": {
        "numpy": """
def _mlp(params, x):
    for i, (w, b) in enumerate(params):
        x = x @ w + b
        if i < len(params) - 1:
            x = np.maximum(x, 0)
    return x

def answer(params, prior_params, x, prior_scale):
    return _mlp(params, x) + prior_scale * _mlp(prior_params, x)
""",
        "jax.jit per shape": """
@jax.jit
def answer(params, prior_params, x, prior_scale):
    return nets.mlp_apply(params, x) + prior_scale * nets.mlp_apply(prior_params, x)
""",
    },
    "blr_posterior": {
        "python loops (Gauss-Jordan)": """
def answer(phi, y, noise_std):
    n, p = phi.shape
    gram = [[sum(phi[k, i] * phi[k, j] for k in range(n)) for j in range(p)] for i in range(p)]
    aug = [row[:] + [1.0 if i == j else 0.0 for j in range(p)] for i, row in enumerate(gram)]
    for c in range(p):
        pivot = max(range(c, p), key=lambda r: abs(aug[r][c]))
        aug[c], aug[pivot] = aug[pivot], aug[c]
        lead = aug[c][c]
        aug[c] = [v / lead for v in aug[c]]
        for r in range(p):
            if r != c:
                f = aug[r][c]
                aug[r] = [a - f * b for a, b in zip(aug[r], aug[c])]
    inv = np.array([row[p:] for row in aug])
    return inv @ phi.T @ y, noise_std ** 2 * inv
""",
        "jax, one operation at a time": X64 + """
def answer(phi, y, noise_std):
    phi = jnp.asarray(phi)
    gram_inv = jnp.linalg.inv(phi.T @ phi)
    return np.asarray(gram_inv @ phi.T @ jnp.asarray(y)), np.asarray(noise_std ** 2 * gram_inv)
""",
    },
    "batch_mig_step": {
        "jax, one operation at a time": X64 + """
def answer(cov, chosen, pool, test, noise_var):
    cov = jnp.asarray(cov)
    test = jnp.asarray(test)
    best, best_score = None, -np.inf
    for p in pool:
        if p in chosen:
            continue
        s = jnp.asarray(list(chosen) + [int(p)])
        sig_ss = cov[s[:, None], s[None, :]] + noise_var * jnp.eye(len(s))
        sig_us = cov[test[:, None], s[None, :]]
        rho2 = jnp.sum(sig_us * jnp.linalg.solve(sig_ss, sig_us.T).T, -1) / jnp.diag(cov)[test]
        score = float(-jnp.log1p(-rho2).sum())
        if score > best_score:
            best, best_score = int(p), score
    return best
""",
    },
    "thompson_action": {
        "jax.random per seed": """
def answer(member_logits, seed):
    k = int(jax.random.randint(jax.random.key(seed), (), 0, len(member_logits)))
    logits = jnp.asarray(member_logits[k])
    return int(jnp.argmax(jax.nn.sigmoid(logits[:, 1] - logits[:, 0])))
""",
    },
}
"""Correct answers to every check written in slower ways than the solution, by check name and how they are written
(the code defines ``answer``)."""


def solutions() -> dict[str, str]:
    """The answer cells of the notebooks in solutions/ by check name, each ending with ``answer = <its function>``."""
    import nbformat

    from jtk.course import exercises

    out = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source
                 for c in nbformat.read(path, as_version=4).cells}
        for check in exercises.load_source(path).checks:
            name = check.calls[0][0]
            function = re.search(rf"check_{name}\((\w+)", check.code).group(1)
            out[name] = f"{cells[check.after]}\nanswer = {function}\n"
    return out


def answers() -> dict[str, dict[str, str]]:
    """Every answer the script measures: the solution, then the slower ways, by check name."""
    return {name: {"solution": code, **SLOWER.get(name, {})} for name, code in solutions().items()}

ONE = """
import json, sys, time
{preamble}
{answer}
from jtk.course import _answers, _judge
check = _judge.check_by_name({name!r})
calls = []
for hidden in (False, True):
    cases = _judge.cases({name!r}, 7, hidden)
    with _answers._Budget({seconds}, {compile_seconds}) as budget:
        answers = [_answers.capture(answer, args, budget, check.forbidden, check.seeds) for args in cases]
        cpu, counted = time.process_time() - budget.start, budget.used()
    result = _judge.judge({name!r}, cases, [_answers.encode(a) for a in answers], hidden)
    calls.append({{"cpu_s": cpu, "compile_s": budget.compiled, "counted_s": counted, "passed": result.passed,
                  "total": result.total}})
print(json.dumps(calls))
"""

TIMEOUT = 30.0
"""``jtk grade --timeout``: the compilation credited per check call."""
CALL_SECONDS = TIMEOUT / 3
"""A check call's seconds under ``jtk grade --timeout 30`` (a cell with a visible and a hidden call)."""


def measure(name: str, answer: str) -> dict:
    """The visible and the hidden call of check ``name`` on ``answer`` under the budget, in a fresh process: the
    slower call's CPU, compile and counted seconds, and the cases passed in both."""
    code = ONE.format(preamble=PREAMBLE, answer=answer, name=name, seconds=CALL_SECONDS, compile_seconds=TIMEOUT)
    env = {**os.environ, "JTK_COMPILATION_CACHE": "0", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{name}: the answer crashed:\n{done.stderr[-3000:]}")
    calls = json.loads(done.stdout.strip().splitlines()[-1])
    slower = max(calls, key=lambda c: c["cpu_s"])
    return {"cpu_s": slower["cpu_s"], "compile_s": slower["compile_s"],
            "counted_s": max(c["counted_s"] for c in calls),
            "passed": f"{sum(c['passed'] for c in calls)}/{sum(c['total'] for c in calls)}"}


def write_docs(df: pd.DataFrame, busy: int) -> None:
    """Writes the section ``check-budgets`` of docs/grading.md from the measured rows."""
    from jtk.course import _answers

    run_share, load = _answers.RUN_SHARE * CALL_SECONDS, df.busy_load.dropna().iloc[-1]
    head = (f"`python benchmarks/check_budgets.py` on {os.cpu_count()} cores "
            f"({platform.processor() or platform.machine()}), {time.strftime('%Y-%m-%d')}: each answer in a fresh "
            f"process with an empty compilation cache, under the budget of `jtk grade --timeout 30` "
            f"({CALL_SECONDS:g} s per call: {run_share:g} s of running, up to {TIMEOUT:g} s of compilation "
            f"credited), on the quiet machine and beside {busy} busy processes (load average {load:.1f} at the "
            f"end). Per answer, the slower of its two calls in seconds: `cpu` (CPU time), `compile` (the compilation "
            f"JAX reported, in wall-clock time, which a busy machine stretches) and `counted` (what the budget "
            f"counted: CPU time less the compilation credited; below 0 when the credit is larger). `passed`: cases "
            f"passed in both calls, quiet / busy. `margin`: the running share over the larger `counted`.\n\n")
    shown = pd.DataFrame({
        "check": df.check, "answer": df.answer,
        **{f"{which} {what}": df[f"{which}_{what}_s"].map(lambda v: f"{v:.3f}")
           for which in ("quiet", "busy") for what in ("cpu", "compile", "counted")},
        "passed": df.quiet_passed + " / " + df.busy_passed,
        "margin": df.margin.map(lambda m: "> 1000" if m > 1000 else f"{m:.1f}")})
    write_section("check-budgets", head + md_table(shown, index=False) + "\n\n" + summary(df), DOCS / "grading.md")


def summary(df: pd.DataFrame) -> str:
    """What the table says, in numbers: the smallest margin, the growth of CPU time under load, and the margin the
    slowest answer had under the budget before this one (CALL_SECONDS of CPU time, compilation counted)."""
    passed = bool((_all_passed(df.quiet_passed) & _all_passed(df.busy_passed)).all())
    low = df.loc[df.margin.idxmin()]
    slow = df[df.quiet_cpu_s > 0.1]
    growth = slow.busy_cpu_s / slow.quiet_cpu_s
    grew = slow.loc[growth.idxmax()]
    worst = df.loc[df.busy_cpu_s.idxmax()]
    return (f"{'Every answer passed every case' if passed else 'NOT every answer passed every case'} under the "
            f"budget, quiet and busy. The smallest margin is {low.margin:.1f} ({low.check}, {low.answer}: "
            f"{low.quiet_counted_s:.2f} s counted quiet, of {low.quiet_cpu_s:.2f} s of CPU time). Beside the busy "
            f"processes the CPU time of an answer that takes more than 0.1 s grew by up to "
            f"{100 * (growth.max() - 1):.0f} % ({grew.check}, {grew.answer}: {grew.quiet_cpu_s:.2f} → "
            f"{grew.busy_cpu_s:.2f} s). Under the budget before this one, {CALL_SECONDS:g} s of CPU time per call "
            f"with compilation counted, the slowest answer ({worst.check}, {worst.answer}) would have had a margin "
            f"of {CALL_SECONDS / worst.busy_cpu_s:.1f} beside the busy processes.")


def _all_passed(column: pd.Series) -> pd.Series:
    parts = column.str.split("/")
    return parts.str[0] == parts.str[1]


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", type=int, default=2 * (os.cpu_count() or 1),
                        help="processes spinning beside the measurements (default 2 × the cores; 0: none)")
    parser.add_argument("--no-docs", action="store_true", help="do not rewrite docs/grading.md")
    parser.add_argument("--docs-only", action="store_true", help="rewrite the docs section from the last run's CSV")
    args = parser.parse_args(argv)
    if args.docs_only:
        write_docs(pd.read_csv(OUT), args.busy)
        return pd.read_csv(OUT)

    from jtk.course import _answers

    run_share, rows = _answers.RUN_SHARE * CALL_SECONDS, []
    for condition, busy in (("quiet", 0), ("busy", args.busy)):
        with Busy(busy):
            for name, ways in answers().items():
                for how, answer in ways.items():
                    got = measure(name, answer)
                    row = next((r for r in rows if r["check"] == name and r["answer"] == how), None)
                    if row is None:
                        rows.append(row := {"check": name, "answer": how})
                    row.update({f"{condition}_{key}": value for key, value in got.items()})
                    print(condition, name, how, got, flush=True)
    for row in rows:
        row["busy_load"] = round(os.getloadavg()[0], 1) if row is rows[-1] else None
        counted = max(row["quiet_counted_s"], row["busy_counted_s"])
        row["margin"] = round(run_share / counted, 1) if counted > 0.001 else float("inf")
    df = pd.DataFrame(rows)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(OUT, index=False)
    print(df.to_string(index=False))
    failed = df[~(_all_passed(df.quiet_passed) & _all_passed(df.busy_passed))]
    print(f"wrote {OUT}; smallest margin {df.margin.min()}; correct answers the budget stopped: {len(failed)}")
    if not args.no_docs:
        write_docs(df, args.busy)
    return df


if __name__ == "__main__":
    main()
