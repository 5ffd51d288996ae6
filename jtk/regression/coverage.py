"""Deviation, uncertainty and coverage over repeated training sets (Schmähling, Martin & Elster, §3).

The protocol of §3 ("Coverage for an input"): draw k training sets from eq. (4)
with the same inputs and test inputs but fresh noise, fit (retrain) every
method on each, and record per test input

* the deviation ``|prediction − ground truth|``,
* the uncertainty (the method's std), and
* covered = ``|deviation| ≤ 1.96 · uncertainty``.

The coverage at an input is the fraction of covered repetitions, with the
binomial error bar sqrt(p(1 − p)/k). The BLR anchor covers 95 % at every input
(probability matching, :mod:`jtk.regression.blr`).

All methods see the *same* k training sets (paired comparison); deep methods
train the k sets as one vmapped program (see
:meth:`jtk.regression.deep.DeepRegression.fit_predict_many`).

Example:
  >>> from jtk.envs.regression import SinusoidRegression
  >>> res = coverage_study(SinusoidRegression(1.0), ["BLR"], k=200, seed=0, progress=False)
  >>> float(res["BLR"].summary()["coverage"].iloc[0]) > 0.9
  True
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import jax
import numpy as np
import pandas as pd

from jtk import _checks, _memory, executors
from jtk.regression.blr import BayesianLinearRegression
from jtk.regression.deep import METHODS, PRESETS, DeepRegression, make_regression

Z95 = 1.96  # the normal-approximation factor of §3
ALL_METHODS = ("BLR",) + METHODS


@dataclass(frozen=True)
class CoverageResult:
    """Per-repetition predictions of one method on k training sets of one problem.

    Attributes:
      method: the method's name ("BLR", "BD", ...).
      coordinate: a scalar per test input for plots [n*] (x for E.1, λ for E.2).
      x_test: test inputs [n*, d].
      truth: ground truth G(x*)^T γ [n*].
      mean: predictions [k, n*].
      std: uncertainties [k, n*].
      in_distribution: mask of test inputs inside the training range [n*].
      info: problem parameters and timings (f_main / dim, preset, seed, seconds).
      x_train: the shared training inputs [n, d] (for plots).
      y_train: the k training targets [k, n] (for plots).
    """

    method: str
    coordinate: np.ndarray
    x_test: np.ndarray
    truth: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    in_distribution: np.ndarray
    info: dict = field(default_factory=dict)
    x_train: np.ndarray | None = None
    y_train: np.ndarray | None = None

    @property
    def k(self) -> int:
        """Number of training sets (repetitions)."""
        return int(self.mean.shape[0])

    @property
    def deviation(self) -> np.ndarray:
        """``|prediction − truth|`` [k, n*]."""
        return np.abs(self.mean - self.truth[None, :])

    @property
    def covered(self) -> np.ndarray:
        """``|deviation| ≤ 1.96 · uncertainty`` [k, n*] (bool)."""
        return self.deviation <= Z95 * self.std

    def coverage(self) -> np.ndarray:
        """Fraction of covered repetitions per test input [n*]."""
        return self.covered.mean(0)

    def coverage_se(self) -> np.ndarray:
        """Binomial error bar sqrt(p (1 − p) / k) per test input [n*]."""
        p = self.coverage()
        return np.sqrt(p * (1.0 - p) / self.k)

    def first(self, k: int) -> "CoverageResult":
        """The same study restricted to its first k repetitions (k ≥ 2)."""
        k = _checks.integer("k", k, minimum=2, maximum=self.k)
        y = None if self.y_train is None else self.y_train[:k]
        return dataclasses.replace(self, mean=self.mean[:k], std=self.std[:k], y_train=y)

    def index_of(self, coordinate: float) -> int:
        """Index of the test input whose coordinate is nearest to ``coordinate``."""
        c = float(_checks.as_float_array("coordinate", np.asarray(coordinate), ndim=0))
        return int(np.argmin(np.abs(self.coordinate - c)))

    def per_input(self) -> pd.DataFrame:
        """One row per test input: coverage ± se, mean deviation, RMSE and mean uncertainty."""
        dev = self.deviation
        return pd.DataFrame({
            "method": self.method,
            "input": np.arange(self.truth.shape[0]),
            "coordinate": self.coordinate,
            "in_distribution": self.in_distribution,
            "coverage": self.coverage(),
            "coverage_se": self.coverage_se(),
            "deviation": dev.mean(0),
            "rmse": np.sqrt(np.mean(np.square(self.mean - self.truth[None, :]), 0)),
            "uncertainty": self.std.mean(0),
            "k": self.k,
            **{f"x{j + 1}": self.x_test[:, j] for j in range(min(self.x_test.shape[1], 3))},
            **{key: value for key, value in self.info.items() if np.isscalar(value)},
        })

    def summary(self) -> pd.DataFrame:
        """In- vs out-of-distribution means over test inputs (coverage, deviation, uncertainty)."""
        return summarize(self.per_input())


def summarize(per_input: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Means over test inputs, split by ``by`` columns, method and in/out of distribution.

    Columns: coverage (mean over inputs), coverage_se (mean binomial error bar),
    min_coverage, deviation, rmse, uncertainty, num_inputs.
    """
    if not isinstance(per_input, pd.DataFrame):
        raise TypeError(f"per_input must be a pandas DataFrame (CoverageResult.per_input()), "
                        f"got {type(per_input).__name__}")
    missing = [c for c in ("in_distribution", "method", "coverage", "coverage_se", "deviation", "rmse",
                           "uncertainty", "k", *by) if c not in per_input.columns]
    if missing:
        raise ValueError(f"per_input must have the columns of CoverageResult.per_input(), missing {missing}")
    df = per_input.assign(region=np.where(per_input["in_distribution"], "in", "out"))
    keys = [*by, "method", "region"]
    out = df.groupby(keys, sort=False).agg(
        coverage=("coverage", "mean"), coverage_se=("coverage_se", "mean"),
        min_coverage=("coverage", "min"), deviation=("deviation", "mean"), rmse=("rmse", "mean"),
        uncertainty=("uncertainty", "mean"), num_inputs=("coverage", "size"), k=("k", "first"))
    return out.reset_index()


