"""Comparisons in the labs carry their evidence: a static check of the notebooks' prose, nothing is executed.

A sentence of a lab's Markdown that compares two methods ("ensemble+ is lower than the ensemble", "BatchMIG beats
MIG") must state the run's interval (``a ± b``) or its verdict (``within noise`` / ``beyond noise``), and that
evidence must come from the run: every numeral of an interval appears in a tagged (``nbval-check-output``) output
above the sentence, and a verdict is printed there too. tests/test_notebook_prose.py checks every other number the
same way. A comparison is a sentence that names two methods (:data:`METHODS`) and uses a comparative word
(:data:`COMPARATIVE`). A cell that says its numbers come from one draw ("no interval") describes that draw and is
not read; what a lab may otherwise say without an interval is in :data:`ALLOWED`, with the reason.

The figures' titles are library code: :func:`test_figure_titles_state_the_verdict_of_the_run` checks that the one
title that compares two agents (Fig. 5's) states what the paired intervals say.
"""

from __future__ import annotations

import json
import pathlib
import re

import numpy as np
import pandas as pd
import pytest

from test_notebook_prose import TAG, _norm, _source, _text_of, found_in

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[1-9]_*.ipynb"))

METHODS = ["mlp", "ensemble", "ensemble+", "dropout", "bbb", "hypermodel", "sgmcmc", "epinet", "knn",
           "BLR", "anchor", "BD", "CD", "VD", "Ens", "EnsAdvA", "EnsBS", "TIG", "MIG", "BatchMIG", "random",
           "Thompson sampling", "greedy", "XLL", "metacorrelation"]
COMPARATIVE = re.compile(r"\b(?:better|worse|beats?|outperforms?|edge|wins?|lower|higher|less|more|best|worst|"
                         r"closest|helps?|improves?|smaller|larger|ahead|behind)\b", re.I)
SINGLE_DRAW = re.compile(r"\bno interval\b")
EVIDENCE = re.compile(r"(?P<pm>[-−+]?\d+(?:\.\d+)?\s*±\s*\d+(?:\.\d+)?)|(?P<verdict>within noise|beyond noise)")
STRIP = [re.compile(r"```.*?```", re.S), re.compile(r"`[^`]*`"), re.compile(r"\]\([^)]*\)"),
         re.compile(r"\b(?:Figs?|App|Alg|eq)\.")]

# notebook → [(regex of an allowed comparison, why it needs no interval)]
ALLOWED: dict[str, list[tuple[str, str]]] = {
    "03_ensemble_vs_ensemble_plus.ipynb": [
        (r"larger λ means wilder members", "what the prior scale does, by construction"),
    ],
    "05_tal_batchmig.ipynb": [
        (r"Models with better PPCs", "a correlation over models, stated with its coefficient"),
    ],
    "06_bandit.ipynb": [
        (r"bbb is the main outlier", "names the outlier of the correlation whose interval the paragraph states; its "
                                     "means are printed above"),
    ],
}


def _sentences(markdown: str) -> list[str]:
    text = markdown
    for pattern in STRIP:
        text = pattern.sub(" ", text)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n\s*\n|\n\s*[*\-]\s", text) if s.strip()]


def _names(sentence: str) -> set[str]:
    return {m for m in METHODS if re.search(rf"(?<![\w+]){re.escape(m)}(?![\w+])", sentence)}


def comparisons(markdown: str) -> list[str]:
    """The sentences of a Markdown cell that compare two methods."""
    return [s for s in _sentences(markdown) if len(_names(s)) >= 2 and COMPARATIVE.search(s)]


