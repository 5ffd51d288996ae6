"""Boards anyone can verify: the signature against the published key, and the instructor's full re-check.

One small signed board (a baseline, two honest numpy agents, one of them named ``NA``, one that raises and one
made invalid by -inf logits, whose rows are kept) is scored once; every test reads a copy. A second board holds
one entry that never returns, scored with a short time limit. The forgeries are what a student holding a copy of
the board could do: rows edited with every hash and the board made to agree, an honest entry
marked ``timeout`` with its rows dropped, rows edited where a predictable sample does not look, the numerics key
rewritten to loosen the tolerance, and a board signed with another key.
"""

import base64
import contextlib
import hashlib
import io
import json
import os
import shutil
import textwrap

import numpy as np
import pandas as pd
import pytest

from jtk import _info, cli, results
from jtk.course import _signing, challenge, untrusted

CONFIG = dict(grid="quick", seeds=2, baselines=["mlp"], time_limit_s=120.0, memory_limit_mb=3072, practice_seeds=1,
              num_train=[10], temperatures=[0.5], num_test=100, num_samples=50)

HONEST = """
import numpy as np

class Bootstrap:
    '''Logistic regressions fitted by gradient descent on bootstrap resamples; sample m is member m % 8.'''
    def fit(self, x, y, seed=0, prior=None):
        rng = np.random.default_rng(seed)
        k = prior.num_classes
        self.w = []
        for _ in range(8):
            i = rng.integers(0, len(x), len(x))
            xb, yb = np.c_[x[i], np.ones(len(i))], np.eye(k)[y[i]]
            w = np.zeros((xb.shape[1], k))
            for _ in range(200):
                p = np.exp(xb @ w - (xb @ w).max(1, keepdims=True))
                w -= 0.5 * (xb.T @ (p / p.sum(1, keepdims=True) - yb) / len(xb) + 0.1 * w)
            self.w.append(w)
        return self

    def sample_logits(self, x, num_samples, seed=0):
        xb = np.c_[x, np.ones(len(x))]
        return np.stack([xb @ self.w[m % 8] for m in range(num_samples)])

def make_agent():
    return Bootstrap()
"""
LOOPS = """
import time

class Forever:
    def fit(self, x, y, seed=0, prior=None):
        while True:
            time.sleep(0.1)

def make_agent():
    return Forever()
"""
SUBMISSIONS = {
    "honest": HONEST,
    "NA": HONEST,  # a name pandas would read as missing
    "raises": """
        def make_agent():
            class Broken:
                def fit(self, x, y, seed=0, prior=None):
                    raise RuntimeError("my fit is broken")
            return Broken()
        """,
    "all_inf": """
        import numpy as np

        class AlwaysZero:
            def fit(self, x, y, seed=0, prior=None):
                return self

            def sample_logits(self, x, num_samples, seed=0):
                out = np.zeros((num_samples, len(x), 2))
                out[..., 1] = -np.inf   # class 1 has probability 0: its rows are kept, the entry is invalid
                return out

        def make_agent():
            return AlwaysZero()
        """,
}
EXPECTED = {"mlp": "ok", "honest": "ok", "NA": "ok", "raises": "error", "all_inf": "invalid"}


def _read_csv(data: bytes) -> pd.DataFrame:
    """A board's CSV as verify reads it (no NA guessing)."""
    return untrusted.read_csv(io.BytesIO(data))


def _write_config(path, **overrides):
    cfg = {**CONFIG, "salt": "5eed" * 8, "sandbox": "auto", **overrides}
    path.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in cfg.items()))
    os.chmod(path, 0o600)
    return path


@pytest.fixture(scope="module")
def instructor(tmp_path_factory):
    """The instructor's config folder (signing key and record), outside every board, for the whole module."""
    home = tmp_path_factory.mktemp("instructor-config")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(home))
        yield home


@pytest.fixture(scope="module")
def board(instructor, tmp_path_factory):
    root = tmp_path_factory.mktemp("signed-board")
    cfg = _write_config(root / "challenge.toml")
    subs = root / "submissions"
    subs.mkdir()
    for name, src in SUBMISSIONS.items():
        (subs / f"{name}.py").write_text(textwrap.dedent(src))
    out = root / "board"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli.main(["challenge", "score", str(subs), "--config", str(cfg), "--out", str(out), "--workers", "2"])
    assert code == 0, printed.getvalue()
    key_file = instructor / "jtk" / _signing.KEY_FILE
    key = _signing.load_signing_key(key_file)
    return dict(root=root, config=cfg, subs=subs, out=out, key=key, key_file=key_file, printed=printed.getvalue())


