"""Write tests/data/golden/<numerics key>.csv: every registered agent's scores on the quick grid, to full precision.

tests/test_quick_grid_golden.py re-runs the same agents and asserts the numbers are bit-identical, so a refactor of
the agents, the environment drawing or the testbed cannot move a score silently. Regenerate only when a change is
*meant* to change scores, and say why in the commit:

    JAX_PLATFORMS=cpu XLA_FLAGS=--xla_cpu_max_isa=AVX2 python tests/data/make_quick_grid_golden.py

Bits depend on the machine's numerics key (docs/reference.md, "Reproducibility across machines"), so there is one
file per key, named by it, with the writer's numerics beside it (``<key>.json``). The test asserts bit-identity
against the file of its own key and jtk verify's tolerance against the others when it has none. Write it under the
portable flag above, as the tests run. A change meant to change scores makes every other key's bits stale, so a
regeneration removes the other keys' files (each machine writes its own again); ``--add-key`` instead writes this
machine's file beside the others, for a machine whose key has none yet while the scores stay as they are:

    JAX_PLATFORMS=cpu XLA_FLAGS=--xla_cpu_max_isa=AVX2 python tests/data/make_quick_grid_golden.py --add-key
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
DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")


def path_for(key: str) -> str:
    """The golden CSV of numerics key ``key`` (``x86_64/AVX2-on-AVX512/AMD`` → golden/x86_64_AVX2-on-AVX512_AMD.csv)."""
    return os.path.join(DIRECTORY, key.replace("/", "_") + ".csv")


def written() -> dict[str, dict]:
    """numerics key -> the writer's numerics, for every golden file there is."""
    out = {}
    for name in sorted(os.listdir(DIRECTORY)):
        if name.endswith(".json"):
            with open(os.path.join(DIRECTORY, name)) as f:
                numerics = json.load(f)
            out[numerics["numerics_key"]] = numerics
    return out


def scores(name: str) -> pd.DataFrame:
    """The quick grid's rows for agent ``name`` (problem columns, the config, and the score columns)."""
    config = CONFIGS.get(name, {})
    rows = testbed.evaluate(agents.make(name, **config), "quick", name=name, progress=False)
    keep = rows[["temperature", "num_train", "tau", "seed", "input_dim", *COLUMNS]].copy()
    keep.insert(0, "config", json.dumps(config, sort_keys=True))
    keep.insert(0, "agent", name)
    return keep


def main() -> None:
    """Regenerate every agent's rows, or only those of the agent names given as arguments, for this machine's key."""
    args = [a for a in sys.argv[1:] if a != "--add-key"]
    keep_others = "--add-key" in sys.argv[1:]
    names = args or agents.names()
    numerics = {k: v for k, v in _info.numerics().items() if k != "blas"}
    path = path_for(numerics["numerics_key"])
    frames = [pd.read_csv(path)] if args and os.path.exists(path) else []
    if frames:
        frames[0] = frames[0][~frames[0]["agent"].isin(names)]
    for name in names:
        frames.append(scores(name))
        print(name, "done", flush=True)
    table = pd.concat(frames, ignore_index=True).sort_values("agent", kind="stable")
    os.makedirs(DIRECTORY, exist_ok=True)
    table.to_csv(path, index=False, float_format="%.17g")
    with open(path.replace(".csv", ".json"), "w") as f:
        json.dump(numerics, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", path, "for numerics key", numerics["numerics_key"])
    if not keep_others:  # scores meant to change: the other keys' bits are stale
        for key in written():
            if key != numerics["numerics_key"]:
                for ext in (".csv", ".json"):
                    os.remove(path_for(key).replace(".csv", ext))
                print("removed the stale golden file of numerics key", key)


if __name__ == "__main__":
    main()