def _as_model(method: Any, env, preset: str, max_epochs: int | None):
    if isinstance(method, tuple):  # (label, model or name): a configured variant under its own name
        if len(method) != 2 or not isinstance(method[0], str) or not method[0]:
            raise TypeError(f"a labelled method must be a pair (label: str, model), got {method!r}")
        label, inner = method
        if isinstance(inner, tuple):
            raise TypeError(f"a labelled method's model must be a name or a model, got {inner!r}")
        return label, _as_model(inner, env, preset, max_epochs)[1]
    if isinstance(method, str):
        _checks.one_of("methods", method, ALL_METHODS)
        if method == "BLR":
            return "BLR", BayesianLinearRegression(env.features, env.noise_std)
        model = make_regression(method, preset=preset)
    elif isinstance(method, DeepRegression):
        model = method
    elif isinstance(method, BayesianLinearRegression):
        return "BLR", method
    else:
        raise TypeError(f"methods must hold names from {list(ALL_METHODS)}, models or (label, model) pairs, "
                        f"got {type(method).__name__}")
    model = model.for_problem(env)
    if max_epochs is not None:
        model = dataclasses.replace(model, max_epochs=max(max_epochs, model.num_epochs))
    return model.method, model


def coverage_study(env, methods: Iterable[Any] = ALL_METHODS, k: int = 50, seed: Any = 0, preset: str = "lab",
                   networks_per_call: int | None = None, max_epochs: int | None = None,
                   progress: bool = True) -> dict[str, CoverageResult]:
    """Runs the coverage protocol of §3 for several methods on one problem.

    Args:
      env: a regression problem from :mod:`jtk.envs.regression`.
      methods: names from ``ALL_METHODS`` ("BLR", "BD", "CD", "VD", "Ens", "EnsAdvA",
        "EnsBS"), model objects, or (label, model) pairs to run a configured variant
        beside the default under its own name, e.g. ``("EnsBS(0.5)",
        make_regression("EnsBS", preset="lab", bootstrap_size=0.5))``; deep models
        get σ and c from ``env``. Names must be distinct.
      k: number of training sets, ≥ 2 (§3: 50).
      seed: int or PRNG key; the training sets are ``env.sample_targets(seed, k)``.
      preset: deep-model preset for names, "lab" or "paper".
      networks_per_call: networks per compiled training call (default k: all six
        methods then share one compiled program).
      max_epochs: common training-scan length (see ``DeepRegression.max_epochs``).
      progress: show a tqdm progress bar.

    Returns:
      {method name: CoverageResult}.
    """
    k = _checks.integer("k", k, minimum=2)
    key = _checks.as_key(seed)
    _checks.one_of("preset", preset, tuple(PRESETS))
    if not all(hasattr(env, a) for a in ("sample_targets", "test_inputs", "x_train", "mean")):
        raise TypeError(f"env must be a regression problem from jtk.envs (with sample_targets, test_inputs, "
                        f"x_train, mean), got {type(env).__name__}")
    if isinstance(methods, (str, bytes)) or not hasattr(methods, "__iter__"):
        raise TypeError(f"methods must be a list of names, models or (label, model) pairs, got {methods!r}")
    methods = list(methods)
    n_train, n_test = len(env.x_train), len(env.test_inputs())
    _memory.check_budget(f"coverage study: k training sets × (num_train + 4 num_test) float64 × methods "
                         f"(k = {k}, num_train = {n_train}, num_test = {n_test}, {len(methods)} methods)",
                         _memory.nbytes(k, n_train + 4 * n_test, max(len(methods), 1) + 1, dtype=np.float64),
                         "lower k")
    models = [_as_model(m, env, preset, max_epochs) for m in methods]
    if not models:
        raise ValueError("methods must name at least one method, got an empty list")
    names = [name for name, _ in models]
    if len(set(names)) != len(names):
        raise ValueError(f"methods must have distinct names (label a variant as (label, model)), got {names}")
    ys = env.sample_targets(jax.random.fold_in(key, 0), k)  # [k, n]
    x, x_test = env.x_train, env.test_inputs()
    truth, mask, coord = env.mean(x_test), env.in_distribution(x_test), env.test_coordinate()
    npc = k if networks_per_call is None else networks_per_call
    info = {name: getattr(env, name) for name in ("f_main", "dim") if hasattr(env, name)}
    info.update(problem=type(env).__name__, preset=preset, seed=seed if isinstance(seed, int) else -1)
    out = {}
    iterator = models
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(models, desc=f"{type(env).__name__}: k={k}", leave=False)
    for name, model in iterator:
        t0 = time.perf_counter()
        if isinstance(model, BayesianLinearRegression):
            mean, std = model.fit_predict_many(x, ys, x_test)
        else:
            mean, std = model.fit_predict_many(x, ys, x_test, seed=jax.random.fold_in(key, 1),
                                               networks_per_call=npc)
        out[name] = CoverageResult(name, coord, x_test, truth, mean, std, mask,
                                   {**info, "seconds": time.perf_counter() - t0}, x, ys)
    return out