def _copy(board, tmp_path, name="copy"):
    out = tmp_path / name
    shutil.copytree(board["out"], out)
    return out


def _failed(table) -> list[tuple[str, str]]:
    return list(zip(table.loc[~table["ok"], "check"], table.loc[~table["ok"], "item"]))


def _full_recheck(board, out, **kw):
    return challenge.verify_board(out, config=board["config"], submissions=board["subs"], sample="all", workers=2,
                                  **kw)


# ------------------------------------------------------------------ what the forger does
def _forge(out, edit):
    """Edits a board's rows and statuses, then makes every hash, record and the board agree (jtk's own leaderboard).

    ``edit(rows, status, message)`` changes the dicts in place: rows[name] is a DataFrame (delete it to drop the
    entry's rows), status[name] and message[name] the board's words. Returns the forged board's manifest.
    """
    csv = out / "leaderboard.csv"
    mpath = results.manifest_path(csv)
    manifest = json.loads(mpath.read_text())
    record = manifest["challenge"]["rows"]
    lb = _read_csv(csv.read_bytes())
    rows = {n: _read_csv((out / rec["file"]).read_bytes()) for n, rec in record.items()}
    status = dict(zip(lb["name"], lb["status"]))
    message = {n: m if isinstance(m, str) else "" for n, m in zip(lb["name"], lb["message"])}
    edit(rows, status, message)
    for name in list(record):
        rows_csv = out / record[name]["file"]
        if name not in rows:
            rows_csv.unlink()
            results.manifest_path(rows_csv).unlink()
            del record[name]
            continue
        rows_csv.write_bytes(results.csv_bytes(rows[name]))
        rman = json.loads(results.manifest_path(rows_csv).read_text())
        rman["sha256"] = record[name]["sha256"] = results.sha256_bytes(rows_csv.read_bytes())
        edit_manifest = getattr(edit, "manifest", None)
        if edit_manifest is not None:
            edit_manifest(name, rman)
        results.manifest_path(rows_csv).write_text(json.dumps(rman))
        record[name]["manifest_sha256"] = results.sha256_file(results.manifest_path(rows_csv))
    entries = [challenge._finite_verdict(challenge.Entry(
        r["name"], r["kind"], "ok" if r["name"] in rows else status[r["name"]], message=message[r["name"]],
        rows=rows.get(r["name"]), seconds=r["seconds"])) for _, r in lb.iterrows()]
    forged = challenge.leaderboard(entries, manifest["challenge"]["reference"])
    csv.write_bytes(results.csv_bytes(forged))
    manifest["sha256"] = results.sha256_bytes(csv.read_bytes())
    manifest["rows"] = len(forged)
    mpath.write_text(json.dumps(manifest, indent=2))
    return manifest


def _lower_rows(name, frac=0.25, which=None):
    def edit(rows, status, message):
        r = rows[name]
        idx = r.index if which is None else which
        r.loc[idx, "kl"] = r.loc[idx, "kl"] * (1 - frac)
    return edit


def _timeout_without_rows(rows, status, message):
    del rows["honest"]
    status["honest"] = "timeout"
    message["honest"] = "exceeded the time limit of 120 s (wall clock, all problems)"


def _rewrite_numerics(rows, status, message):
    """Every honest kl lowered by 1.9 % + 0.0045: inside the cross-machine tolerance, outside the same-machine one."""
    r = rows["honest"]
    r["kl"] = r["kl"] - (0.019 * r["kl"].abs() + 0.0045)


_rewrite_numerics.manifest = lambda name, rman: rman["provenance"]["numerics"].update(numerics_key="elsewhere/avx2")


