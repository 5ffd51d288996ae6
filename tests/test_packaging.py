"""The conda environment, pyproject and the README quickstart stay consistent."""

import pathlib
import re
import subprocess
import sys
import tomllib


ROOT = pathlib.Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower()


def _conda_dependencies() -> dict[str, str]:
    deps = {}
    text = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1]
    for line in text.splitlines():
        m = re.match(r"^\s+- ([A-Za-z0-9_.\-]+)(.*)$", line)
        if m and m.group(1) not in ("pip", "python", "-e"):
            deps[m.group(1).lower()] = m.group(2).strip()
    return deps


def _dev_requirements(project) -> list[str]:
    """Core and dev requirements, with dev's own extras (jtk[lab,dask]) expanded."""
    extras = project["optional-dependencies"]
    out = list(project["dependencies"])
    for req in extras["dev"]:
        if _name(req) == "jtk":
            for extra in re.search(r"\[(.*)\]", req).group(1).split(","):
                out += extras[extra.strip()]
        else:
            out.append(req)
    return out


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r): r for r in _dev_requirements(project)}
    conda = _conda_dependencies()
    assert set(wanted) == set(conda), f"only in pyproject: {set(wanted) - set(conda)}; only in conda: {set(conda) - set(wanted)}"
    for name, req in wanted.items():
        spec = req[len(name):].replace(" ", "")
        assert conda[name].replace(" ", "") == spec, f"{name}: pyproject {spec!r} vs environment.yml {conda[name]!r}"
    assert "- -e ." in (ROOT / "environment.yml").read_text()


def test_readme_quickstart_is_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    block = re.search(r"## Quickstart.*?```(?:bash)?\n(.*?)```", readme, re.S).group(1).strip().splitlines()
    commands = [line for line in block if line and not line.startswith("#")]
    assert len(commands) == 2, commands
    setup, tests = commands
    for step in setup.split(" && ")[:-1]:  # everything before opening JupyterLab
        assert step.strip() in ci, f"CI does not run the README set-up step {step!r}"
    assert setup.split(" && ")[-1].startswith(".venv/bin/jupyter lab")
    assert tests.strip() in ci


def test_console_command_is_installed():
    out = subprocess.run([sys.executable, "-m", "jtk.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "testbed" in out.stdout


def test_public_api_names_exist():
    import jtk

    for name in ("joint_log_likelihood", "accuracy", "expected_calibration_error"):
        assert callable(getattr(jtk, name))
    assert callable(jtk.envs.Coin) and callable(jtk.envs.MLPClassification)
    for name in ("paper_problems", "quick_problems", "evaluate", "summarize", "breakdown"):
        assert callable(getattr(jtk.testbed, name))
    assert callable(jtk.agents.make) and callable(jtk.agents.names)


def test_core_needs_no_lab_or_dask_and_every_requirement_has_an_upper_bound():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_name(r): r for r in project["dependencies"]}
    assert not {"jupyterlab", "dask", "distributed"} & set(core)
    assert all("<" in r for r in core.values()), [r for r in core.values() if "<" not in r]
    assert set(project["optional-dependencies"]) >= {"lab", "dask", "cuda12", "dev"}
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License") and (ROOT / "CITATION.cff").exists()


def test_import_sets_no_jax_platform_and_info_reports_the_backend():
    import json
    import os

    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    code = ("import json, os, jtk; d = jtk.info(); "
            "print(json.dumps({'env': os.environ.get('JAX_PLATFORMS'), 'backend': d['backend'], "
            "'devices': d['devices'], 'jax': d['jax'], 'extras': d['extras']}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["env"] is None  # import jtk left the platform choice to JAX
    import jax

    assert report["backend"] in ("cpu", "gpu", "cuda", "rocm", "tpu") and report["devices"]
    assert report["jax"] == jax.__version__ and "dask" in report["extras"]
    from jtk import cli

    assert cli.main(["info"]) == 0


def test_constraints_pin_every_dev_requirement_within_pyproject_bounds():
    """constraints.txt (what CI installs with) pins each requirement exactly, inside pyproject's ranges."""
    from packaging.requirements import Requirement

    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt line {line!r} is not an exact NAME==VERSION pin"
            pins[_canonical(name)] = version.strip()
    assert "jtk" not in pins
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for text in project["dependencies"] + _dev_requirements(project):
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        name = _canonical(req.name)
        assert name in pins, f"{req.name} is a requirement but constraints.txt does not pin it"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req.name}=={pins[name]} is outside {req}"
    assert "-c constraints.txt" in (ROOT / ".ci" / "run").read_text()


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().strip()


def test_compilation_cache_is_capped_and_locked(tmp_path):
    """The persistent cache gets a size cap (JTK_CACHE_MAX_GB), which makes JAX lock the cache around every read
    and write: two processes never write one entry at once or read one half written."""
    import os

    env = {**os.environ, "JTK_CACHE_DIR": str(tmp_path / "xla"), "JTK_CACHE_MAX_GB": "0.5", "JAX_PLATFORMS": "cpu"}
    env.pop("JTK_COMPILATION_CACHE", None)
    code = ("import jax, jax.numpy as jnp, jtk; jax.config.update('jax_persistent_cache_min_compile_time_secs', 0); "
            "jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(3)).block_until_ready(); "
            "print(jax.config.jax_compilation_cache_max_size)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == str(2 ** 29)
    assert (tmp_path / "xla" / ".lockfile").exists()
    assert any(p.name.endswith("-cache") for p in (tmp_path / "xla").iterdir())


def test_cache_entries_without_access_times_get_them(tmp_path):
    """An entry an uncapped cache wrote (no -atime file) would make every later capped write fail; import backfills."""
    import os

    cache = tmp_path / "xla"
    cache.mkdir()
    (cache / "jit_f-0123-cache").write_bytes(b"old entry")
    env = {**os.environ, "JTK_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu"}
    env.pop("JTK_COMPILATION_CACHE", None)
    env.pop("JTK_CACHE_MAX_GB", None)
    done = subprocess.run([sys.executable, "-c", "import jtk"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    stamp = int.from_bytes((cache / "jit_f-0123-atime").read_bytes(), "little")
    assert stamp == os.stat(cache / "jit_f-0123-cache").st_mtime_ns
