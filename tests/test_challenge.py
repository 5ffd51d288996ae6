"""The class challenge: hidden seeds, untrusted submissions in a contained worker, the leaderboard.

The end-to-end fixture scores nine submissions (good, bad and hostile) once on a tiny hidden grid;
the tests below read its board.
"""

import json
import os
import stat
import textwrap

import numpy as np
import pandas as pd
import pytest

from jtk import challenge, cli, sandbox
import _readme

TINY = dict(grid="quick", seeds=2, baselines=["mlp"], time_limit_s=90.0, memory_limit_mb=2048, practice_seeds=1,
            num_train=[10], temperatures=[0.5], num_test=100, num_samples=100)

SUBMISSIONS = {
    "mlp_like": """
        import jtk

        def make_agent():
            return jtk.agents.make("mlp", num_steps=50)
        """,
    "ensemble_plus_like": """
        import jtk

        def make_agent():
            return jtk.agents.make("ensemble+", num_members=3, num_steps=50)
        """,
    "sklearn_readme": _readme.agent_source() + "\n\ndef make_agent():\n    return BootstrapLogistic()\n",
    "incoherent": """
        import numpy as np

        class PerRowMember:
            '''An ensemble of random linear functions that draws a fresh member for every input row.'''
            def fit(self, x, y, seed=0, prior=None):
                rng = np.random.default_rng(seed)
                self.w = rng.normal(size=(8, x.shape[1], 2))
                return self

            def sample_logits(self, x, num_samples, seed=0):
                rng = np.random.default_rng(seed)
                members = rng.integers(0, 8, size=(num_samples, len(x)))  # one member per (sample, row): wrong
                return np.einsum("nd,mndk->mnk", x, self.w[members])

        def make_agent():
            return PerRowMember()
        """,
    "sneaky_incoherent": """
        import numpy as np

        class CoherentWhenProbed:
            '''Coherent on small inputs (check_agent's probes), a fresh member per row on large ones.'''
            def fit(self, x, y, seed=0, prior=None):
                self.w = np.random.default_rng(seed).normal(size=(8, x.shape[1], 2))
                return self

            def sample_logits(self, x, num_samples, seed=0):
                rng = np.random.default_rng(seed)
                if len(x) <= 600:
                    return np.einsum("nd,mdk->mnk", x, self.w[rng.integers(0, 8, num_samples)])
                members = rng.integers(0, 8, size=(num_samples, len(x)))
                return np.einsum("nd,mndk->mnk", x, self.w[members])

        def make_agent():
            return CoherentWhenProbed()
        """,
    "raises": """
        def make_agent():
            class Broken:
                def fit(self, x, y, seed=0, prior=None):
                    raise RuntimeError("my fit is broken")
            return Broken()
        """,
    "loops": """
        import time

        class Forever:
            def fit(self, x, y, seed=0, prior=None):
                while True:          # hangs forever (sleeping, to spare the shared test machine's two cores;
                    time.sleep(0.1)  # a busy loop is killed the same way)

        def make_agent():
            return Forever()
        """,
    "memory_hog": """
        import numpy as np

        class Hog:
            def fit(self, x, y, seed=0, prior=None):
                self.big = np.ones(10 * 10**9 // 8)   # 10 GB
                return self

        def make_agent():
            return Hog()
        """,
    "wrong_shape": """
        import numpy as np

        class Wrong:
            def fit(self, x, y, seed=0, prior=None):
                return self

            def sample_logits(self, x, num_samples, seed=0):
                return np.zeros((num_samples, len(x), 3))   # K = 3 on a 2-class problem

        def make_agent():
            return Wrong()
        """,
    "spy": """
        import gc, inspect, json, os, sys

        CONFIG = {config!r}

        def _findings():
            found = {{"argv": list(sys.argv), "environ": dict(os.environ), "cwd": os.getcwd()}}
            try:
                with open(CONFIG) as f:
                    found["config"] = f.read()
            except OSError as err:
                found["config"] = "unreadable: " + type(err).__name__
            frames = []
            for info in inspect.stack():
                frames.append({{k: repr(v)[:300] for k, v in info.frame.f_locals.items()}})
            found["frames"] = frames
            strings = [o for o in gc.get_objects() if isinstance(o, dict)][:20000]
            found["gc"] = [repr(d)[:200] for d in strings if "salt" in repr(d)[:200]]
            try:
                found["parent_cmdline"] = open(f"/proc/{{os.getppid()}}/cmdline", "rb").read().decode(errors="replace")
            except OSError as err:
                found["parent_cmdline"] = "unreadable: " + type(err).__name__
            found["pids"] = [p for p in os.listdir("/proc") if p.isdigit()]
            return found

        class Spy:
            def fit(self, x, y, seed=0, prior=None):
                raise RuntimeError("SPY" + json.dumps(_findings(), default=str))

        def make_agent():
            return Spy()
        """,
}
EXPECTED = {"mlp_like": "ok", "ensemble_plus_like": "ok", "sklearn_readme": "ok", "incoherent": "incoherent",
            "sneaky_incoherent": "incoherent",
            "raises": "error", "loops": "timeout", "memory_hog": "memory", "wrong_shape": "invalid", "spy": "error"}


