"""The ten-line scikit-learn agent of the researchers' guide (docs/researchers.md, "Evaluate your own agent"), read
from the page itself, so tests exercise what users copy. (It was in README.md before the README became a landing
page; the module keeps its name for the tests that import it.)"""

from __future__ import annotations

import pathlib
import re

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "researchers.md"


def agent_source() -> str:
    """The guide's agent code block (imports and class), without its ``evaluate`` line."""
    block = re.search(r"```python\n(import numpy as np\nfrom sklearn.*?)```", PAGE.read_text(), re.S).group(1)
    return "\n".join(line for line in block.splitlines() if not line.startswith("results = ")).rstrip() + "\n"


def agent_class():
    """The guide's ``BootstrapLogistic`` class."""
    namespace: dict = {}
    exec(compile(agent_source(), str(PAGE), "exec"), namespace)  # noqa: S102 - the repository's own docs page
    return namespace["BootstrapLogistic"]
