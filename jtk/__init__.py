"""jtk: a Jupyter-first toolkit for teaching and exploring joint predictive uncertainty.

The library behind the notebooks: generative models (``jtk.envs``), agents
(``jtk.agents``), joint likelihoods and d_KL^τ (``jtk.likelihood``), and the
Neural Testbed (``jtk.testbed``).
"""

import os as _os

_os.environ.setdefault("JAX_PLATFORMS", "cpu")

from jtk import agents, envs, likelihood, testbed  # noqa: E402
from jtk.likelihood import accuracy, expected_calibration_error, joint_log_likelihood  # noqa: E402

__version__ = "0.1.0"
__all__ = ["accuracy", "agents", "envs", "expected_calibration_error", "joint_log_likelihood",
           "likelihood", "testbed"]
