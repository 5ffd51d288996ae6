"""The labs from the package: ``jtk labs --out DIR`` from a checkout and from an installed wheel, which carries the
notebooks and exercises (never solutions/); one version for the package, jtk info, manifests and CITATION.cff."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest

from jtk import cli
from jtk.course import labs
from jtk import _info

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
EXERCISES = sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb"))


def _files(folder: pathlib.Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _assert_identical(out: pathlib.Path, names) -> None:
    for name in names:
        assert (out / name).read_bytes() == (ROOT / name).read_bytes(), name


def test_lab_files_are_the_notebooks_exercises_and_the_results_they_read():
    names = labs.lab_files(ROOT)
    assert "notebooks/00_start_here.ipynb" in names and len(NOTEBOOKS) == 7 and len(EXERCISES) == 6
    assert {f"notebooks/{n}" for n in NOTEBOOKS} | {f"exercises/{n}" for n in EXERCISES} <= set(names)
    assert not any("solution" in n for n in names)
    assert labs.lab_files(ROOT, exercises_only=True) == [f"exercises/{n}" for n in EXERCISES]


def test_jtk_labs_writes_every_lab_byte_identical_and_no_solutions(tmp_path, capsys):
    out = tmp_path / "my-labs"
    assert cli.main(["labs", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    names = labs.lab_files(ROOT)
    assert _files(out) == names
    _assert_identical(out, names)
    assert not (out / "solutions").exists()
    assert f"jupyter lab {out / 'notebooks' / '00_start_here.ipynb'}" in printed
    assert printed.count("wrote ") == len(names)
    # The start page's links and the labs' relative reads (../benchmarks/results/NAME.csv) resolve in the copy.
    start = json.loads((out / "notebooks" / "00_start_here.ipynb").read_text())
    links = re.findall(r"\]\(([^)#]+\.ipynb)\)", "".join("".join(c["source"]) for c in start["cells"]))
    assert len(links) == 6 and all((out / "notebooks" / link).is_file() for link in links), links
    for notebook in (out / "notebooks").glob("*.ipynb"):
        code = "".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code")
        for csv in re.findall(r"([\w{}]+\.csv)", code):
            pattern = re.sub(r"\{[^}]*\}", "*", csv)
            assert list((out / "benchmarks" / "results").glob(pattern)), f"{notebook.name} reads {csv}"


def test_exercises_only(tmp_path, capsys):
    out = tmp_path / "ex"
    assert cli.main(["labs", "--exercises-only", "--out", str(out)]) == 0
    assert _files(out) == [f"exercises/{n}" for n in EXERCISES]
    _assert_identical(out, _files(out))
    assert f"jupyter lab {out / 'exercises'}" in capsys.readouterr().out


def test_refuses_a_non_empty_folder_unless_force_and_keeps_other_files(tmp_path, capsys):
    out = tmp_path / "labs"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert cli.main(["labs", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "--force" in err and "not empty" in err
    assert _files(out) == ["notes.txt"]
    (out / "exercises").mkdir()
    (out / "exercises" / "01_coin_joint.ipynb").write_text("my answers")
    assert cli.main(["labs", "--exercises-only", "--out", str(out), "--force"]) == 0
    assert (out / "notes.txt").read_text() == "mine"
    _assert_identical(out, labs.lab_files(ROOT, exercises_only=True))
    assert cli.main(["labs", "--out", str(tmp_path / "empty")]) == 0  # a missing folder is created ...
    (tmp_path / "empty2").mkdir()
    assert cli.main(["labs", "--exercises-only", "--out", str(tmp_path / "empty2")]) == 0  # ... an empty one is used


def test_bad_arguments_are_named(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert cli.main(["labs", "--out", str(afile)]) == 2
    assert "--out: expected a directory" in capsys.readouterr().err
    assert cli.main(["labs", "--out", str(tmp_path / "missing" / "labs")]) == 2
    assert "--out: expected an existing parent directory" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["labs"])
    assert exit_.value.code == 2 and "--out" in capsys.readouterr().err
    with pytest.raises(ValueError, match="out: expected a directory path"):
        labs.write_labs(None)
    with pytest.raises(TypeError, match="exercises_only and force"):
        labs.write_labs(tmp_path / "x", force="yes")
    # No write through a symbolic link, even with --force: the file it points at stays as it was.
    victim = tmp_path / "victim.ipynb"
    victim.write_text("keep")
    out = tmp_path / "linked"
    (out / "exercises").mkdir(parents=True)
    (out / "exercises" / "01_coin_joint.ipynb").symlink_to(victim)
    assert cli.main(["labs", "--exercises-only", "--out", str(out), "--force"]) == 2
    assert "symbolic link" in capsys.readouterr().err and victim.read_text() == "keep"
    assert _files(out) == ["exercises/01_coin_joint.ipynb"]  # nothing written: every check comes first
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked2").mkdir()
    (tmp_path / "linked2" / "exercises").symlink_to(elsewhere)
    assert cli.main(["labs", "--exercises-only", "--out", str(tmp_path / "linked2"), "--force"]) == 2
    assert "leads outside" in capsys.readouterr().err and not any(elsewhere.iterdir())


def test_one_version_for_package_info_manifests_and_citation():
    import jtk

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "jtk._version.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", jtk.__version__)
    assert f"\nversion: {jtk.__version__}\n" in (ROOT / "CITATION.cff").read_text()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog and f"## [{jtk.__version__}]" in changelog
    assert _info.provenance()["jtk"] == jtk.__version__


# ------------------------------------------------------------------ the wheel, installed outside the checkout
@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """jtk's wheel, built offline with this environment's setuptools from a copy of what the build reads (so a
    concurrent build in the checkout's build/ cannot interfere, and a file the build needs but nobody listed fails)."""
    import setuptools

    version = tuple(int(x) for x in setuptools.__version__.split(".")[:2])
    assert version >= (77, 0), (f"setuptools {setuptools.__version__} cannot build jtk (its SPDX license needs "
                                ">= 77.0.3): pip install -c constraints.txt -e '.[dev]'")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT / "jtk", src / "jtk", ignore=shutil.ignore_patterns("__pycache__", labs.PACKAGE_DIR))
    for name in ["pyproject.toml", "setup.py", "README.md", "LICENSE", *labs.lab_files(ROOT)]:
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, src / name)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}  # offline
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp / "dist")], cwd=src, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp / "dist").glob("jtk-*.whl")
    return path