def sweep(make_env: Callable[[Any], Any], values: Iterable[Any], param: str, methods: Iterable[Any] = ALL_METHODS,
          k: int = 50, seed: Any = 0, preset: str = "lab", progress: bool = True,
          networks_per_call: int | None = None) -> dict[tuple[Any, str], CoverageResult]:
    """Coverage studies over a problem parameter; one compiled training program per data shape.

    The studies run side by side on a multi-core CPU (:func:`jtk.executors.map_local`; ``JTK_THREADS=1`` for one
    at a time), costliest first (full-batch epochs × training rows), each with its own seeds, so every result is the
    same as a study run alone.

    Args:
      make_env: value → problem, e.g. ``lambda f: SinusoidRegression(f)``.
      values: the parameter values, e.g. f_main = 1, 2, 3 (§3, Fig. 3).
      param: the parameter's name, used as a column ("f_main", "dim").
      methods, k, seed, preset, progress, networks_per_call: as in :func:`coverage_study`.

    Returns:
      {(value, method): CoverageResult}.
    """
    _checks.function("make_env", make_env, "a callable value -> problem")
    values = list(values)
    if not values:
        raise ValueError(f"values must list at least one {param}, got an empty list")
    envs = [make_env(v) for v in values]
    methods = list(methods)
    built = {id(e): [_as_model(m, e, preset, None)[1] for m in methods] for e in envs}
    epochs = [model.num_epochs for models in built.values() for model in models if isinstance(model, DeepRegression)]
    max_epochs = max(epochs) if epochs else None

    def cost(env) -> float:  # full-batch epochs × training rows of its deep models: the costliest study starts first
        return sum(m.num_epochs * len(env.x_train) for m in built[id(env)] if isinstance(m, DeepRegression))

    studies = executors.map_local(
        lambda env: coverage_study(env, methods, k=k, seed=seed, preset=preset, networks_per_call=networks_per_call,
                                   max_epochs=max_epochs, progress=False),
        envs, desc=f"sweep over {param}", unit=param, progress=progress, cost=cost)
    return {(value, name): dataclasses.replace(r, info={**r.info, param: value})
            for value, res in zip(values, studies) for name, r in res.items()}