def _forge_unsampled(board, tmp_path):
    """A board whose one edited honest row is one a predictable re-check (seed 0, one row) does not score again."""
    for i in range(4):
        out = _copy(board, tmp_path, f"unsampled-{i}")
        _forge(out, _lower_rows("honest", which=[i]))
        lb = _read_csv((out / "leaderboard.csv").read_bytes())  # the forged order, which picks the rows
        record = json.loads(results.manifest_path(out / "leaderboard.csv").read_text())["challenge"]["rows"]
        rows = {n: _read_csv((out / record[n]["file"]).read_bytes()) for n in lb.loc[lb["status"] == "ok", "name"]}
        if i not in challenge._sample_rows(rows, list(rows), 1, 0)["honest"]:
            return out
    raise AssertionError("every honest row is sampled")


FORGERIES = {
    "rehashed": _lower_rows("honest"),
    "status changed, rows dropped": _timeout_without_rows,
    "numerics key rewritten": _rewrite_numerics,
}


# ------------------------------------------------------------------ the genuine board
def test_score_signs_the_board_and_prints_the_public_key(board):
    out, key = board["out"], board["key"]
    assert (board["key_file"].stat().st_mode & 0o777) == 0o600  # created private, outside the board
    assert not any(p.suffix == ".pem" for p in out.rglob("*"))
    sig = json.loads((out / _signing.SIGNATURE_FILE).read_text())
    assert sig["public_key"] == key.public_key and sig["fingerprint"] == key.fingerprint
    lb = _read_csv((out / "leaderboard.csv").read_bytes()).set_index("name")
    assert {n: lb.loc[n, "status"] for n in EXPECTED} == EXPECTED
    manifest = json.loads(results.manifest_path(out / "leaderboard.csv").read_text())["challenge"]
    assert manifest["numerics_key"] == _info.numerics()["numerics_key"]
    assert set(manifest["rows"]) == {"mlp", "honest", "NA", "all_inf"}
    for rec in manifest["rows"].values():
        assert rec["manifest_sha256"] == results.sha256_file(results.manifest_path(out / rec["file"]))
    # the fingerprint is 80 bits of SHA-256 of the raw key, computed here independently
    digest = hashlib.sha256(base64.b64decode(key.public_key)).hexdigest()[:20]
    assert key.fingerprint.replace("-", "") == digest
    # the command said it created the key, where, and what to publish; the next board reuses it
    printed = board["printed"]
    assert f"created the signing key {board['key_file']} (mode 0600" in printed
    assert f"public key {key.public_key}" in printed and f"fingerprint {key.fingerprint}" in printed
    assert not key.created and _signing.load_signing_key(board["key_file"]).public_key == key.public_key


