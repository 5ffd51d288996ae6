"""Gradescope's autograder, end to end on this machine: the bundle installed from a fresh venv, a class graded.

    python examples/gradescope_class.py [--out benchmarks/results/gradescope_class.csv] [--keep]

Builds the bundle with ``jtk exercises autograder``, unpacks it into a throwaway root laid out as Gradescope's
(``source/``, ``submission/``, ``submission_metadata.json``, ``results/``), bind-mounted at ``/autograder`` in a
private mount namespace (``unshare --mount``, so the machine's own ``/autograder`` stays an empty mount point),
and runs the bundle's ``setup.sh`` there: Debian's bubblewrap, a fresh venv in ``/autograder/venv`` and jtk's wheel
at the pinned versions. Then each student's upload is graded by ``/autograder/run_autograder``, one student at a
time, as Gradescope does. The class: one student per kind of examples/grading_class.py (correct, wrong,
tampered, looping, crashing: all six exercises each) and one student per attack of tests/test_grading_attacks.py
(exercise 1 only), plus a submission that is not a notebook. Every results.json is checked against the fields
Gradescope's specification names, and every student's score against ``jtk grade`` of the same notebooks with the
bundle's salt (the student named as Gradescope names them: the email of submission_metadata.json).

Needs root (``unshare --mount`` and ``apt-get``) and the package registries; prints the measured figures and
writes one row per student to --out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

import nbformat
import pandas as pd

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "tests")]
from jtk._docs import DOCS, md_table, write_section  # noqa: E402
from grading_class import KINDS, make_submission  # noqa: E402
import test_grading_attacks  # noqa: E402
from test_grading_attacks import NB1, attacks  # noqa: E402

SALT = "gradescope-benchmark"
TOP_FIELDS = {"score", "execution_time", "output", "tests"}
TEST_FIELDS = {"name", "score", "max_score", "status", "output", "visibility"}
VISIBILITY = {"visible", "hidden", "after_due_date", "after_published"}


def in_root(root: pathlib.Path, command: str, timeout: float) -> subprocess.CompletedProcess:
    """Runs ``command`` with ``root`` bind-mounted at /autograder, in a mount namespace of its own."""
    script = f"mount --bind {root} /autograder && {command}"
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script],
                          capture_output=True, text=True, timeout=timeout,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))},
                               "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"})


ATTACKS = {  # what each attack of tests/test_grading_attacks.py tries, for the table in docs/grading.md
    "edit_check_cell": "check cell edited to print a pass line",
    "delete_check_cell": "check cell deleted",
    "metadata_points": "`points: 100` in the cells' metadata",
    "overwrite_check_function": "`checks.check_coin_joint` and `run_check` overwritten",
    "forged_record": "every check record forged with made-up answers",
    "patched_numpy": "`np.allclose` / `np.isclose` patched to say yes",
    "calls_reference": "`return jtk.envs.Coin(b, p).joint(f)`",
    "saved_reference": "a reference to `Coin.joint` saved before the check",
    "swapped_reference": "`Coin.joint` replaced after saving the original",
    "guard_switched_off": "`sys.setprofile(None)`, then the reference",
    "infinite_loop": "`while True: pass`",
    "loop_ignoring_interrupts": "a loop that ignores SIGPROF, SIGALRM and SIGINT",
    "huge_allocation": "`np.zeros(10**11)` in the answer",
    "huge_allocation_top_level": "`np.ones(10**11)` at the top of the answer cell",
    "sys_exit": "`sys.exit(0)`",
    "os_exit": "`os._exit(1)`",
    "segfault": "a segfault (`ctypes.string_at(0)`)",
    "read_solutions": "reads `solutions/01_coin_joint.ipynb` by absolute path and runs its answer",
    "kill_grader": "kills its parent and `JPY_PARENT_PID`",
    "delete_other_submission": "deletes another student's submission",
    "rewrite_grade_file": "rewrites the grades CSV",
    "display_rewrites_records": "wraps `display` to rewrite each check record with the reference's answers",
    "post_run_cell_forged_record": "a `post_run_cell` hook that adds a forged record after every cell",
    "reference_profile_toggled": "switches the profile hook off and on around the reference",
    "reference_guard_emptied": "empties the guard's forbidden list through the stack frames",
    "reference_in_early_thread": "calls the reference from a thread started before the check",
    "reference_in_subprocess": "calls the reference from a subprocess",
    "reference_code_copy": "calls a copy of the reference's code object with another `co_filename`",
    "git_history": "`git show HEAD:solutions/...` of the checkout jtk was installed from",
    "keyboard_interrupt": "raises KeyboardInterrupt",
    "fill_disk": "fills every disk and tmpfs it can write to",
    "many_records": "200 records of 1 MB each from a `post_run_cell` hook",
    "forged_protocol_frames": "writes forged answer frames into every pipe of its process",
    "steals_requests": "reads the grader's requests off its input pipe",
}


def the_class(tmp: pathlib.Path) -> dict[str, dict[str, nbformat.NotebookNode]]:
    """email -> {notebook name: notebook}."""
    names = sorted(p.name for p in (ROOT / "solutions").glob("*.ipynb"))
    students = {f"{kind}@uni.edu": {name: make_submission(name, kind) for name in names} for kind in KINDS}
    # the attacks aim at the sources where the autograder keeps them (read_solutions opens that path)
    test_grading_attacks.SOLUTIONS = pathlib.Path("/autograder/source/solutions")
    for attack, nb in attacks(tmp).items():
        students[f"{attack}@uni.edu"] = {NB1: nb}
    return students


def attack_table(table: pd.DataFrame) -> str:
    """One row per attack: its total on exercise 1 (1b answered honestly) through `jtk grade` and Gradescope,
    against the honest blank's."""
    by = table.set_index(table.student.str.split("@").str[0])
    blank = by.loc["honest_blank"]
    rows = []
    for name, what in ATTACKS.items():
        if name not in by.index:
            continue
        r = by.loc[name]
        rows.append({"attack on 1a": what, "jtk grade": f"{r.jtk_grade_score:g}", "Gradescope": f"{r.gradescope_score:g}",
                     "above blank": "yes" if max(r.jtk_grade_score, r.gradescope_score) > blank.jtk_grade_score + 1e-9
                     else "no"})
    return (f"Exercise 1 (2 points), 1b answered honestly in every notebook: the honest blank scores "
            f"{blank.jtk_grade_score:g} through `jtk grade` and {blank.gradescope_score:g} through the Gradescope "
            f"bundle. `python examples/gradescope_class.py`, {datetime.date.today()}.\n\n"
            + md_table(pd.DataFrame(rows).set_index("attack on 1a")))


