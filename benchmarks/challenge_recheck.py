"""The time of the instructor's full re-check of the docs' example class (docs/challenge.md, "Measured").

    python benchmarks/challenge_recheck.py [--workers 2] [--time-limit 180]

Scores the class of docs/challenge.md's "Measured" section — the submissions of tests/test_challenge.py (an mlp
wrapper, a 3-member ensemble+ wrapper, the researchers' guide's scikit-learn agent, an incoherent per-row
ensemble, one that raises in ``fit``, one that never returns, one 10 GB allocation) with the baselines mlp and
ensemble+, quick grid, 2 hidden seeds (16 problems), ``time_limit_s`` 180 — with ``jtk challenge score``, then
times ``jtk verify BOARD --config --submissions --sample all`` (every status re-derived, every row scored again)
and checks that it passes. The signing key and the instructor's record go to a temporary folder. Prints the
figures for the docs; writes nothing in the checkout.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import textwrap
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLASS = ("mlp_like", "ensemble_plus_like", "sklearn_readme", "incoherent", "raises", "loops", "memory_hog")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="submissions at once, scoring and re-check (default 2)")
    parser.add_argument("--time-limit", type=float, default=180.0, help="time_limit_s (default 180, as the docs)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    from test_challenge import SUBMISSIONS  # the class's files: one owner

    from jtk.course import challenge

    with tempfile.TemporaryDirectory(prefix="jtk-recheck-") as tmp:
        tmp = pathlib.Path(tmp)
        os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
        subs = tmp / "submissions"
        subs.mkdir()
        for name in CLASS:
            (subs / f"{name}.py").write_text(textwrap.dedent(SUBMISSIONS[name]))
        cfg = challenge.ChallengeConfig(grid="quick", seeds=2, salt="c0ffee" * 6, baselines=("mlp", "ensemble+"),
                                        time_limit_s=args.time_limit, memory_limit_mb=3072)
        t0 = time.monotonic()
        board = challenge.score(subs, cfg, tmp / "board", workers=args.workers, progress=True)
        scored = time.monotonic() - t0
        print(challenge.format_board(board.leaderboard))
        t0 = time.monotonic()
        table = challenge.verify_board(tmp / "board", key=board.signed_by["public_key"], config=cfg,
                                       submissions=subs, sample="all", workers=args.workers, progress=True)
        rechecked = time.monotonic() - t0
        failed = table[~table["ok"]]
        print(failed.to_string() if len(failed) else "every check passed")
        counts = table["check"].value_counts().to_dict()
        print(f"scored: {len(board.entries)} entries, {len(cfg.hidden_problems())} problems, {scored:.0f} s "
              f"(workers {args.workers}, sandbox {board.sandbox})")
        print(f"full re-check (--sample all, --workers {args.workers}): {rechecked:.0f} s wall clock; "
              f"{len(table)} checks ({counts}); load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        return 1 if len(failed) else 0


if __name__ == "__main__":
    sys.exit(main())