def test_wheel_carries_the_labs_and_no_solutions(wheel):
    import jtk

    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        prefix = f"jtk/{labs.PACKAGE_DIR}/"
        packaged = sorted(n[len(prefix):] for n in names if n.startswith(prefix))
        assert packaged == labs.lab_files(ROOT)
        for name in packaged:
            assert z.read(prefix + name) == (ROOT / name).read_bytes(), name
        assert not [n for n in names if "solution" in n.lower()]
        metadata = z.read(f"jtk-{jtk.__version__}.dist-info/METADATA").decode()
    assert f"\nVersion: {jtk.__version__}\n" in metadata


def test_installed_wheel_writes_the_labs_outside_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {**env, "PYTHONPATH": str(site), "JTK_COMPILATION_CACHE": "0", "JAX_PLATFORMS": "cpu"}
    out = tmp_path / "labs"
    done = subprocess.run([sys.executable, "-m", "jtk.cli", "labs", "--out", str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _files(out) == labs.lab_files(ROOT)
    _assert_identical(out, _files(out))
    # It was the installed package, not the checkout, that ran and provided the files.
    where = subprocess.run([sys.executable, "-c", "import jtk, jtk.course.labs; print(jtk.__file__); print(jtk.course.labs.labs_root())"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr[-3000:]
    module, root = where.stdout.split()
    assert pathlib.Path(module).is_relative_to(site.resolve()) or pathlib.Path(module).is_relative_to(site)
    assert pathlib.Path(root) == (site / "jtk" / labs.PACKAGE_DIR).resolve()
