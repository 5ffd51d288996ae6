"""Write tests/data/quick_grid_golden.csv: every registered agent's scores on the quick grid, to full precision.

tests/test_quick_grid_golden.py re-runs the same agents and asserts the numbers are bit-identical, so a refactor of
the agents, the environment drawing or the testbed cannot move a score silently. Regenerate only when a change is
*meant* to change scores, and say why in the commit:

    JAX_PLATFORMS=cpu XLA_FLAGS=--xla_cpu_max_isa=AVX2 python tests/data/make_quick_grid_golden.py

Bits depend on the vector ISA XLA compiles for (docs/reference.md, "Reproducibility across machines"): the file
records the writer's ``numerics_key`` in quick_grid_golden.json, and the test asserts bit-identity where the key is
the same and jtk verify's tolerance elsewhere. Write it under the portable flag above, as the tests run.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pandas as pd  # noqa: E402

from jtk import _info, agents, testbed  # noqa: E402

# Small settings where an agent's default is slow; the keyword names are the stable ones (not the L2 knob).
CONFIGS: dict[str, dict] = {
    "ensemble": {"num_members": 3},
    "ensemble+": {"num_members": 3},
    "sgmcmc": {"num_steps": 1200, "burn_in": 200, "thin": 100, "warm_start_steps": 100},
    "sgld": {"num_steps": 1200, "burn_in": 200, "thin": 100, "warm_start_steps": 100},
    "bayes_optimal": {"num_particles": 512},
    "bbb": {"num_steps": 300},
    "dropout": {"num_steps": 300},
    "epinet": {"num_steps": 300},
    "hypermodel": {"num_steps": 300},
}
COLUMNS = ["kl", "kl_std", "frac_finite", "accuracy", "ece"]
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quick_grid_golden.csv")
NUMERICS_PATH = PATH.replace(".csv", ".json")


def scores(name: str) -> pd.DataFrame:
    """The quick grid's rows for agent ``name`` (problem columns, the config, and the score columns)."""
    config = CONFIGS.get(name, {})
    rows = testbed.evaluate(agents.make(name, **config), "quick", name=name, progress=False)
    keep = rows[["temperature", "num_train", "tau", "seed", "input_dim", *COLUMNS]].copy()
    keep.insert(0, "config", json.dumps(config, sort_keys=True))
    keep.insert(0, "agent", name)
    return keep


def main() -> None:
    """Regenerate every agent's rows, or only those of the agent names given as arguments."""
    names = sys.argv[1:] or agents.names()
    frames = [pd.read_csv(PATH)] if sys.argv[1:] and os.path.exists(PATH) else []
    if frames:
        frames[0] = frames[0][~frames[0]["agent"].isin(names)]
    for name in names:
        frames.append(scores(name))
        print(name, "done", flush=True)
    table = pd.concat(frames, ignore_index=True).sort_values("agent", kind="stable")
    table.to_csv(PATH, index=False, float_format="%.17g")
    numerics = {k: v for k, v in _info.numerics().items() if k != "blas"}
    with open(NUMERICS_PATH, "w") as f:
        json.dump(numerics, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", PATH, "and", NUMERICS_PATH, numerics["numerics_key"])


if __name__ == "__main__":
    main()
