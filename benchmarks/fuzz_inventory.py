"""Prints the bad-input cases per public callable of jtk (tests/test_fuzz_inputs.py's inventory).

    JAX_PLATFORMS=cpu python benchmarks/fuzz_inventory.py
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

import test_fuzz_inputs  # noqa: E402

print(test_fuzz_inputs.inventory_table())