def _write_config(path, **overrides):
    cfg = {**TINY, "salt": "0123456789abcdef" * 2, **overrides}
    lines = [f"{k} = {json.dumps(v)}" for k, v in cfg.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------ configuration
def test_new_writes_private_template_and_never_prints_the_salt(tmp_path, capsys):
    path = tmp_path / "challenge.toml"
    assert cli.main(["challenge", "new", str(path)]) == 0
    printed = capsys.readouterr()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    cfg = challenge.load_config(path)
    assert len(cfg.salt) == 32 and cfg.salt not in printed.out + printed.err
    assert cfg.grid in ("quick", "paper", "classification") and cfg.seeds >= 1 and cfg.baselines
    assert cfg.time_limit_s > 0 and cfg.memory_limit_mb >= 256 and cfg.practice_seeds >= 1
    practice = tmp_path / "practice.toml"
    assert practice.exists() and cfg.salt not in practice.read_text()
    assert challenge.load_config(practice, need_salt=False).salt is None
    # refuses to overwrite, keeps the file
    before = path.read_text()
    assert cli.main(["challenge", "new", str(path)]) == 2
    assert "exists" in capsys.readouterr().err and path.read_text() == before
    with pytest.raises(FileExistsError, match="exists"):
        challenge.new_config(path)


def test_load_config_validates_every_key(tmp_path):
    good = _write_config(tmp_path / "good.toml")
    assert challenge.load_config(good).seeds == 2
    with pytest.raises(ValueError, match="did you mean 'seeds'"):
        challenge.load_config(_write_config(tmp_path / "a.toml", seedz=3))
    with pytest.raises(ValueError, match="grid.*'quick'.*'qiuck'"):
        challenge.load_config(_write_config(tmp_path / "b.toml", grid="qiuck"))
    with pytest.raises(ValueError, match="baselines.*'mpl'"):
        challenge.load_config(_write_config(tmp_path / "c.toml", baselines=["mpl"]))
    with pytest.raises(TypeError, match="seeds.*int.*str"):
        challenge.load_config(_write_config(tmp_path / "d.toml", seeds="3"))
    with pytest.raises(ValueError, match="time_limit_s.*> 0"):
        challenge.load_config(_write_config(tmp_path / "e.toml", time_limit_s=0))
    with pytest.raises(ValueError, match="salt"):
        challenge.load_config(_write_config(tmp_path / "f.toml", salt="short"))
    with pytest.raises(ValueError, match="num_train.*1000"):
        challenge.load_config(_write_config(tmp_path / "g.toml", num_train=[1000]))
    no_salt = tmp_path / "h.toml"
    no_salt.write_text("\n".join(line for line in good.read_text().splitlines() if not line.startswith("salt")))
    with pytest.raises(ValueError, match="salt.*missing"):
        challenge.load_config(no_salt)
    assert challenge.load_config(no_salt, need_salt=False).salt is None
    (tmp_path / "i.toml").write_text("grid = [\n")
    with pytest.raises(ValueError, match="i.toml.*TOML"):
        challenge.load_config(tmp_path / "i.toml")


def test_hidden_seeds_are_distinct_disjoint_from_practice_and_depend_on_the_salt():
    a = challenge.hidden_seeds("ab" * 16, 50, practice_seeds=5)
    assert a == challenge.hidden_seeds("ab" * 16, 50, practice_seeds=5)
    assert len(set(a)) == 50 and all(5 <= s < 2 ** 31 for s in a)
    b = challenge.hidden_seeds("cd" * 16, 50, practice_seeds=5)
    assert not set(a) & set(b)
    with pytest.raises(ValueError, match="salt"):
        challenge.hidden_seeds("", 3, practice_seeds=1)


def test_out_must_be_empty_unless_forced(tmp_path, capsys):
    cfg = _write_config(tmp_path / "challenge.toml")
    subs = tmp_path / "subs"
    subs.mkdir()
    out = tmp_path / "board"
    out.mkdir()
    (out / "old.txt").write_text("x")
    with pytest.raises(ValueError, match="--out.*not empty.*force"):
        challenge.score(subs, cfg, out)
    with pytest.raises(ValueError, match="submissions.*no .py"):
        challenge.score(subs, cfg, tmp_path / "new_board")
    (subs / "a.py").write_text("def make_agent():\n    return None\n")
    assert cli.main(["challenge", "score", str(subs), "--config", str(cfg), "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err and not (out / "leaderboard.csv").exists()


# ------------------------------------------------------------------ end to end
@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = tmp_path_factory.mktemp("challenge")
    cfg_path = _write_config(root / "challenge.toml", salt="feedc0de" * 4)
    os.chmod(cfg_path, 0o600)
    subs = root / "submissions"
    subs.mkdir()
    for name, src in SUBMISSIONS.items():
        if name == "loops":  # scored on its own with a short limit (test_a_looping_submission_times_out)
            continue
        (subs / f"{name}.py").write_text(textwrap.dedent(src.format(config=str(cfg_path)) if name == "spy" else src))
    out = root / "board"
    result = challenge.score(subs, cfg_path, out, workers=3, progress=False)
    print(challenge.format_board(result.leaderboard))
    return dict(root=root, config=challenge.load_config(cfg_path), out=out, result=result)


def test_every_submission_gets_its_status(board):
    lb = pd.read_csv(board["out"] / "leaderboard.csv")
    status = dict(zip(lb["name"], lb["status"]))
    for name, want in EXPECTED.items():
        if name == "loops":
            continue
        assert status[name] == want, (name, lb.set_index("name").loc[name, "message"])
    assert status["mlp"] == "ok" and lb.set_index("name").loc["mlp", "kind"] == "baseline"
    for name in ("raises", "memory_hog", "wrong_shape", "incoherent"):
        msg = lb.set_index("name").loc[name, "message"]
        assert isinstance(msg, str) and msg and "\n" not in msg
    assert "my fit is broken" in lb.set_index("name").loc["raises", "message"]
    assert lb.set_index("name").loc["memory_hog", "seconds"] < 60  # stopped at its allocation, not at the time limit
    assert "shape" in lb.set_index("name").loc["wrong_shape", "message"]
    # caught by the scorer's own check on duplicated hidden test rows, not by check_agent in the worker
    assert "duplicated test inputs" in lb.set_index("name").loc["sneaky_incoherent", "message"]


def test_a_looping_submission_times_out(tmp_path):
    """The board's wall-clock limit stops a submission that never returns; the board is still written."""
    cfg = _write_config(tmp_path / "challenge.toml", time_limit_s=8.0)
    subs = tmp_path / "submissions"
    subs.mkdir()
    (subs / "loops.py").write_text(textwrap.dedent(SUBMISSIONS["loops"]))
    challenge.score(subs, cfg, tmp_path / "board", workers=1, progress=False)
    row = pd.read_csv(tmp_path / "board" / "leaderboard.csv").set_index("name").loc["loops"]
    assert row["status"] == "timeout" and 8.0 <= row["seconds"] < 30, row.to_dict()
    assert isinstance(row["message"], str) and "\n" not in row["message"]


def test_leaderboard_columns_ranks_and_paired_differences(board):
    lb = pd.read_csv(board["out"] / "leaderboard.csv").set_index("name")
    for col in ("status", "kind", "rank", "kl_1", "kl_1_se", "kl_10", "kl_10_se", "diff_1", "diff_1_se",
                "diff_10", "diff_10_se", "reference", "message"):
        assert col in lb.columns
    ok = lb[lb.status == "ok"]
    assert set(ok.index) == {"mlp", "mlp_like", "ensemble_plus_like", "sklearn_readme"}
    assert np.isfinite(ok[["kl_1", "kl_10", "kl_1_se", "diff_10", "diff_10_se"]].to_numpy()).all()
    assert ok.loc["mlp", "diff_10"] == 0.0
    assert lb[lb.status != "ok"]["rank"].isna().all() and lb[lb.status != "ok"]["kl_10"].isna().all()
    assert sorted(ok["rank"]) == [1, 2, 3, 4]
    # the paired difference is the mean of per-problem differences on the same problems
    rows = {n: pd.read_csv(board["out"] / "rows" / f"{n}.csv") for n in ("mlp", "sklearn_readme")}
    keys = ["tau", "seed", "num_train", "temperature", "input_dim"]
    m = rows["sklearn_readme"].merge(rows["mlp"], on=keys, suffixes=("", "_ref"))
    m = m[m.tau == 10]
    assert len(m) == 2
    want = (m.kl.clip(lower=0) - m.kl_ref.clip(lower=0)).mean()
    assert ok.loc["sklearn_readme", "diff_10"] == pytest.approx(want, abs=1e-9)
    per_seed = (m.kl.clip(lower=0) - m.kl_ref.clip(lower=0)).groupby(m.seed).mean()
    assert ok.loc["sklearn_readme", "diff_10_se"] == pytest.approx(np.std(per_seed) / np.sqrt(2), abs=1e-9)


def test_rows_and_manifests_per_submission_and_html(board):
    out = board["out"]
    for name in ("mlp", "mlp_like", "sklearn_readme"):
        rows = pd.read_csv(out / "rows" / f"{name}.csv")
        assert len(rows) == 4 and set(rows.seed) == set(board["config"].hidden_seeds())
        manifest = json.loads((out / "rows" / f"{name}.manifest.json").read_text())
        assert manifest["rows"] == 4
    html = (out / "leaderboard.html").read_text()
    assert "<table" in html and "data:image/png;base64," in html and "sklearn_readme" in html
    details = json.loads((out / "submissions" / "incoherent.json").read_text())
    assert details["status"] == "incoherent"


def test_student_facing_files_hold_no_seeds_and_nothing_holds_the_salt(board):
    out, cfg = board["out"], board["config"]
    for path in out.rglob("*"):
        if path.is_file():
            assert cfg.salt not in path.read_text(errors="replace"), path
    public = [out / "leaderboard.csv", out / "leaderboard.html", out / "leaderboard.manifest.json"]
    for path in public:
        text = path.read_text()
        for seed in cfg.hidden_seeds():
            assert str(seed) not in text, (path, seed)
    assert "seed" not in pd.read_csv(out / "leaderboard.csv").columns


def test_a_spying_submission_learns_nothing(board):
    details = json.loads((board["out"] / "submissions" / "spy.json").read_text())
    text = details["detail"]
    assert "SPY" in text
    found = json.loads(text[text.index("SPY") + 3:].splitlines()[0].rsplit("}", 1)[0] + "}")
    cfg = board["config"]
    if board["result"].sandbox != "bwrap":  # without bubblewrap the file and the scorer are readable (documented)
        found.pop("config"), found.pop("parent_cmdline")
    everything = json.dumps(found)
    assert cfg.salt not in everything
    for seed in cfg.hidden_seeds():
        assert str(seed) not in everything
    assert not any("challenge.toml" in a for a in found["argv"])
    assert "challenge.toml" not in json.dumps(found["environ"])
    added_by_python_or_jax = {"PWD", "TPU_SKIP_MDS_QUERY", "TF_CPP_MIN_LOG_LEVEL"}
    assert set(found["environ"]) - added_by_python_or_jax <= challenge.WORKER_ENV_KEYS
    if board["result"].sandbox == "bwrap":
        assert found["config"] in ("", ) or found["config"].startswith("unreadable")
        # the process that knows the salt (this pytest) is invisible: the worker's parent is bwrap's init,
        # and only the sandbox's few processes exist in its /proc
        assert found["parent_cmdline"].split("\x00")[0].endswith("bwrap")
        assert len(found["pids"]) <= 4


@pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap is not available here")
def test_board_ran_inside_bubblewrap(board):
    assert board["result"].sandbox == "bwrap"


def test_practice_uses_public_seeds_without_a_salt(tmp_path, capsys):
    practice = tmp_path / "practice.toml"
    cfg = {k: v for k, v in TINY.items() if k != "seeds"}
    practice.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in {**cfg, "baselines": []}.items()))
    sub = tmp_path / "mine.py"
    sub.write_text(textwrap.dedent(SUBMISSIONS["sklearn_readme"]))
    code = cli.main(["challenge", "practice", str(sub), "--config", str(practice), "--out", str(tmp_path / "p")])
    printed = capsys.readouterr().out
    assert code == 0 and "mine" in printed and "ok" in printed
    rows = pd.read_csv(tmp_path / "p" / "rows" / "mine.csv")
    assert set(rows.seed) == {0}