def validate(result: dict) -> list[str]:
    """What in a results.json breaks Gradescope's specification (an empty list when nothing does)."""
    problems = [f"missing top-level field {f}" for f in sorted(TOP_FIELDS - set(result))]
    for t in result.get("tests", []):
        problems += [f"test {t.get('name')!r} lacks {f}" for f in sorted(TEST_FIELDS - set(t))]
        if t.get("visibility") not in VISIBILITY:
            problems.append(f"test {t.get('name')!r} has visibility {t.get('visibility')!r}")
        if not 0 <= t.get("score", -1) <= t.get("max_score", -1) + 1e-9:
            problems.append(f"test {t.get('name')!r} scores {t.get('score')} of {t.get('max_score')}")
    total = sum(t.get("score", 0) for t in result.get("tests", []))
    if abs(total - result.get("score", -1)) > 1e-6:
        problems.append(f"score {result.get('score')} is not the sum of the tests' scores ({total})")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "gradescope_class.csv"))
    parser.add_argument("--keep", action="store_true", help="keep the throwaway root (printed)")
    args = parser.parse_args()
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        raise SystemExit("this benchmark needs root and unshare (util-linux) to bind a root at /autograder")
    os.makedirs("/autograder", exist_ok=True)
    if any(pathlib.Path("/autograder").iterdir()):
        raise SystemExit("/autograder is not empty on this machine; the benchmark binds its own root there")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jtk-gradescope-"))
    root = tmp / "root"

    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "jtk.cli", "exercises", "autograder", "--out",
                           str(tmp / "autograder.zip"), "--salt", SALT, "--solutions", str(ROOT / "solutions")],
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    build_s = time.perf_counter() - start
    size_mb = (tmp / "autograder.zip").stat().st_size / 1e6
    with zipfile.ZipFile(tmp / "autograder.zip") as z:
        z.extractall(root / "source")
    for name in ("setup.sh", "run_autograder"):  # zipfile does not restore modes; Gradescope's unpacking does
        (root / "source" / name).chmod(0o755)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")  # where Gradescope puts it

    start = time.perf_counter()
    setup = in_root(root, "bash /autograder/source/setup.sh", timeout=1800)
    setup_s = time.perf_counter() - start
    if setup.returncode:
        raise SystemExit(f"setup.sh failed ({setup.returncode}):\n{setup.stdout[-2000:]}\n{setup.stderr[-3000:]}")
    version = in_root(root, "/autograder/venv/bin/python -c 'import jtk; print(jtk.__version__)'", 120).stdout.strip()
    print(f"bundle {size_mb:.1f} MB built in {build_s:.1f} s; setup.sh {setup_s:.0f} s (fresh venv, jtk {version})")

    students = the_class(tmp)
    rows = []
    for email, notebooks in students.items():
        for sub in ("submission", "results"):
            shutil.rmtree(root / sub, ignore_errors=True)
        (root / "submission").mkdir()
        for name, nb in notebooks.items():
            nbformat.write(nb, root / "submission" / name)
        (root / "submission_metadata.json").write_text(json.dumps({"id": len(rows), "users": [{"email": email}]}))
        start = time.perf_counter()
        ran = in_root(root, "/autograder/run_autograder", timeout=1800)
        wall = time.perf_counter() - start
        try:
            result = json.loads((root / "results" / "results.json").read_text())
        except (OSError, ValueError) as err:  # counted as a problem, never skipped
            result = {"problems": f"no readable results.json: {err}"}
        rows.append({"student": email, "notebooks": len(notebooks), "rc": ran.returncode, "wall_s": round(wall, 1),
                     "gradescope_score": round(result.get("score", float("nan")), 4),
                     "max_score": round(sum(t.get("max_score", 0) for t in result.get("tests", [])), 4),
                     "tests": len(result.get("tests", [])),
                     "problems": result.get("problems") or "; ".join(validate(result))})
        print(f"{email:38s} {rows[-1]['gradescope_score']:6.2f} / {rows[-1]['max_score']:5.1f}  {wall:5.1f} s"
              + (f"  {rows[-1]['problems']}" if rows[-1]["problems"] else ""))

    # not a notebook at all: a result that says so, score 0
    shutil.rmtree(root / "submission")
    (root / "submission").mkdir()
    (root / "submission" / "answers.py").write_text("print('hello')\n")
    in_root(root, "/autograder/run_autograder", timeout=600)
    stray = json.loads((root / "results" / "results.json").read_text())

    cls = tmp / "class"
    for email, notebooks in students.items():
        (cls / email).mkdir(parents=True)
        for name, nb in notebooks.items():
            nbformat.write(nb, cls / email / name)
    start = time.perf_counter()
    graded = subprocess.run([sys.executable, "-m", "jtk.cli", "grade", str(cls), "--json", "--salt", SALT,
                             "--source", str(ROOT / "solutions"), "--no-progress"], capture_output=True, text=True,
                            env={**os.environ, "JAX_PLATFORMS": "cpu"})
    grade_s = time.perf_counter() - start
    if graded.returncode:
        raise SystemExit(graded.stderr[-3000:])
    jtk_scores = pd.DataFrame(json.loads(graded.stdout)).groupby("student").score.sum()
    table = pd.DataFrame(rows)
    table["jtk_grade_score"] = table.student.map(jtk_scores).round(4)
    table["equal"] = (table.gradescope_score - table.jtk_grade_score).abs() < 1e-6
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)

    attack_rows = table[~table.student.str.split("@").str[0].isin(KINDS) & (table.student != "honest_blank@uni.edu")]
    blank = table.set_index("student").gradescope_score.get("honest_blank@uni.edu")
    by_kind = table[table.student.str.split("@").str[0].isin(KINDS)].set_index("student")
    lines = [
        f"bundle {size_mb:.1f} MB, built in {build_s:.0f} s; `setup.sh` {setup_s:.0f} s (fresh venv, jtk {version}).",
        f"{len(table)} students, {int(table.notebooks.sum())} notebooks: `run_autograder` {table.wall_s.sum():.0f} s "
        f"in all (median {table.wall_s.median():.1f} s per student); `jtk grade` of the same class {grade_s:.0f} s.",
        f"results.json valid (every field of the specification, scores within max_score, the total the sum of the "
        f"tests) for {int((table.problems == '').sum())} of {len(table)}; `run_autograder` exit status 0 for "
        f"{int((table.rc == 0).sum())}; scores equal to `jtk grade`'s for {int(table.equal.sum())} of {len(table)}.",
        f"{len(attack_rows)} attacks of tests/test_grading_attacks.py: scoring more than a blank answer "
        f"({blank:g} of {table.set_index('student').max_score['honest_blank@uni.edu']:g}): "
        f"{int((attack_rows.gradescope_score > blank + 1e-9).sum())}.",
        f"A submission with no notebook: score {stray.get('score')}, output {stray.get('output', '').strip()!r}.",
    ]
    text = "\n".join(f"- {line}" for line in lines) + "\n\nThe five kinds of examples/grading_class.py (all six " \
        "exercises each):\n\n" + md_table(by_kind[["notebooks", "gradescope_score", "jtk_grade_score", "max_score",
                                                  "wall_s"]], floatfmt="{:.2f}")
    print("\n" + text)
    write_section("gradescope-class", text, DOCS / "grading.md")
    attacks_md = attack_table(table)
    print("\n" + attacks_md)
    write_section("attack-table", attacks_md, DOCS / "grading.md")
    print(f"rows written to {args.out}")
    if args.keep:
        print(f"root kept in {root}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
