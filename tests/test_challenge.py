"""The class challenge: hidden problems, untrusted submissions in a contained worker, the leaderboard.

The end-to-end fixture scores the submissions below (good, bad, hostile and cheating) and three files that are
not regular files once on a tiny hidden grid; the tests below read its board. The cheats are issue #46's.
"""

import dataclasses
import hashlib
import hmac
import json
import os
import shutil
import stat
import textwrap
import time
import types

import numpy as np
import pandas as pd
import pytest

from jtk import cli, results, testbed
from jtk.course import challenge, exercises, sandbox
from jtk.testbed import runs
import _readme

@pytest.fixture(scope="module", autouse=True)
def _instructor_config(tmp_path_factory):
    """The boards' signing key and record go to a folder of the test's, never to the user's ~/.config/jtk."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("instructor-config")))
        yield


# 3 GiB: in bwrap the worker's address space is this less its RAM-backed /tmp and /dev/shm (jtk.course.sandbox.address_space),
# and at 2 GiB the scikit-learn worker (JAX, SciPy, OpenBLAS and LLVM threads) could not start a thread
TINY = dict(grid="quick", seeds=2, baselines=["mlp"], time_limit_s=90.0, memory_limit_mb=3072, practice_seeds=1,
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
            "raises": "error", "loops": "timeout", "memory_hog": "memory", "wrong_shape": "invalid", "spy": "error",
            "hardmax": "invalid", "hardmax_1e300": "invalid", "sneaky_hardmax": "invalid", "all_inf": "invalid",
            "seed_search": "ok"}

# issue #46's cheats. A hard-max agent: nearest-centroid point predictions as "certain" logits, 0 for the
# predicted class and LOW elsewhere; a wrong label then has probability 0 and its τ-sample KL +inf, which the
# testbed's clip would turn into a perfect score.
HARDMAX = '''
import numpy as np

class HardMax:
    LOW = -np.inf

    def fit(self, x, y, seed=0, prior=None):
        self.c = np.stack([x[y == j].mean(0) if (y == j).any() else np.full(x.shape[1], 1e6)
                           for j in range(prior.num_classes)])
        return self

    def sample_logits(self, x, num_samples, seed=0):
        d = ((np.asarray(x, np.float64)[:, None, :] - self.c[None]) ** 2).sum(-1)  # [n, K]
        if SNEAKY and len(x) <= 600:  # check_agent's probes: an honest soft-min of the distances
            return np.broadcast_to(-d, (num_samples,) + d.shape).copy()
        out = np.full(d.shape, self.LOW)
        out[np.arange(len(x)), d.argmin(1)] = 0.0
        return np.broadcast_to(out, (num_samples,) + out.shape).copy()

def make_agent():
    return HardMax()
'''
SUBMISSIONS["hardmax"] = "SNEAKY = False\n" + HARDMAX
SUBMISSIONS["hardmax_1e300"] = "SNEAKY = False\n" + HARDMAX.replace("LOW = -np.inf", "LOW = -1e300")
SUBMISSIONS["sneaky_hardmax"] = "SNEAKY = True\n" + HARDMAX  # honest under the probes, hard-max when scored
# Class 0 with certainty: on a τ = 10 problem whose every τ-sample holds a label 1, no τ-sample is finite
# (test_one_entry_without_a_finite_sample_never_costs_the_board checks that the fixture's salt has one).
SUBMISSIONS["all_inf"] = '''
import numpy as np

class AlwaysZero:
    def fit(self, x, y, seed=0, prior=None):
        return self

    def sample_logits(self, x, num_samples, seed=0):
        out = np.zeros((num_samples, len(x), 2))
        out[..., 1] = -np.inf
        return out

def make_agent():
    return AlwaysZero()
'''
# The seed search: find the seeds in SLICE whose public agent seed is the one handed to fit, then answer with
# the environment of the first (the oracle: d_KL = 0 when it is the true one); found none, guess seed 0.
SEED_SEARCH = '''
import dataclasses
import numpy as np
from jtk import testbed
from jtk.envs.classification import environment_logits

SLICE = range({start}, {start} + {size})

class SeedSearch:
    def fit(self, x, y, seed=0, prior=None):
        p = testbed.Problem(temperature=prior.temperature, num_train=prior.num_train, tau=1, seed=0,
                            input_dim=prior.input_dim, num_classes=prior.num_classes)
        found = [s for s in SLICE if testbed.agent_seed(dataclasses.replace(p, seed=s), 0) == seed]
        self.params, _, _ = testbed.load_problem(dataclasses.replace(p, seed=found[0] if found else 0))
        self.rho = prior.temperature
        return self

    def sample_logits(self, x, num_samples, seed=0):
        logits = np.asarray(environment_logits(self.params, np.asarray(x, np.float32), self.rho))
        return np.broadcast_to(logits, (num_samples,) + logits.shape).copy()

def make_agent():
    return SeedSearch()
'''
SUBMISSIONS["seed_search"] = SEED_SEARCH.format(start=0, size=2 ** 12)
NOT_REGULAR = {"fifo": "FIFO", "folder": "directory", "link_to_config": "symbolic link"}  # named *.py: skipped


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


# ------------------------------------------------------------------ problems nobody can guess (issue #46, item 1)
SLICE = 2 ** 16  # the reduced seed space the attack tests search (the old space is 2^31 = 2^15 such slices)


def _old_hidden_seed(salt: str, i: int = 0) -> int:
    """How main 0ec0d1d derived hidden seed i: SHA-256(salt, i) cut to 31 bits (its first value ≥ practice_seeds)."""
    return int.from_bytes(hashlib.sha256(f"jtk-challenge:{salt}:{i}".encode()).digest()[:4], "big") & 0x7FFFFFFF


def _seed_search(handed: int, problem, candidates) -> list[int]:
    """The attack: every candidate seed whose public agent seed (jtk.testbed.agent_seed) is the one handed over."""
    cell = types.SimpleNamespace(**{k: getattr(problem, k) for k in ("num_train", "temperature", "input_dim")})
    found = []
    for s in candidates:
        cell.seed = s  # agent_seed reads these four fields; a Problem per candidate would cost 5x more
        if testbed.agent_seed(cell, 0) == handed:
            found.append(s)
    return found


def _public_x(problem, seed: int) -> np.ndarray:
    _, data, _ = testbed.load_problem(dataclasses.replace(problem, seed=seed))
    return np.asarray(data.x[:problem.num_train])


def _hidden_config(**overrides) -> challenge.ChallengeConfig:
    return challenge.ChallengeConfig(**{**TINY, "salt": "feedc0de" * 4, **overrides})


def test_old_31_bit_hidden_seeds_fall_to_a_search_of_the_agent_seed():
    """What main 0ec0d1d allowed: the agent seed is a public function of a 31-bit hidden seed, so a search finds it.

    A 2^16 slice holding the true seed takes about a second in Python; the whole 2^31 space is 2^15 slices (about
    11 core-hours of Python, 53–60 s of C in the issue). The seed then rebuilds the environment: the oracle.
    """
    salt = "feedc0de" * 4
    true = _old_hidden_seed(salt)
    p = dataclasses.replace(_hidden_config().hidden_problems()[0], seed=true)
    handed, x = testbed.agent_seed(p, 0), _public_x(p, true)  # what the worker was sent
    lo = true - true % SLICE
    t0 = time.perf_counter()
    found = [s for s in _seed_search(handed, p, range(lo, lo + SLICE)) if np.array_equal(_public_x(p, s), x)]
    seconds = time.perf_counter() - t0
    assert found == [true]
    print(f"old derivation: {SLICE} candidates searched in {seconds:.2f} s; 2^31 would take "
          f"{seconds * 2 ** 31 / SLICE / 3600:.1f} h of Python on one core")


def test_hidden_problems_leave_no_seed_to_search():
    """Every hidden key and agent seed is HMAC-SHA-256 of the salt (the spec, recomputed here); the search is empty."""
    cfg = _hidden_config()
    p = cfg.hidden_problems()[0]
    assert p.seed == 0  # an index, not a seed: the data come from the keys
    draws = challenge._Draws(cfg.salt)
    params, x, y = draws.training(p)
    handed = draws.seed(p, 0)

    def spec(purpose, tau=None):
        message = json.dumps({"derivation": "jtk-challenge/hmac-sha256/v2", "purpose": purpose, "index": 0,
                              "input_dim": 2, "num_classes": 2, "num_train": 10, "temperature_micro": 500000,
                              "tau": tau}, sort_keys=True, separators=(",", ":"))
        return hmac.new(cfg.salt.encode(), message.encode(), hashlib.sha256).digest()

    import jax

    words = {}
    for purpose in challenge.KEY_PURPOSES:
        key = challenge.hidden_key(cfg.salt, p, purpose)
        data = np.asarray(jax.random.key_data(key))
        assert data.dtype == np.uint32 and data.shape == (2,)  # the whole threefry2x32 key: 64 bits
        assert data.tolist() == np.frombuffer(spec(purpose)[:8], ">u4").tolist()
        words[purpose] = tuple(data.tolist())
    assert len(set(words.values())) == 3  # environment, training and test keys are independent draws
    assert handed == int.from_bytes(spec("agent-seed", 0)[:4], "big") >> 1  # its own label: no key in it
    assert draws.seed(p, 10) == int.from_bytes(spec("agent-seed", 10)[:4], "big") >> 1
    assert challenge.hidden_agent_seed("feedc0de" * 3 + "00000000", p, 0) != handed  # the salt decides
    # the attack finds no public seed with these data: not in the slice of the old design's seed for this salt,
    # not among the first seeds (practice included)
    old = _old_hidden_seed(cfg.salt)
    for lo in (0, old - old % SLICE):
        found = _seed_search(handed, p, range(lo, lo + SLICE))
        assert not any(np.array_equal(_public_x(p, s), x) for s in found), (lo, found)
    assert not np.array_equal(_public_x(p, 0), x) and not np.array_equal(_public_x(p, old), x)
    with pytest.raises(ValueError, match="salt"):
        challenge.hidden_key("short", p, "environment")
    with pytest.raises(ValueError, match="purpose.*'train'"):
        challenge.hidden_key(cfg.salt, p, "trian")
    with pytest.raises(ValueError, match="salt is missing"):
        _hidden_config(salt=None).hidden_problems()


def test_practice_problems_are_the_testbeds_own():
    """The honest path is unchanged: practice draws are jtk.testbed.load_problem's and agent_seed's."""
    cfg = _hidden_config()
    draws = challenge._Draws(None)
    for p in cfg.practice_problems():
        params, x, y = draws.training(p)
        _, data, test = testbed.load_problem(p)
        assert np.array_equal(x, np.asarray(data.x[:p.num_train])) and np.array_equal(y, np.asarray(data.y[:p.num_train]))
        assert np.array_equal(np.asarray(draws.test(p, params).x), np.asarray(test.x))
        assert draws.seed(p, 0) == testbed.agent_seed(p, 0) and draws.seed(p, p.tau) == testbed.agent_seed(p, p.tau)


# ------------------------------------------------------------------ scores that cannot be gamed (item 2 and 3)
def _entry(name, frac=1.0, kl=(0.1, 1.0), status="ok", kind="submission"):
    rows = pd.DataFrame([{"agent": name, "temperature": 0.5, "num_train": 10, "tau": tau, "seed": s, "input_dim": 2,
                          "test_inputs": "iid", "kl": k if np.isfinite(k) else np.inf, "kl_std": 0.0,
                          "frac_finite": frac, "accuracy": 0.7, "ece": 0.1, "likelihood": "mc100",
                          "train_seconds": 0.1, "eval_seconds": 0.1}
                         for s in (0, 1) for tau, k in zip((1, 10), kl)])
    return challenge.Entry(name, kind, status, rows=rows, seconds=1.0)


def test_an_entry_with_infinite_kl_is_invalid_and_ranked_below_every_valid_one():
    honest = _entry("honest", kl=(0.14, 1.38))
    clipped = _entry("hardmax", frac=0.8, kl=(0.0, 0.0))  # what the reference's clip makes of -inf logits
    none_finite = _entry("all_inf", frac=0.0, kl=(np.inf, np.inf))  # the entry that stopped main's board
    entries = [challenge._finite_verdict(e) for e in (clipped, honest, none_finite)]
    board = challenge.leaderboard(entries, reference="honest").set_index("name")
    assert board.loc["honest", "status"] == "ok" and board.loc["honest", "rank"] == 1
    for name, frac in (("hardmax", 0.8), ("all_inf", 0.0)):
        row = board.loc[name]
        assert row["status"] == "invalid" and pd.isna(row["rank"]) and pd.isna(row["kl_10"])
        assert row["frac_finite"] == frac and "+inf" in row["message"] and "not ranked" in row["message"]
    assert list(board.index)[0] == "honest"  # unranked entries come after every ranked one


def test_rows_that_cannot_be_summarised_cost_only_their_entry():
    broken = _entry("broken")
    broken.rows["kl"] = "not a number"
    board = challenge.leaderboard([_entry("fine"), broken], reference=None).set_index("name")
    assert board.loc["fine", "rank"] == 1
    assert board.loc["broken", "status"] == "error" and "could not be summarised" in board.loc["broken", "message"]


# ------------------------------------------------------------------ submissions are regular files (item 4)
def test_only_regular_files_are_read(tmp_path):
    good = tmp_path / "good.py"
    good.write_text("def make_agent():\n    return None\n")
    assert challenge._read_submission(good) == good.read_bytes()
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "folder.py").mkdir()
    (tmp_path / "link.py").symlink_to(good)
    (tmp_path / "big.py").write_bytes(b"#" * (challenge.SUBMISSION_MAX_BYTES + 1))
    t0 = time.monotonic()
    for name, why in (("fifo.py", "FIFO"), ("folder.py", "directory"), ("link.py", "symbolic link"),
                      ("big.py", "more than the 1.00 MB a hand-in may have")):
        with pytest.raises(ValueError, match=why):
            challenge._read_submission(tmp_path / name)
    assert time.monotonic() - t0 < 5  # a FIFO is never opened, so nothing waits for a writer
    assert exercises._kind(stat.S_IFCHR) == "character device"
    assert exercises._kind(stat.S_IFBLK) == "block device"


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
    os.mkfifo(subs / "fifo.py")  # nobody ever writes to it: reading it would hang the board
    (subs / "folder.py").mkdir()
    (subs / "link_to_config.py").symlink_to(cfg_path)  # would copy the salt into a worker
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
    for name, kind in NOT_REGULAR.items():
        row = lb.set_index("name").loc[name]
        kind = "FIFO (named pipe)" if kind == "FIFO" else kind
        assert row["status"] == "invalid"
        assert row["message"] == f"skipped: {name}.py is a {kind}, not a regular file: hand in the file itself"
        assert pd.isna(row["rank"])


def test_cheats_gain_nothing(board):
    """Issue #46's cheats against the docs' honest agent (sklearn_readme) and the mlp baseline.

    -inf and -1e300 hard-max logits (0.0000 on main, rank 1) are invalid: a wrong label has probability 0. So is
    the entry that looks honest to check_agent and hard-maxes when scored, and the one with no finite τ-sample
    on a problem (it stopped main's board). The seed search finds no seed and ranks below the honest agents.
    """
    lb = pd.read_csv(board["out"] / "leaderboard.csv").set_index("name")
    for name in ("hardmax", "hardmax_1e300", "sneaky_hardmax", "all_inf"):
        row = lb.loc[name]
        assert row["status"] == "invalid" and pd.isna(row["rank"]) and row["frac_finite"] < 1, row.to_dict()
        assert "+inf" in row["message"] and "not ranked" in row["message"]
    assert (lb.loc[["sklearn_readme", "mlp"], "frac_finite"] == 1.0).all()
    assert lb.loc["seed_search", "rank"] > max(lb.loc["sklearn_readme", "rank"], lb.loc["mlp", "rank"])
    assert lb.loc["seed_search", "kl_1"] > 5 * lb.loc["sklearn_readme", "kl_1"]
    # the sneaky one passed every probe: only the board's rule catches it
    details = json.loads((board["out"] / "submissions" / "sneaky_hardmax.json").read_text())
    assert all(ok for _, ok, _ in details["check_agent"]), details["check_agent"]
    probes = {n: (ok, m) for n, ok, m in json.loads((board["out"] / "submissions" / "hardmax.json").read_text())[
        "check_agent"]}
    assert not probes["finite"][0]
    # the rows stay with the instructor: the cause is visible there
    rows = pd.read_csv(board["out"] / "rows" / "hardmax.csv")
    assert (rows["frac_finite"] < 1).any()


def test_one_entry_without_a_finite_sample_never_costs_the_board(board):
    """all_inf has a problem whose every τ-sample is +inf (checked on the fixture's hidden data); main stopped the
    whole board there with exit 2. Now it has its row and everybody else theirs."""
    cfg = board["config"]
    draws = challenge._Draws(cfg.salt)
    no_finite = []
    for p in cfg.hidden_problems():
        params, _, _ = draws.training(p)
        y = np.asarray(draws.test(p, params).y).reshape(-1, p.tau)
        no_finite.append(bool((y == 1).any(axis=1).all()))  # AlwaysZero gives label 1 probability 0
    assert any(no_finite)
    rows = pd.read_csv(board["out"] / "rows" / "all_inf.csv")
    assert (rows["frac_finite"] == 0).any() and np.isinf(rows["kl"]).any()
    lb = pd.read_csv(board["out"] / "leaderboard.csv").set_index("name")
    assert lb.loc["all_inf", "status"] == "invalid"
    assert (board["out"] / "leaderboard.html").exists() and (board["out"] / "leaderboard.manifest.json").exists()
    assert lb["rank"].notna().sum() == (lb["status"] == "ok").sum() == 5  # every ok entry ranked


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
    for col in ("frac_finite",):
        assert col in lb.columns
    ok = lb[lb.status == "ok"]
    assert set(ok.index) == {"mlp", "mlp_like", "ensemble_plus_like", "sklearn_readme", "seed_search"}
    assert np.isfinite(ok[["kl_1", "kl_10", "kl_1_se", "diff_10", "diff_10_se"]].to_numpy()).all()
    assert ok.loc["mlp", "diff_10"] == 0.0 and (ok["frac_finite"] == 1.0).all()
    assert lb[lb.status != "ok"]["rank"].isna().all() and lb[lb.status != "ok"]["kl_10"].isna().all()
    assert sorted(ok["rank"]) == [1, 2, 3, 4, 5]
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
        assert len(rows) == 4 and set(rows.seed) == set(range(board["config"].seeds))  # hidden indices
        manifest = json.loads((out / "rows" / f"{name}.manifest.json").read_text())
        assert manifest["challenge"]["draw"] == "hidden" and manifest["challenge"]["entry"] == name
        manifest = json.loads((out / "rows" / f"{name}.manifest.json").read_text())
        assert manifest["rows"] == 4
    html = (out / "leaderboard.html").read_text()
    assert "<table" in html and "data:image/png;base64," in html and "sklearn_readme" in html
    details = json.loads((out / "submissions" / "incoherent.json").read_text())
    assert details["status"] == "incoherent"


def _hidden_secrets(cfg) -> list[str]:
    """The decimal words of every hidden key (what would rebuild an environment or a data set)."""
    import jax

    words = set()
    for p in cfg.hidden_problems():
        for purpose in challenge.KEY_PURPOSES:
            words.update(str(w) for w in np.asarray(jax.random.key_data(challenge.hidden_key(cfg.salt, p, purpose))))
    return sorted(words)


def test_no_file_holds_the_salt_or_a_hidden_key(board):
    out, cfg = board["out"], board["config"]
    secrets = _hidden_secrets(cfg)
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert cfg.salt not in text, path
            for word in secrets:
                assert word not in text, (path, word)
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
    for word in _hidden_secrets(cfg):
        assert word not in everything
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


# ------------------------------------------------------------------ a board anyone can verify (item 5)
def _copy_board(board, tmp_path):
    out = tmp_path / "board"
    shutil.copytree(board["out"], out)
    return out


def _rehash(csv_path) -> str:
    """What a careful forger does after editing a CSV: make its manifest's SHA-256 agree."""
    mpath = results.manifest_path(csv_path)
    manifest = json.loads(mpath.read_text())
    manifest["sha256"] = results.sha256_bytes(csv_path.read_bytes())
    mpath.write_text(json.dumps(manifest))
    return manifest["sha256"]


def _failed(table) -> list[tuple[str, str]]:
    return list(zip(table.loc[~table["ok"], "check"], table.loc[~table["ok"], "item"]))


def test_verify_passes_on_the_board_as_written(board, capsys):
    out = board["out"]
    table = challenge.verify_board(out)
    assert not _failed(table), table[~table["ok"]].to_string()
    assert (table["check"] == "board row").sum() == len(pd.read_csv(out / "leaderboard.csv"))
    # the board, its page, and each rows file with its manifest
    assert (table["check"] == "sha256").sum() == 2 + 2 * len(list((out / "rows").glob("*.csv")))
    assert challenge.is_board(out) and not challenge.is_board(out / "rows" / "mlp.csv")
    assert cli.main(["verify", str(out / "leaderboard.csv"), "--no-progress"]) == 0
    assert "verified" in capsys.readouterr().out
    # with the instructor's file: rows scored again (the baseline's, in this process) agree
    table = challenge.verify_board(out, config=board["root"] / "challenge.toml", names=["mlp"], sample=2)
    assert not _failed(table) and (table["check"] == "recompute").sum() == 2
    assert {"config", "salt"} <= set(table["check"])
    # a rows file of a board is verified through its board: its problems come from the salt
    with pytest.raises(ValueError, match="challenge board"):
        runs.verify(out / "rows" / "mlp.csv")


def test_verify_catches_an_edited_board(board, tmp_path):
    out = _copy_board(board, tmp_path)
    csv = out / "leaderboard.csv"
    lb = pd.read_csv(csv)
    i = lb.index[lb["name"] == "mlp_like"][0]
    lb.loc[i, "kl_10"] = lb.loc[i, "kl_10"] / 2  # a better score, the hash made to agree
    csv.write_bytes(results.csv_bytes(lb))
    _rehash(csv)
    table = challenge.verify_board(out)
    assert _failed(table) == [("board row", "mlp_like")]
    assert "kl_10" in table.loc[~table["ok"], "note"].iloc[0]
    lb = pd.read_csv(board["out"] / "leaderboard.csv")  # ranks swapped, scores kept: ranks follow from the scores
    first, second = lb.index[lb["rank"] == 1][0], lb.index[lb["rank"] == 2][0]
    lb.loc[[first, second], "rank"] = [2, 1]
    csv.write_bytes(results.csv_bytes(lb))
    _rehash(csv)
    failed = _failed(challenge.verify_board(out))
    assert failed == [("board row", lb.loc[first, "name"]), ("board row", lb.loc[second, "name"])]


def test_verify_catches_an_edited_hash(board, tmp_path, capsys):
    out = _copy_board(board, tmp_path)
    mpath = results.manifest_path(out / "leaderboard.csv")
    manifest = json.loads(mpath.read_text())
    manifest["sha256"] = "0" * 64
    mpath.write_text(json.dumps(manifest))
    assert _failed(challenge.verify_board(out)) == [("sha256", "leaderboard.csv")]
    assert cli.main(["verify", str(out), "--no-progress"]) == 1
    assert "FAILED" in capsys.readouterr().err
    # a rows file edited and its own manifest's hash made to agree: the board manifest's record does not
    out = _copy_board(board, tmp_path / "again")
    rows_csv = out / "rows" / "mlp_like.csv"
    rows = pd.read_csv(rows_csv)
    rows.loc[0, "accuracy"] = 1.0  # a column the board does not show
    rows_csv.write_bytes(results.csv_bytes(rows))
    _rehash(rows_csv)
    assert _failed(challenge.verify_board(out)) == [("sha256", "rows/mlp_like.csv"),
                                                    ("sha256", "rows/mlp_like.manifest.json")]


def test_verify_recomputes_rows_and_catches_an_edited_submission_row(board, tmp_path):
    """A complete forgery: a submission's row edited, its hash, the board manifest's record of it and the board
    derived again to match. Every public check passes; scoring the row again from the file with the salt fails."""
    out = _copy_board(board, tmp_path)
    rows_csv = out / "rows" / "sklearn_readme.csv"
    rows = pd.read_csv(rows_csv)
    rows.loc[0, "kl"] = rows.loc[0, "kl"] / 4
    rows_csv.write_bytes(results.csv_bytes(rows))
    digest = _rehash(rows_csv)
    csv = out / "leaderboard.csv"
    mpath = results.manifest_path(csv)
    manifest = json.loads(mpath.read_text())
    manifest["challenge"]["rows"]["sklearn_readme"]["sha256"] = digest
    manifest["challenge"]["rows"]["sklearn_readme"]["manifest_sha256"] = results.sha256_file(
        results.manifest_path(rows_csv))
    lb = pd.read_csv(csv)
    entries = []
    for _, r in lb.iterrows():
        rec = manifest["challenge"]["rows"].get(r["name"])
        entries.append(challenge._finite_verdict(challenge.Entry(
            r["name"], r["kind"], "ok" if rec else r["status"], rows=pd.read_csv(out / rec["file"]) if rec else None,
            seconds=r["seconds"])))
    forged = challenge.leaderboard(entries, manifest["challenge"]["reference"])
    forged["message"] = forged["name"].map(dict(zip(lb["name"], lb["message"])))
    csv.write_bytes(results.csv_bytes(forged))
    manifest["sha256"] = results.sha256_bytes(csv.read_bytes())
    mpath.write_text(json.dumps(manifest))
    assert not _failed(challenge.verify_board(out))  # consistent: no public check can see it
    table = challenge.verify_board(out, config=board["root"] / "challenge.toml",
                                   submissions=board["root"] / "submissions", names=["sklearn_readme"], sample=4)
    recomputed = table[table["check"] == "recompute"]
    assert len(recomputed) == 4
    first = (f"sklearn_readme seed={rows.loc[0, 'seed']} num_train={rows.loc[0, 'num_train']} "
             f"temperature={rows.loc[0, 'temperature']:g} tau={rows.loc[0, 'tau']}")
    assert _failed(table) == [("recompute", first)], table.to_string()
    assert recomputed.loc[~recomputed["ok"], "recorded"].iloc[0] == pytest.approx(rows.loc[0, "kl"])


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