def _values(name: str, values: Any) -> list:
    """The swept values as a non-empty list; messages name the public argument (``f_mains``, ``dims``)."""
    try:
        if isinstance(values, (str, bytes)):
            raise TypeError
        values = list(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of values, got {type(values).__name__} {values!r}") from None
    if not values:
        raise ValueError(f"{name} must list at least one value, got an empty list")
    return values


def sweep_f_main(f_mains: Iterable[float] = (1, 2, 3, 4, 5), methods: Iterable[Any] = ALL_METHODS, k: int = 50,
                 seed: Any = 0, preset: str = "lab", env_seed: Any = 0, input_scale: float = 1.0, **kw) -> dict:
    """E.1 over f_main (Fig. 3): ``sweep(lambda f: SinusoidRegression(f, seed=env_seed, input_scale=...), ...)``.

    ``input_scale`` picks the reading of eq. 9 (1: literal, 8: f_main periods on the
    training range; see :class:`jtk.envs.regression.SinusoidRegression`).
    """
    from jtk.envs.regression import SinusoidRegression
    f_mains = [_checks.positive("f_mains", f) for f in _values("f_mains", f_mains)]
    return sweep(lambda f: SinusoidRegression(f, seed=env_seed, input_scale=input_scale), f_mains, "f_main",
                 methods, k, seed, preset, **kw)


def sweep_dim(dims: Iterable[int] = (1, 2, 3), methods: Iterable[Any] = ALL_METHODS, k: int = 50, seed: Any = 0,
              preset: str = "lab", env_seed: Any = 0, **kw) -> dict:
    """E.2 over the input dimension d (Fig. 6)."""
    from jtk.envs.regression import StyblinskiTangRegression
    dims = [_checks.integer("dims", d, minimum=1) for d in _values("dims", dims)]
    return sweep(lambda d: StyblinskiTangRegression(d, seed=env_seed), dims, "dim", methods, k, seed, preset, **kw)


def per_input_table(results: Mapping[Any, CoverageResult]) -> pd.DataFrame:
    """All results' per-input rows in one long DataFrame."""
    _checks.instance("results", results, Mapping, "a dict of CoverageResult (from sweep or coverage_study)")
    if not results:
        raise ValueError("results must hold at least one CoverageResult, got none")
    for k, r in results.items():
        _checks.instance(f"results[{k!r}]", r, CoverageResult)
    return pd.concat([r.per_input() for r in results.values()], ignore_index=True)


def summary_table(results: Mapping[Any, CoverageResult], by: Sequence[str] = ()) -> pd.DataFrame:
    """In/out-of-distribution summaries of many results (``by``: e.g. ("f_main",))."""
    return summarize(per_input_table(results), by=by)


def at_inputs(per_input: pd.DataFrame, coordinates: Sequence[float]) -> pd.DataFrame:
    """Rows of the test inputs nearest to the given coordinates (Fig. 3: x = −2.38, 1.2, −5.11)."""
    wanted = _checks.as_float_array("coordinates", coordinates, ndim=1, dtype=np.float64).tolist()
    if not isinstance(per_input, pd.DataFrame) or "coordinate" not in per_input.columns:
        raise TypeError(f"per_input must be a DataFrame with a 'coordinate' column (CoverageResult.per_input()), "
                        f"got {type(per_input).__name__}")
    if not wanted or per_input.empty:
        raise ValueError(f"coordinates and per_input must be non-empty, got {len(wanted)} coordinates and "
                         f"{len(per_input)} rows")
    coords = np.unique(per_input["coordinate"].to_numpy())
    rows = []
    for c in wanted:
        nearest = coords[np.argmin(np.abs(coords - c))]
        rows.append(per_input[per_input["coordinate"] == nearest].assign(requested=c))
    return pd.concat(rows, ignore_index=True)


def lemma1_check(results: Mapping[Any, CoverageResult], by: str | None = None) -> pd.DataFrame:
    """Lemma 1 at in-distribution inputs: deep uncertainties against the anchor's.

    Lemma 1 (a Cramér–Rao argument) says: an estimator T with uncertainty u
    either is biased, or wherever u is below the anchor's uncertainty, u is also
    below T's root mean squared error — so no *unbiased* method can report less
    uncertainty than the anchor and still be right as often. It does not say that
    every method's uncertainty is ≥ the anchor's; that is only the paper's §3.1
    observation for its Fig. 3 scenario.

    For each deep method (and ``by`` value) the columns are:

    * ``frac_below_rmse_when_smaller``: among inputs where u < u_BLR, the fraction
      where u < RMSE of T over the k repetitions — Lemma 1 predicts 1 (or a biased T);
    * ``frac_violations``: fraction of in-distribution inputs where u < u_BLR but
      u ≥ RMSE — what Lemma 1 forbids for an unbiased estimator (predicts 0);
    * ``frac_unc_ge_blr``: fraction of inputs with u ≥ u_BLR (the §3.1 observation);
    * ``median_ratio``: median of u / u_BLR.
    """
    table = per_input_table(results)
    by_cols = [by] if by else []
    blr = table[table["method"] == "BLR"]
    if blr.empty:
        raise ValueError("results must include the BLR anchor for the Lemma 1 check")
    merged = table[table["method"] != "BLR"].merge(
        blr[[*by_cols, "input", "uncertainty"]].rename(columns={"uncertainty": "blr_uncertainty"}),
        on=[*by_cols, "input"])
    merged = merged[merged["in_distribution"]]
    rows = []
    for keys, g in merged.groupby([*by_cols, "method"], sort=False):
        smaller = g["uncertainty"] < g["blr_uncertainty"]
        below = (g["uncertainty"] < g["rmse"])[smaller]
        rows.append({**dict(zip([*by_cols, "method"], keys if isinstance(keys, tuple) else (keys,))),
                     "frac_unc_ge_blr": float((~smaller).mean()),
                     "median_ratio": float((g["uncertainty"] / g["blr_uncertainty"]).median()),
                     "frac_below_rmse_when_smaller": float(below.mean()) if len(below) else np.nan,
                     "frac_violations": float((smaller & (g["uncertainty"] >= g["rmse"])).mean()),
                     "num_inputs": int(len(g))})
    return pd.DataFrame(rows)
