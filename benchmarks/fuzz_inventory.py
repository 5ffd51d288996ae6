"""Prints the bad-input cases per public callable of jtk (tests/test_fuzz_inventory.py's inventory of the cases in
tests/test_fuzz_<package>.py).

    JAX_PLATFORMS=cpu python benchmarks/fuzz_inventory.py
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

import test_fuzz_inventory  # noqa: E402

print(test_fuzz_inventory.inventory_table())
