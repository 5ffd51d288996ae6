"""A class of generated submissions graded by `jtk grade`: wall time, the CSV, and two regrades compared.

    python examples/grading_class.py [--students 30] [--workers 2] [--timeout 30] [--out benchmarks/results/grading]
    python examples/grading_class.py --per-notebook   # where a worker's time goes; writes docs/grading.md's section

Each student hands in all six exercises; student k's notebooks are, in turn, correct (the solution), wrong
(a typical misconception), tampered (check cell edited to print a pass line, and its points set to 100),
looping (an infinite loop in the answer) or crashing (os._exit in the answer), so every kind appears in every
exercise. The class is graded once with --feedback, then twice more; the script prints the wall times, the
score distribution per kind, the misconception summary, and whether the regrades' CSVs are byte-identical.
The notebooks and feedback pages go to a temporary directory; --out receives the CSVs and timings.csv, and the
section 'grading-class' of docs/grading.md the wall times and the share of the points by kind.

--per-notebook grades one notebook of each exercise and kind, one at a time in this process (no pool, so each wall
time is one worker's), writes per_notebook.csv to --out and the section 'grading-cost' of docs/grading.md: the cost
per kind and exercise, and what a class of --students costs a worker in all (each kind × exercise appears
students / 5 times).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import nbformat
import pandas as pd

from jtk._docs import DOCS, write_section

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
KINDS = ("correct", "wrong", "tampered", "looping", "crashing")
WRONG = {  # answer-cell bodies with a typical misconception, by exercise
    "01_coin_joint.ipynb": {"ex1a-answer": "def coin_joint(biases, prior, flips):\n"
                                           "    m = float(np.dot(prior, biases))\n"
                                           "    out = np.ones((2,) * flips)\n"
                                           "    for idx in np.ndindex(*out.shape):\n"
                                           "        out[idx] = np.prod([m if o else 1 - m for o in idx])\n"
                                           "    return out",
                            "ex1b-answer": "def try_then_commit_value(biases, prior, horizon):\n"
                                           "    return horizon * max(float(np.dot(prior, biases)), 0.5)"},
    "02_joint_log_likelihood.ipynb": {"ex2-answer": "def joint_log_likelihood(logits, y):\n"
                                                    "    lp = log_softmax(logits, -1)\n"
                                                    "    return np.take_along_axis(lp, y[None, :, None], -1)[..., 0]"
                                                    ".sum(-1).mean()"},
    "03_randomized_prior.ipynb": {"ex3-answer": "def member_logits(params, prior_params, x, prior_scale):\n"
                                                "    return nets.mlp_apply(params, x) + nets.mlp_apply(prior_params, x)"},
    "04_blr_anchor.ipynb": {"ex4-answer": "def blr_posterior(phi, y, noise_std):\n"
                                          "    g = np.linalg.inv(phi.T @ phi)\n"
                                          "    return g @ phi.T @ y, noise_std * g"},
    "05_batchmig_step.ipynb": {"ex5-answer": "def next_pick(cov, chosen, pool, test, noise_var):\n"
                                             "    rest = [p for p in pool if p not in chosen]\n"
                                             "    return rest[int(np.argmax(np.diag(cov)[rest]))]"},
    "06_thompson_step.ipynb": {"ex6-answer": "def thompson_action(member_logits, seed):\n"
                                             "    return int(np.argmax(member_logits.mean(0)[:, 1]))"},
}


def _cells(nb, key, value):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get(key) == value]


def make_submission(name: str, kind: str):
    if kind == "correct":
        return nbformat.read(SOLUTIONS / name, as_version=4)
    nb = nbformat.read(EXERCISES / name, as_version=4)
    solution = nbformat.read(SOLUTIONS / name, as_version=4)
    for cell in _cells(nb, "solution", True):
        gid = cell.metadata["nbgrader"]["grade_id"]
        right = next(c for c in solution.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid).source
        header = right.split("\n", 1)[0]  # def f(...):
        if kind == "wrong":
            cell.source = WRONG[name][gid]
        elif kind == "looping":
            cell.source = f"{header}\n    while True:\n        pass"
        elif kind == "crashing":
            cell.source = f"import os\n{header}\n    os._exit(1)"
        else:  # tampered: a wrong answer behind a check cell that prints a pass line
            cell.source = WRONG[name][gid]
    if kind == "tampered":
        for cell in _cells(nb, "grade", True):
            cell.source = 'print("✓ passed")'
            cell.metadata["nbgrader"]["points"] = 100
    return nb


def make_class(root: pathlib.Path, students: int) -> None:
    names = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))
    for k in range(students):
        folder = root / f"student{k:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for j, name in enumerate(names):
            nbformat.write(make_submission(name, KINDS[(k + j) % len(KINDS)]), folder / name)


def grade(root, csv, workers, timeout, feedback=None) -> float:
    command = [sys.executable, "-m", "jtk.cli", "grade", str(root), "--csv", str(csv), "--force", "--workers",
               str(workers), "--timeout", str(timeout), "--salt", "benchmark", "--source", str(SOLUTIONS)]
    if feedback:
        command += ["--feedback", str(feedback)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"jtk grade failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, os.getloadavg()[0]


def per_notebook(out: pathlib.Path, students: int, workers: int, timeout: int) -> None:
    """Wall seconds of grading one notebook per (exercise, kind), serially; the class's worker-seconds from them."""
    from jtk.course import exercises

    sources = exercises.load_sources(SOLUTIONS)
    mode = _sandbox_mode()
    work = pathlib.Path(tempfile.mkdtemp(prefix="jtk-cost-"))
    rows = []
    for name in sorted(sources):
        for kind in KINDS:
            path = work / kind / name
            path.parent.mkdir(exist_ok=True)
            nbformat.write(make_submission(name, kind), path)
            start = time.perf_counter()
            row = exercises.grade_notebook(exercises.Submission(student=kind, notebook=name, path=path), sources,
                                           timeout=timeout, sandbox=mode, salt="benchmark")
            rows.append({"notebook": name, "kind": kind, "wall_s": round(time.perf_counter() - start, 2),
                         "score": row["score"], "max_score": row["max_score"]})
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(out / "per_notebook.csv", index=False)
    wide = table.pivot(index="notebook", columns="kind", values="wall_s")[list(KINDS)]
    per_kind = wide.sum()
    repeats = students / len(KINDS)  # each exercise × kind, in a class of `students`
    total = per_kind.sum() * repeats
    lines = [f"`python examples/grading_class.py --per-notebook` ({len(os.sched_getaffinity(0))} cores, sandbox "
             f"`{mode}`, `--timeout {timeout}`, load average {os.getloadavg()[0]:.1f} at the end): wall seconds of "
             "grading one notebook, each alone in one worker; the kinds as in the class above.", "",
             "| notebook | " + " | ".join(KINDS) + " |", "|---|" + "---|" * len(KINDS)]
    lines += [f"| {nb} | " + " | ".join(f"{v:.1f}" for v in r) + " |" for nb, r in wide.iterrows()]
    lines += ["| all six | " + " | ".join(f"{v:.1f}" for v in per_kind) + " |", "",
              f"A class of {students} students holds each exercise × kind {repeats:g} times: "
              f"{total:.0f} worker-seconds, {total / workers:.0f} s of wall time with {workers} workers if they "
              f"share the work perfectly; the looping notebooks are {100 * per_kind['looping'] / per_kind.sum():.0f} % "
              "of it."]
    write_section("grading-cost", "\n".join(lines), DOCS / "grading.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=30)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "grading"))
    parser.add_argument("--per-notebook", action="store_true",
                        help="grade one notebook per exercise and kind, one at a time: where the time goes")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.per_notebook:
        per_notebook(out, args.students, args.workers, args.timeout)
        return
    work = pathlib.Path(tempfile.mkdtemp(prefix="jtk-class-"))  # the notebooks and feedback pages stay out of --out
    root = work / "class"
    make_class(root, args.students)
    (first, load1), (second, load2), (third, load3) = (
        grade(root, out / "grades.csv", args.workers, args.timeout, feedback=work / "feedback"),
        grade(root, out / "regrade1.csv", args.workers, args.timeout),
        grade(root, out / "regrade2.csv", args.workers, args.timeout))
    grades = pd.read_csv(out / "grades.csv")
    kinds = {f"student{k:02d}": k for k in range(args.students)}
    names = sorted(p.name for p in SOLUTIONS.glob("*.ipynb"))
    grades["kind"] = [KINDS[(kinds[s] + names.index(n)) % len(KINDS)] for s, n in zip(grades.student, grades.notebook)]
    print(f"{len(grades)} notebooks ({args.students} students x {len(names)} exercises), {args.workers} workers, "
          f"timeout {args.timeout} s")
    print(f"wall time: first grade {first:.0f} s (with feedback pages), regrades {second:.0f} s and {third:.0f} s")
    print("score / max_score by kind:")
    print((grades.groupby("kind").score.sum() / grades.groupby("kind").max_score.sum()).round(3).to_string())
    identical = filecmp.cmp(out / "regrade1.csv", out / "regrade2.csv", shallow=False) and filecmp.cmp(
        out / "grades.csv", out / "regrade1.csv", shallow=False)
    print(f"three grades byte-identical: {identical}")
    print(pd.read_csv(out / "grades.misconceptions.csv").to_string(index=False))
    (out / "timings.csv").write_text(pd.DataFrame(
        [{"notebooks": len(grades), "workers": args.workers, "timeout_s": args.timeout, "first_s": round(first, 1),
          "regrade1_s": round(second, 1), "regrade2_s": round(third, 1), "identical": identical}]).to_csv(index=False))
    print(f"feedback pages in {work / 'feedback'}; CSVs in {out}")
    share = (grades.groupby("kind").score.sum() / grades.groupby("kind").max_score.sum())[list(KINDS)]
    runs = [("first grade, with feedback pages", first, load1), ("regrade 1", second, load2),
            ("regrade 2", third, load3)]
    lines = [f"`python examples/grading_class.py` ({len(os.sched_getaffinity(0))} cores, "
             f"{time.strftime('%Y-%m-%d')}): {len(grades)} notebooks ({args.students} students × {len(names)} "
             f"exercises), `jtk grade --workers {args.workers} --timeout {args.timeout}`, sandbox "
             f"`{_sandbox_mode()}`. The load is the 1-minute load average at the end of each run.", "",
             "| run | wall time | load |", "|---|---|---|"]
    lines += [f"| {what} | {wall:.0f} s ({wall / 60:.1f} min) | {load:.1f} |" for what, wall, load in runs]
    lines += ["", f"The three CSVs are {'byte-identical' if identical else 'NOT identical'}. Share of the points "
              "by kind: " + ", ".join(f"{k} {v:.3f}" for k, v in share.items()) + "."]
    write_section("grading-class", "\n".join(lines), DOCS / "grading.md")


def _sandbox_mode() -> str:
    from jtk.course import sandbox as sb

    return sb.resolve("auto")


if __name__ == "__main__":
    main()