def test_the_genuine_board_passes_with_the_key_and_the_full_recheck(board, capsys):
    out, key = board["out"], board["key"]
    table = challenge.verify_board(out, key=key.public_key)
    assert not _failed(table) and table.attrs["authenticated"]
    assert ("signature", "leaderboard.manifest.json") in zip(table["check"], table["item"])
    assert ("board row", "NA") in zip(table["check"], table["item"])  # read as a name, not as missing
    assert not _failed(challenge.verify_board(out, fingerprint=key.fingerprint.upper().replace("-", " ")))
    # the re-check with several submissions (main: FileExistsError on the second one's private copy)
    table = _full_recheck(board, out, key=key.public_key)
    assert not _failed(table), table[~table["ok"]].to_string()
    statuses = table[table["check"] == "status"].set_index("item")
    assert dict(zip(statuses.index, statuses["recomputed"])) == EXPECTED
    n_rows = sum(len(pd.read_csv(f)) for f in (out / "rows").glob("*.csv"))
    assert (table["check"] == "recompute").sum() == n_rows  # every row, all of the invalid entry's included
    assert "every row" in table.attrs["tolerance"] and "same machine" in table.attrs["tolerance"]
    # through the command line, with the public key in a file as the course page would give it
    pub = board["root"] / "instructor.pub"
    pub.write_text(key.public_key + "\n")
    assert cli.main(["verify", str(out), "--key", str(pub), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"signed by the published key {key.fingerprint}" in printed


def test_a_default_recheck_draws_a_fresh_seed_and_prints_it(board):
    tables = [challenge.verify_board(board["out"], config=board["config"], submissions=board["subs"], sample=2,
                                     names=["mlp"]) for _ in range(2)]
    seeds = [t.attrs["seed"] for t in tables]
    assert seeds[0] != seeds[1]
    assert f"--seed {seeds[0]}" in tables[0].attrs["tolerance"]
    again = challenge.verify_board(board["out"], config=board["config"], submissions=board["subs"], sample=2,
                                   names=["mlp"], seed=seeds[0])
    assert list(again.loc[again["check"] == "recompute", "item"]) == list(
        tables[0].loc[tables[0]["check"] == "recompute", "item"])


def test_without_a_key_verify_says_it_proved_only_consistency(board, capsys):
    table = challenge.verify_board(board["out"])
    assert not _failed(table) and not table.attrs["authenticated"]
    assert "proves only that the board's files agree" in table.attrs["signature"]
    assert board["key"].fingerprint in table.attrs["signature"]
    assert cli.main(["verify", str(board["out"]), "--no-progress"]) == 0
    assert "only that the board's files agree" in capsys.readouterr().out


# ------------------------------------------------------------------ forgeries: the key rejects each
@pytest.mark.parametrize("name", FORGERIES)
def test_a_forged_board_is_rejected_by_the_key_and_by_the_full_recheck(board, tmp_path, name, capsys):
    out = _copy(board, tmp_path)
    _forge(out, FORGERIES[name])
    assert not _failed(challenge.verify_board(out))  # consistent: no keyless check sees it
    table = challenge.verify_board(out, key=board["key"].public_key)
    assert _failed(table) == [("signature", "leaderboard.manifest.json")]
    assert "does not match the board manifest" in table.loc[~table["ok"], "note"].iloc[0]
    assert cli.main(["verify", str(out), "--fingerprint", board["key"].fingerprint, "--no-progress"]) == 1
    assert "NOT authenticated" in capsys.readouterr().err
    table = _full_recheck(board, out)
    failed = _failed(table)
    assert failed and all(item.startswith("honest") for _, item in failed), table[~table["ok"]].to_string()
    if name == "status changed, rows dropped":
        assert failed == [("status", "honest")]
        assert table.loc[~table["ok"], "recomputed"].iloc[0] == "ok"
    else:
        assert {check for check, _ in failed} == {"recompute"} and len(failed) == 4
    if name == "numerics key rewritten":  # the board's own provenance never loosens the tolerance
        assert "same machine" in table.attrs["tolerance"]


def test_rows_a_predictable_sample_skips_are_caught_by_the_key_and_the_full_recheck(board, tmp_path):
    out = _forge_unsampled(board, tmp_path)  # the dodge that worked against main's seed-0 sample
    assert not _failed(challenge.verify_board(out))
    assert _failed(challenge.verify_board(out, key=board["key"].public_key)) == [
        ("signature", "leaderboard.manifest.json")]
    failed = _failed(_full_recheck(board, out))
    assert [check for check, _ in failed] == ["recompute"] and failed[0][1].startswith("honest")


def test_a_board_signed_with_another_key_is_rejected(board, tmp_path):
    """The forger signs their forgery (or the genuine board) with their own key: the published key rejects it."""
    other = _signing.load_signing_key(tmp_path / "other.pem")
    for forged in (False, True):
        out = _copy(board, tmp_path, f"other-{forged}")
        if forged:
            _forge(out, _lower_rows("honest"))
        manifest = results.manifest_path(out / "leaderboard.csv").read_bytes()
        (out / _signing.SIGNATURE_FILE).write_text(json.dumps(_signing.sign(other, manifest)))
        assert not _failed(challenge.verify_board(out))
        table = challenge.verify_board(out, key=board["key"].public_key)
        assert _failed(table) == [("signature", "leaderboard.manifest.json")]
        note = table.loc[~table["ok"], "note"].iloc[0]
        assert f"signed by another key (fingerprint {other.fingerprint})" in note and board["key"].fingerprint in note
        assert not _failed(challenge.verify_board(out, key=other.public_key))  # it is a valid signature, by them


def test_a_missing_signature_is_named(board, tmp_path):
    out = _copy(board, tmp_path)
    (out / _signing.SIGNATURE_FILE).unlink()
    table = challenge.verify_board(out, fingerprint=board["key"].fingerprint)
    assert _failed(table) == [("signature", "leaderboard.manifest.json")]
    assert table.loc[~table["ok"], "note"].iloc[0].startswith("no signature")
    assert "carries no signature" in challenge.verify_board(out).attrs["signature"]


@pytest.mark.parametrize("path", ["leaderboard.csv", "leaderboard.html", "leaderboard.manifest.json",
                                  "leaderboard.sig", "rows/honest.csv", "rows/honest.manifest.json"])
def test_any_edited_byte_is_rejected_and_named(board, tmp_path, path):
    out = _copy(board, tmp_path)
    f = out / path
    data = bytearray(f.read_bytes())
    i = data.index(b"honest") if b"honest" in data and path != "leaderboard.sig" else len(data) // 2
    if path == "leaderboard.sig":
        i = data.index(b'"signature": "') + len('"signature": "') + 3
    data[i] = ord("A") if data[i] != ord("A") else ord("B")
    f.write_bytes(bytes(data))
    try:
        table = challenge.verify_board(out, key=board["key"].public_key)
    except results.ManifestMismatch:  # the manifest no longer parses: jtk verify exits 1 with the reason
        assert path == "leaderboard.manifest.json"
        return
    failed = _failed(table)
    assert failed, path
    if path in ("leaderboard.manifest.json", "leaderboard.sig"):
        assert ("signature", "leaderboard.manifest.json") in failed
    else:  # the signed manifest is intact: the file's own hash names it
        assert ("sha256", path) in failed and ("signature", "leaderboard.manifest.json") not in failed


def test_unlisted_files_and_missing_rows_are_named(board, tmp_path):
    out = _copy(board, tmp_path)
    shutil.copy(out / "rows" / "honest.csv", out / "rows" / "extra.csv")
    lb = pd.read_csv(out / "leaderboard.csv", keep_default_na=False)
    lb = lb[lb["name"] != "NA"]  # an entry dropped from the board
    (out / "leaderboard.csv").write_bytes(results.csv_bytes(lb))
    failed = _failed(challenge.verify_board(out))
    assert ("file", "rows/extra.csv") in failed and ("sha256", "leaderboard.csv") in failed and ("rows", "NA") in failed


def test_a_board_written_again_over_an_old_one_keeps_none_of_its_rows(board, tmp_path):
    """--force into an earlier board's folder: its rows files are not this board's, and verify would name them."""
    out = _copy(board, tmp_path)
    shutil.copy(out / "rows" / "honest.csv", out / "rows" / "gone.csv")
    shutil.copy(out / "rows" / "honest.manifest.json", out / "rows" / "gone.manifest.json")
    lb = _read_csv((out / "leaderboard.csv").read_bytes())
    record = json.loads(results.manifest_path(out / "leaderboard.csv").read_text())["challenge"]
    entries = [challenge.Entry(r["name"], r["kind"], r["status"], rows=_read_csv(
        (out / record["rows"][r["name"]]["file"]).read_bytes()) if r["name"] in record["rows"] else None,
        sha256=record["submissions"].get(r["name"])) for _, r in lb.iterrows()]
    cfg = challenge.load_config(board["config"])
    challenge._write_board(out, entries, challenge.leaderboard(entries, cfg.reference_baseline), cfg,
                           cfg.hidden_problems(), "2026-01-01T00:00:00+00:00", True, "again", board["key"])
    assert not (out / "rows" / "gone.csv").exists() and not (out / "rows" / "gone.manifest.json").exists()
    assert not _failed(challenge.verify_board(out, key=board["key"].public_key))


# ------------------------------------------------------------------ statuses are re-derived
@pytest.fixture(scope="module")
def looping(instructor, tmp_path_factory):
    """A board of one entry that never returns (6 s limit) and no baseline."""
    root = tmp_path_factory.mktemp("timeout-board")
    cfg = _write_config(root / "challenge.toml", baselines=[], time_limit_s=6.0)
    subs = root / "submissions"
    subs.mkdir()
    (subs / "loops.py").write_text(LOOPS)
    challenge.score(subs, cfg, root / "board", progress=False)
    return dict(root=root, config=cfg, subs=subs, out=root / "board")


def test_a_timeout_is_run_again_and_must_time_out_again(looping):
    table = challenge.verify_board(looping["out"], config=looping["config"], submissions=looping["subs"])
    assert not _failed(table), table[~table["ok"]].to_string()
    assert table.loc[table["check"] == "status", "recomputed"].tolist() == ["timeout"]


def test_a_swapped_a_missing_file_and_one_not_on_the_board_are_named(looping, tmp_path):
    subs = tmp_path / "submissions"
    subs.mkdir()
    (subs / "loops.py").write_text(textwrap.dedent(HONEST))  # would no longer time out: its SHA-256 is not the board's
    (subs / "late.py").write_text(textwrap.dedent(HONEST))
    table = challenge.verify_board(looping["out"], config=looping["config"], submissions=subs)
    assert _failed(table) == [("status", "late"), ("sha256", "submission loops.py")]
    assert "no row on the board" in table.loc[~table["ok"], "note"].iloc[0]
    (subs / "loops.py").unlink()
    table = challenge.verify_board(looping["out"], config=looping["config"], submissions=subs)
    assert _failed(table) == [("status", "late"), ("status", "loops")]
    assert "no submission file for 'loops'" in table.loc[~table["ok"], "note"].iloc[1]


def test_bad_keys_and_samples_are_refused_with_the_argument_named(board, tmp_path, capsys):
    with pytest.raises(ValueError, match="key must be the instructor's Ed25519 public key"):
        challenge.verify_board(board["out"], key="not-a-key")
    with pytest.raises(ValueError, match="fingerprint must be 20 hex digits"):
        challenge.verify_board(board["out"], fingerprint="1234")
    with pytest.raises(ValueError, match="sample must be an int >= 1 or 'all'"):
        challenge.verify_board(board["out"], sample="most")
    assert cli.main(["verify", str(board["out"]), "--key", "nope"]) == 2
    assert "key must be the instructor's Ed25519 public key" in capsys.readouterr().err
    rows_csv = str(board["out"] / "rows" / "mlp.csv")  # a results CSV, not a board: its options are refused
    for option in (["--sample", "all"], ["--key", board["key"].public_key], ["--fingerprint", "0" * 20]):
        assert cli.main(["verify", rows_csv, *option]) == 2
        assert f"{option[0]}{' all' if option[1] == 'all' else ''} is for challenge boards" in capsys.readouterr().err
    with pytest.raises(ValueError, match="workers must be an int"):
        challenge.verify_board(board["out"], workers=0)
    loose = tmp_path / "loose.pem"
    shutil.copy(board["key_file"], loose)
    os.chmod(loose, 0o644)
    with pytest.raises(ValueError, match="mode 0644.*chmod 600"):
        _signing.load_signing_key(loose)
    (tmp_path / "notakey.pem").write_text("hello")
    os.chmod(tmp_path / "notakey.pem", 0o600)
    with pytest.raises(ValueError, match="not an unencrypted PEM private key"):
        _signing.load_signing_key(tmp_path / "notakey.pem")


def test_the_numerics_tolerance_comes_from_the_instructors_record(board, tmp_path, monkeypatch):
    """Found by the signed manifest's SHA-256 in the record beside the key; absent there, the strict one."""
    manifest = results.manifest_path(board["out"] / "leaderboard.csv").read_bytes()
    rtol, _, why = challenge._recorded_tolerance(results.sha256_bytes(manifest))
    assert rtol == results.VERIFY_RTOL and "record says it was scored on numerics key" in why
    rtol, _, why = challenge._recorded_tolerance("0" * 64)
    assert rtol == results.VERIFY_RTOL and "has no entry" in why
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert challenge._recorded_tolerance(results.sha256_bytes(manifest))[0] == results.VERIFY_RTOL
    _signing.record_board(results.sha256_bytes(manifest), {"numerics_key": "elsewhere/avx2"})
    rtol, atol, why = challenge._recorded_tolerance(results.sha256_bytes(manifest))
    assert (rtol, atol) == (results.CROSS_MACHINE_RTOL, results.CROSS_MACHINE_ATOL) and "elsewhere/avx2" in why
    assert (tmp_path / "jtk" / _signing.RECORD_FILE).stat().st_mode & 0o777 == 0o600


def test_names_pandas_would_guess_are_read_as_names():
    data = b"name,kind,status,kl_1\nNA,submission,ok,0.5\nnull,submission,error,\nNaN,submission,ok,inf\n"
    table = _read_csv(data)
    assert list(table["name"]) == ["NA", "null", "NaN"]
    assert np.isnan(table.loc[1, "kl_1"]) and np.isinf(table.loc[2, "kl_1"]) and table.loc[0, "kl_1"] == 0.5