def check_notebook(path: pathlib.Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    allowed = ALLOWED.get(path.name, [])
    printed, problems = "", []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code" and TAG in cell.get("metadata", {}).get("tags", []):
            printed += "\n" + _norm("\n".join(_text_of(o) for o in cell.get("outputs", [])))
            continue
        if cell["cell_type"] != "markdown" or SINGLE_DRAW.search(_source(cell)):
            continue  # a cell that says its numbers are one draw ("no interval") compares nothing beyond that draw
        for sentence in comparisons(_source(cell)):
            if any(re.search(p, sentence) for p, _ in allowed):
                continue
            evidence = list(EVIDENCE.finditer(sentence))
            if not evidence:
                problems.append(f"{path.name} cell {index}: a comparison without its interval or 'within noise': "
                                f"{sentence!r}")
            for m in evidence:
                if m.group("verdict") and m.group("verdict") not in printed:
                    problems.append(f"{path.name} cell {index}: {m.group('verdict')!r} is not printed by a tagged "
                                    f"cell above it: {sentence!r}")
                if m.group("pm"):
                    for numeral in re.findall(r"\d+(?:\.\d+)?", m.group("pm")):
                        if "." in numeral and not found_in(numeral, "decimal", printed):
                            problems.append(f"{path.name} cell {index}: {numeral} of {m.group('pm')!r} is not "
                                            f"printed by a tagged cell above it")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_comparisons_in_prose_state_their_interval(path):
    problems = check_notebook(path)
    assert not problems, "\n".join(problems)


def test_every_allowed_comparison_is_still_needed(monkeypatch):
    """Each entry of ALLOWED still excuses a comparison of its notebook: no stale or spare excuses."""
    for name, entries in ALLOWED.items():
        for entry in entries:
            monkeypatch.setitem(ALLOWED, name, [e for e in entries if e is not entry])
            assert check_notebook(ROOT / "notebooks" / name), f"{name}: {entry[0]!r} ({entry[1]}) excuses nothing"
        monkeypatch.setitem(ALLOWED, name, entries)


def test_the_checker_finds_bare_comparisons_and_accepts_evidence():
    assert comparisons("BatchMIG's diversity gives it the edge over MIG.")
    assert comparisons("ensemble+ is lower than ensemble at n = 1.")
    assert not comparisons("BatchMIG picks a batch.")  # one method, nothing compared
    assert not comparisons("`mig` and `tig` are names.")  # code is not prose
    nb = {"cells": [
        {"cell_type": "code", "metadata": {"tags": [TAG]}, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "batchmig − mig +0.034 ± 0.12 (within noise)\n"}]},
        {"cell_type": "markdown", "metadata": {}, "source": "BatchMIG beats MIG by +0.034 ± 0.12, within noise."},
        {"cell_type": "markdown", "metadata": {}, "source": "BatchMIG beats MIG."},
        {"cell_type": "markdown", "metadata": {}, "source": "TIG beats random (0.5 ± 0.2), beyond noise."},
    ]}
    path = ROOT / "tests" / "data" / "_claims_probe.ipynb"
    try:
        path.write_text(json.dumps(nb), encoding="utf-8")
        problems = check_notebook(path)
    finally:
        path.unlink(missing_ok=True)
    assert len(problems) == 4, problems
    assert "cell 2: a comparison without" in problems[0]
    assert all("cell 3" in p for p in problems[1:]), problems  # 0.5, 0.2 and 'beyond noise' were never printed


def _kl_results(shift: float, seeds: int = 5) -> pd.DataFrame:
    """Two agents on the same seeds: ensemble+ = ensemble + shift (at τ = 10, n = 1 only) ± 0.05 by seed."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in range(seeds):
        for n in (1, 10):
            base = 1.0 + rng.normal(0, 0.3)
            for tau in (1, 10):
                jitter = 0.05 if seed % 2 else -0.05
                rows.append(dict(agent="ensemble", num_train=n, seed=seed, tau=tau, kl=base))
                rows.append(dict(agent="ensemble+", num_train=n, seed=seed, tau=tau,
                                 kl=base + (shift if tau == 10 and n == 1 else 0.0) + jitter))
    return pd.DataFrame(rows)


def test_figure_titles_state_the_verdict_of_the_run():
    """Fig. 5's title: 'within noise' where the paired interval holds 0, 'lower at n' only where it does not."""
    import scipy.stats

    from jtk.plots import testbed as tb_plots

    noisy = _kl_results(shift=-0.02)
    title = tb_plots.kl_comparison_title(noisy, [1, 10])
    assert "within noise at every num_train" in title and "lower" not in title
    clear = _kl_results(shift=-0.5)
    title = tb_plots.kl_comparison_title(clear, [1, 10])
    assert "τ = 10: lower at 1, within noise elsewhere" in title, title
    # the interval behind it is scipy's paired t-interval
    d = tb_plots.kl_paired_differences(clear, 10).loc[1]
    g = clear[(clear.tau == 10) & (clear.num_train == 1)].pivot_table(index="seed", columns="agent", values="kl")
    ci = scipy.stats.ttest_rel(g["ensemble+"], g["ensemble"]).confidence_interval()
    assert (d.difference - d.half_width, d.difference + d.half_width) == pytest.approx((ci.low, ci.high))
    fig = tb_plots.plot_kl_vs_num_train(noisy)
    assert "within noise" in fig._suptitle.get_text()
