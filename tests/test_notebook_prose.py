"""Numbers in the notebooks' prose come from the run (issue #15): a static check, nothing is executed.

Every *measured* number quoted in a markdown cell of ``notebooks/*.ipynb`` must appear in the saved output of a
code cell above it that is tagged ``nbval-check-output``. nbval re-runs the notebooks and fails when a tagged
cell's output drifts; this test closes the other half of the loop: prose edited by hand, or a tagged output that
no longer says what the prose quotes, fails here without running anything.

What counts as a measured number (a *candidate*):

* a decimal number: ``0.12``, ``−2.38``, ``1.5``;
* a number with a percent sign: ``95 %``, ``5–95 %`` (the ``95``);
* a number with a unit of time: ``1.5 s``, ``20 min``, ``3 minutes``.

Plain integers are counts and settings (``500 Adam steps``, ``K = 10``, ``50 training inputs``) and are not
candidates. Neither is anything inside inline code or a code block (it is code, not a claim), a section
reference (``§4.2``), or a setting written as an assignment of one of the notebooks' symbols (``ρ = 0.1``,
``x = −2.38, 1.2``, ``f_main = 0.5``): those are definitions the code cells use, not results.

A number matches when the same numeral appears as a whole token (``0.12`` does not match inside ``0.125``) in
the text of a preceding tagged cell's output (stdout, or a plain-text result). A percent must be printed as a
percent: ``95 %`` is not found in ``0.95``.

Anything else a notebook may quote without computing it is in :data:`ALLOWED`, per notebook, with the reason:
constants of the method (1.96), definitions of the problem (noise variance 0.01), and the planning estimates of
the start page. Each entry must still match the notebook, so a stale one fails (:func:`test_allow_list_is_used`).
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TAG = "nbval-check-output"

NUM = r"[-−]?\d+(?:\.\d+)?"
# Candidates: decimals, percentages, durations (group "num" holds the numeral as written).
CANDIDATE = re.compile(
    r"(?<![\w.])(?P<pct>[-−]?\d+(?:\.\d+)?)\s?%"  # a percentage
    r"|(?<![\w.])(?P<dur>\d+(?:\.\d+)?)\s?(?:ms|s|sec|seconds?|min|minutes?|h|hours?)\b"  # a duration
    r"|(?<![\w.])(?P<num>[-−]?\d+\.\d+)(?![\d.]*\d)"  # any other decimal number
)
SYMBOLS = r"(?:ρ|τ|λ|σ²|σ|n|N|K|k|d|T|M|H|q|x|l|f_main|lengthscale|temperature|input_scale|noise_std)"
ASSIGNMENT = re.compile(rf"(?<![\w]){SYMBOLS}\s*(?:=|≤|≥|<|>)\s*{NUM}"
                        rf"(?:\s*(?:,|/|…|–|and|or)\s*{NUM}(?![\w.]))*")
ALWAYS_STRIPPED = [
    re.compile(r"```.*?```", re.S),  # code blocks
    re.compile(r"`[^`]*`"),  # inline code
    re.compile(r"§\s?\d+(?:[.–-]\d+)*"),  # section references: §4.2, §2–3
    re.compile(r"\b(?:App|Fig|Figs|eq|Alg)\.\s?[A-Z]?\.?\d+(?:\.\d+)*"),  # App. D.1, Fig. 12
    re.compile(r"\]\([^)]*\)"),  # link targets
    ASSIGNMENT,
]

# notebook file name → [(regex of the allowed phrase, why it is not a measurement)]
ALLOWED: dict[str, list[tuple[str, str]]] = {
    "00_start_here.ipynb": [
        (r"\d+(?:–\d+)?\s?min", "planning estimates of the time a lab takes (reading and interaction), stated as "
                                 "estimates; the measured headless run times are in README.md"),
    ],
    "04_blr_coverage.ipynb": [
        (r"1\.96", "the normal quantile of the ±1.96 σ interval (a constant of the method)"),
        (r"95 %", "the nominal coverage of ±1.96 σ"),
        (r"probability exactly 0\.95", "what probability matching guarantees (a theorem, checked by the cell "
                                        "below it)"),
    ],
    "05_tal_batchmig.ipynb": [
        (r"noise variance 0\.01", "the oracle's noise variance (jtk.envs.gp.NOISE_VAR), a definition"),
        (r"⌊0\.01 ·", "the paper's query budget: 1 % of all points per round, a definition"),
    ],
    "06_bandit.ipynb": [
        (r"5–95 %", "the bootstrap interval the paper reports, a definition"),
    ],
}


def _text_of(output: dict) -> str:
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    elif output.get("output_type") in ("execute_result", "display_data"):
        text = output.get("data", {}).get("text/plain", "")
    else:
        return ""
    return "".join(text) if isinstance(text, list) else text


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _norm(text: str) -> str:
    return text.replace("−", "-").replace("\u202f", " ").replace("\xa0", " ")


def candidates(markdown: str, allowed=()) -> list[tuple[str, str]]:
    """(numeral, kind) of every measured-number candidate in a markdown cell, after stripping code, references,
    assignments and the allowed phrases. kind is "decimal", "percent" or "duration"."""
    text = markdown
    for pattern in ALWAYS_STRIPPED + [re.compile(p) for p, _ in allowed]:
        text = pattern.sub(" ", text)
    out = []
    for m in CANDIDATE.finditer(text):
        kind = "decimal" if m.group("num") else "percent" if m.group("pct") else "duration"
        out.append((_norm(m.group("num") or m.group("pct") or m.group("dur")), kind))
    return out


def found_in(numeral: str, kind: str, outputs: str) -> bool:
    """Whether ``numeral`` appears as a whole token in the outputs (a percent followed by %)."""
    token = rf"(?<![\d.]){re.escape(numeral)}(?![\d])" if numeral[0] == "-" else \
        rf"(?<![\d.\-]){re.escape(numeral)}(?!\.?\d)"
    if kind == "percent":
        token += r"\s?%"
    return re.search(token, outputs) is not None


def check_notebook(path: pathlib.Path) -> list[str]:
    """Problems of one notebook: a measured number in prose that no tagged output above it prints."""
    nb = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    allowed = ALLOWED.get(pathlib.Path(path).name, [])
    printed, problems = "", []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code" and TAG in cell.get("metadata", {}).get("tags", []):
            printed += "\n" + _norm("\n".join(_text_of(o) for o in cell.get("outputs", [])))
        elif cell["cell_type"] == "markdown":
            for numeral, kind in candidates(_source(cell), allowed):
                if not found_in(numeral, kind, printed):
                    where = _source(cell)
                    at = where.replace("−", "-").find(numeral)
                    context = where[max(at - 50, 0):at + 30].replace("\n", " ") if at >= 0 else ""
                    problems.append(f"{pathlib.Path(path).name} cell {index}: {numeral}"
                                    f"{' %' if kind == 'percent' else ''} is not printed by a tagged cell above "
                                    f"it (…{context}…)")
    return problems


# ------------------------------------------------------------------ the notebooks
def test_there_are_notebooks_and_a_start_page():
    names = [p.name for p in NOTEBOOKS]
    assert "00_start_here.ipynb" in names and len(names) >= 7, names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_numbers_in_prose_come_from_tagged_outputs(path):
    problems = check_notebook(path)
    assert not problems, "\n".join(problems)


def test_allow_list_is_used():
    """Every allowed phrase still occurs in its notebook's markdown: no stale excuses."""
    for name, entries in ALLOWED.items():
        nb = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))
        prose = "\n".join(_source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
        for pattern, reason in entries:
            assert re.search(pattern, prose), f"{name}: allowed phrase {pattern!r} ({reason}) no longer occurs"


# ------------------------------------------------------------------ the checker itself
def test_candidates_skip_definitions_code_and_references():
    text = ("At ρ = 0.01 and x = −2.38, 1.2 (§4.2, App. D.1) `input_scale=8.0` the loss is 0.13; "
            "coverage 95 % after 1.5 s; 500 Adam steps, K = 10.")
    assert candidates(text) == [("0.13", "decimal"), ("95", "percent"), ("1.5", "duration")]


def test_tokens_match_whole_numerals_only():
    assert found_in("0.12", "decimal", "mlp 0.12 0.13")
    assert not found_in("0.12", "decimal", "mlp 0.125")
    assert not found_in("2.5", "decimal", "12.5")
    assert found_in("-0.33", "decimal", "d=10 kl_1 -0.33")
    assert not found_in("0.33", "decimal", "-0.33")
    assert found_in("95", "percent", "covers 95 % of the time")
    assert not found_in("95", "percent", "coverage 0.95")


def _copy(tmp_path, name):
    path = tmp_path / name
    shutil.copy(ROOT / "notebooks" / name, path)
    return path, json.loads(path.read_text(encoding="utf-8"))


def _first_quoted(nb) -> tuple[int, str]:
    """A markdown cell and a decimal number it quotes from a tagged output."""
    printed = ""
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code" and TAG in cell.get("metadata", {}).get("tags", []):
            printed += "\n".join(_text_of(o) for o in cell.get("outputs", []))
        if cell["cell_type"] == "markdown":
            for numeral, kind in candidates(_source(cell)):
                if kind == "decimal" and found_in(numeral, kind, _norm(printed)):
                    return i, numeral
    raise AssertionError("no quoted number found")


@pytest.mark.parametrize("name", ["01_coins.ipynb", "02_joint_predictions.ipynb"])
def test_checker_fails_on_prose_edited_by_hand(tmp_path, name):
    path, nb = _copy(tmp_path, name)
    assert check_notebook(path) == []
    i, numeral = _first_quoted(nb)
    edited = f"{float(numeral) + 0.01:.{len(numeral.split('.')[1])}f}"
    nb["cells"][i]["source"] = _source(nb["cells"][i]).replace(numeral, edited, 1)
    path.write_text(json.dumps(nb), encoding="utf-8")
    problems = check_notebook(path)
    assert len(problems) == 1 and f": {edited} is not printed" in problems[0], problems


@pytest.mark.parametrize("name", ["01_coins.ipynb", "02_joint_predictions.ipynb"])
def test_checker_fails_on_a_tagged_output_edited_by_hand(tmp_path, name):
    """nbval catches a tagged output that drifts on re-execution; here the saved output no longer says what the
    prose quotes, and the static check fails without running anything."""
    path, nb = _copy(tmp_path, name)
    i, numeral = _first_quoted(nb)
    edited = f"{float(numeral) + 0.01:.{len(numeral.split('.')[1])}f}"
    for cell in nb["cells"][:i]:
        if cell["cell_type"] == "code" and TAG in cell.get("metadata", {}).get("tags", []):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream":
                    out["text"] = re.sub(rf"(?<![\d.]){re.escape(numeral)}(?!\d)", edited, _text_of(out))
                elif "text/plain" in out.get("data", {}):
                    out["data"]["text/plain"] = re.sub(rf"(?<![\d.]){re.escape(numeral)}(?!\d)", edited,
                                                       _text_of(out))
    path.write_text(json.dumps(nb), encoding="utf-8")
    problems = check_notebook(path)
    assert problems and all(f": {numeral} is not printed" in p for p in problems), problems


def test_checker_ignores_untagged_and_later_outputs(tmp_path):
    path, nb = _copy(tmp_path, "01_coins.ipynb")
    i, numeral = _first_quoted(nb)
    tagged = [c for c in nb["cells"][:i] if c["cell_type"] == "code" and TAG in c["metadata"].get("tags", [])]
    for cell in tagged:  # the same outputs, but volatile: they no longer vouch for the prose
        cell["metadata"]["tags"] = ["nbval-ignore-output"]
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert any(f": {numeral} is not printed" in p for p in check_notebook(path))
    nb["cells"] = nb["cells"][:i + 1][::-1] + nb["cells"][i + 1:]  # the printing cells after the prose
    for cell in tagged:
        cell["metadata"]["tags"] = [TAG]
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert any(f": {numeral} is not printed" in p for p in check_notebook(path))


# ------------------------------------------------------------------ short labs
LAB_CORE_WORDS = 720  # "about 700": one idea in short steps; research material goes to an appendix or the docs
APPENDIX = re.compile(r"^#{1,6}\s+Appendix\b", re.M)


def core_words(path: pathlib.Path) -> int:
    """Words of Markdown in a lab before its optional appendix (a heading that starts with "Appendix")."""
    words = 0
    for cell in json.loads(pathlib.Path(path).read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        if APPENDIX.search(_source(cell)):
            break
        words += len(_source(cell).split())
    return words


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name != "00_start_here.ipynb"], ids=lambda p: p.name)
def test_each_lab_core_is_short(path):
    assert core_words(path) <= LAB_CORE_WORDS, f"{path.name}: {core_words(path)} words of prose before its appendix"


def test_core_words_stop_at_the_appendix():
    nb = {"cells": [{"cell_type": "markdown", "source": "# Lab\none two"},
                    {"cell_type": "code", "source": "x = 1 2 3"},
                    {"cell_type": "markdown", "source": "## Appendix (optional) · more\nfour five six"}]}
    path = ROOT / "tests" / "data" / "_words_probe.ipynb"
    try:
        path.write_text(json.dumps(nb), encoding="utf-8")
        assert core_words(path) == 4
    finally:
        path.unlink(missing_ok=True)
