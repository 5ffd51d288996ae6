"""The README's ten-line scikit-learn agent, read from README.md itself, so tests exercise what users copy."""

from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def agent_source() -> str:
    """The README's agent code block (imports and class), without its ``evaluate`` line."""
    block = re.search(r"```python\n(import numpy as np\nfrom sklearn.*?)```", README.read_text(), re.S).group(1)
    return "\n".join(line for line in block.splitlines() if not line.startswith("results = ")).rstrip() + "\n"


def agent_class():
    """The README's ``BootstrapLogistic`` class."""
    namespace: dict = {}
    exec(compile(agent_source(), str(README), "exec"), namespace)  # noqa: S102 - the repository's own README
    return namespace["BootstrapLogistic"]
