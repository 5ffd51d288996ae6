"""Posterior predictive correlations (PPC): metacorrelations, XLL / XLLR and the synthetic PPC study.

Wang, Sun & Grosse (2021), §3.1, §3.3, §5.2, §5.3: metacorrelations (Pearson /
Spearman correlation of a model's pool × test predictive correlations with the
oracle's, and of the pool variances), joint log-likelihoods of top-correlated
batches, and XLL / XLLR with every model serving once as the reference. The
acquisition functions and the TAL loop they are judged by are in :mod:`jtk.ppc.active`.

Example:
  >>> import numpy as np
  >>> a = np.random.default_rng(0).normal(size=(30, 5)); cov = a @ a.T
  >>> m = metacorrelation(cov, cov, np.arange(20), np.arange(20, 30))
  >>> round(float(m.pearson), 6)
  1.0
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from jtk import _checks
from jtk._numerics import serial_blas
from jtk.ppc.active import (_check_problem, _check_split, batch_mig, check_covariance, evaluate_prediction,
                            reference_batch_size, tig)


# ------------------------------------------------------------------ PPC metrics
def correlation_matrix(cov, name: str = "cov") -> np.ndarray:
    """cov [n, n] → correlations [n, n]; rows of zero variance get correlation 0 (1 on the diagonal).

    ``name``: how messages call ``cov``.
    """
    cov = _checks.as_float_array(name, cov, ndim=2).astype(np.float64)
    if cov.shape[0] != cov.shape[1]:
        raise ValueError(f"{name} must be a square [n, n] matrix, got shape {cov.shape}")
    sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
    denom = np.outer(sd, sd)
    corr = np.divide(cov, denom, out=np.zeros_like(cov), where=denom > 0)
    np.fill_diagonal(corr, 1.0)
    return np.clip(corr, -1.0, 1.0)


class Metacorrelation(NamedTuple):
    """Agreement of a model's PPCs (and variances) with the oracle's (§3.1)."""

    pearson: float  # Pearson over pool × test predictive correlations
    spearman: float  # Spearman over the same pairs
    variance_pearson: float  # Pearson over pool predictive variances
    variance_spearman: float  # Spearman over the same


@serial_blas
def metacorrelation(model_cov, oracle_cov, pool, test, spearman: bool = True) -> Metacorrelation:
    """Metacorrelations of a model against the oracle (noise-free covariances).

    Args:
      model_cov, oracle_cov: [n, n] noise-free posterior covariances over the same points.
      pool: [P] and test: [U] disjoint index arrays into them.
      spearman: also compute the Spearman coefficients (ranking P·U pairs is most
        of the cost); False leaves them NaN (the paper's Fig. 4 uses Pearson only).

    Returns:
      Metacorrelation (NaN where a model's values are constant).
    """
    model_cov = _checks.as_float_array("model_cov", model_cov, ndim=2)
    oracle_cov = _checks.as_float_array("oracle_cov", oracle_cov, ndim=2)
    if model_cov.shape != oracle_cov.shape:
        raise ValueError(f"model_cov must have the oracle's shape {oracle_cov.shape}, got {model_cov.shape}")
    _check_problem(oracle_cov, pool, test, 0.0, 1, cov_name="oracle_cov")
    pool, test = np.asarray(pool), np.asarray(test)
    cm = correlation_matrix(model_cov, "model_cov")[np.ix_(pool, test)].ravel()
    co = correlation_matrix(oracle_cov, "oracle_cov")[np.ix_(pool, test)].ravel()
    vm, vo = np.diag(model_cov)[pool], np.diag(oracle_cov)[pool]
    return _metacorrelation_of(cm, co, vm, vo, spearman)


def _pool_test_correlations(cov: np.ndarray, pool: np.ndarray, test: np.ndarray) -> np.ndarray:
    """``correlation_matrix(cov)[np.ix_(pool, test)].ravel()`` for disjoint pool and test, computed on that block only
    (the same elementwise operations, so the same numbers; no checks)."""
    sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
    denom = np.outer(sd[pool], sd[test])
    block = cov[np.ix_(pool, test)]
    corr = np.divide(block, denom, out=np.zeros_like(block), where=denom > 0)
    return np.clip(corr, -1.0, 1.0).ravel()


def _metacorrelation_of(cm: np.ndarray, co: np.ndarray, vm: np.ndarray, vo: np.ndarray,
                        spearman: bool) -> Metacorrelation:
    """The Pearson (and Spearman) coefficients of :func:`metacorrelation` from its four vectors (no checks)."""
    def pair(a, b):
        if np.ptp(a) == 0 or np.ptp(b) == 0:
            return float("nan"), float("nan")
        import scipy.stats  # imported on use: it is slow to import (docs/platforms.md, "Import time")

        rank = float(scipy.stats.spearmanr(a, b)[0]) if spearman else float("nan")
        return float(scipy.stats.pearsonr(a, b)[0]), rank

    p, s = pair(cm, co)
    vp, vs = pair(vm, vo)
    return Metacorrelation(p, s, vp, vs)


def top_correlated_batches(cov, batch_size: int = 5) -> np.ndarray:
    """For every point i, the ``batch_size`` points with the largest absolute correlation to i (i first).

    Args:
      cov: [n, n] noise-free covariance of the reference model.
      batch_size: b ≤ n (5 in the paper).

    Returns:
      [n, b] int indices.
    """
    corr = np.abs(correlation_matrix(cov))
    batch_size = _checks.integer("batch_size", batch_size, minimum=1, maximum=len(corr))
    np.fill_diagonal(corr, np.inf)
    return np.argsort(-corr, axis=1, kind="stable")[:, :batch_size]


def _batched_gaussian_logpdf(y, mean, cov) -> np.ndarray:
    """log N(y_i | mean_i, cov_i) for y, mean [B, b] and cov [B, b, b] → [B]."""
    chol = np.linalg.cholesky(cov)
    diff = (y - mean)[..., None]
    z = np.linalg.solve(chol, diff)[..., 0]
    b = y.shape[-1]
    return -0.5 * np.sum(z * z, -1) - np.sum(np.log(np.diagonal(chol, axis1=-2, axis2=-1)), -1) \
        - 0.5 * b * np.log(2 * np.pi)


def _check_batches(batches, n: int) -> np.ndarray:
    """``batches`` as a non-empty [B, b] int array of indices in [0, n)."""
    arr = np.asarray(batches)
    if arr.ndim != 2 or 0 in arr.shape:
        raise ValueError(f"batches must be a non-empty [B, b] array of point indices, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"batches must hold integer point indices, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"batches must hold indices in [0, {n}) (one per point of y), got values in "
                         f"[{arr.min()}, {arr.max()}]")
    return arr


def _check_y_mean_cov(y, mean, cov, noise_var, prefix=""):
    y = _checks.as_float_array("y", y, ndim=1).astype(np.float64)
    mean = _checks.as_float_array(prefix + "mean", mean, ndim=1).astype(np.float64)
    cov = check_covariance(cov, prefix + "cov")
    if not (len(y) == len(mean) == len(cov)):
        raise ValueError(f"y, {prefix}mean and {prefix}cov must describe the same points, got lengths "
                         f"{len(y)}, {len(mean)} and {len(cov)}")
    noise_var = _checks.positive("noise_var", noise_var, allow_zero=True)
    return y, mean, cov, noise_var


@serial_blas
def top_correlated_log_likelihood(y, mean, cov, noise_var: float, batch_size: int = 5,
                                  batches: np.ndarray | None = None) -> float:
    """Joint log-likelihood of top-correlated batches under a model, per point (§3.3.1).

    Each batch B (default: :func:`top_correlated_batches` of ``cov``) is scored by
    log N(y_B | mean_B, cov_BB + σ² I) / b; the result is the mean over batches.

    Args:
      y: [n] noisy targets; mean: [n]; cov: [n, n] noise-free covariance; noise_var: σ².
      batch_size: b; batches: optional [B, b] index array.
    """
    y, mean, cov, noise_var = _check_y_mean_cov(y, mean, cov, noise_var)
    batches = top_correlated_batches(cov, batch_size) if batches is None else _check_batches(batches, len(y))
    full = cov + noise_var * np.eye(len(cov))
    sub = full[batches[:, :, None], batches[:, None, :]]  # [B, b, b]
    sub = sub + 1e-10 * np.mean(np.diag(full)) * np.eye(batches.shape[1])
    return float(np.mean(_batched_gaussian_logpdf(y[batches], mean[batches], sub)) / batches.shape[1])


@serial_blas
def cross_normalized_log_likelihood(y, ref_mean, ref_cov, model_cov, noise_var: float, batch_size: int = 5,
                                    batches: np.ndarray | None = None) -> float:
    """XLL (eq. 3): joint log-likelihood with the reference's marginals and the model's correlations.

    For each test point i, B_i = the b points most correlated (in absolute value) with i under the
    reference (noise-free); y_B is scored by
    N(μ_ref, diag(σ_ref) C_M diag(σ_ref)) with σ²_ref = Var_ref(f) + σ² and C_M the
    model's correlation matrix of the noisy observations (cov_M + σ² I). The
    mean over batches is divided by b.

    Args:
      y: [n] noisy test targets; ref_mean: [n]; ref_cov, model_cov: [n, n]
        noise-free covariances; noise_var: σ²; batch_size: b (5).
      batches: optional [B, b] index array (default from ref_cov).

    Returns:
      XLL per point (higher is better).
    """
    y, ref_mean, ref_cov, noise_var = _check_y_mean_cov(y, ref_mean, ref_cov, noise_var, "ref_")
    model_cov = check_covariance(model_cov, "model_cov")
    if model_cov.shape != ref_cov.shape:
        raise ValueError(f"model_cov must have ref_cov's shape {ref_cov.shape}, got {model_cov.shape}")
    batches = top_correlated_batches(ref_cov, batch_size) if batches is None else _check_batches(batches, len(y))
    eye = np.eye(len(y))
    corr_m = correlation_matrix(model_cov + noise_var * eye)
    sd_ref = np.sqrt(np.maximum(np.diag(ref_cov), 0.0) + noise_var)
    cross = corr_m * np.outer(sd_ref, sd_ref)
    sub = cross[batches[:, :, None], batches[:, None, :]]
    sub = sub + 1e-10 * np.mean(sd_ref ** 2) * np.eye(batches.shape[1])
    return float(np.mean(_batched_gaussian_logpdf(y[batches], ref_mean[batches], sub)) / batches.shape[1])


@serial_blas
def xll_table(y, means: Mapping[str, Any], covs: Mapping[str, Any], noise_var: float, batch_size: int = 5
              ) -> pd.DataFrame:
    """XLL and XLLR with every model serving once as the reference (§3.3.2, Alg. 2).

    The same numbers as :func:`cross_normalized_log_likelihood` for every
    (reference, model) pair, computed at once: each model's correlation matrix of
    the noisy observations is formed once, and for each reference the b × b blocks
    of every model are factorised together (one batched Cholesky of
    [models · n, b, b]), which matters with tens of models (the paper's study
    scores about 60 per data set).

    Args:
      y: [n] noisy test targets.
      means: model name → [n] predictive mean of f.
      covs: model name → [n, n] noise-free predictive covariance (same names).
      noise_var: σ²; batch_size: b (5).

    Returns:
      DataFrame with one row per (reference, model) and columns reference, model,
      xll, xllr (rank of the model's XLL under that reference, 0 = best).
    """
    if set(means) != set(covs):
        raise ValueError(f"means and covs must have the same model names, got {sorted(means)} and {sorted(covs)}")
    if len(means) < 1:
        raise ValueError("means must name at least one model, got none")
    names = list(means)
    y = _checks.as_float_array("y", y, ndim=1).astype(np.float64)
    noise_var = _checks.positive("noise_var", noise_var, allow_zero=True)
    batch_size = _checks.integer("batch_size", batch_size, minimum=1, maximum=len(y))
    cov = {k: check_covariance(covs[k], f"covs[{k!r}]") for k in names}
    mean = {}
    for k in names:
        mean[k] = _checks.as_float_array(f"means[{k!r}]", means[k], ndim=1).astype(np.float64)
        if not len(mean[k]) == len(cov[k]) == len(y):
            raise ValueError(f"means[{k!r}] and covs[{k!r}] must describe the {len(y)} points of y, got "
                             f"{len(mean[k])} means and a {cov[k].shape} covariance")
    eye = np.eye(len(y))
    corr = np.stack([correlation_matrix(cov[k] + noise_var * eye) for k in names])  # [M, n, n]
    import scipy.stats

    rows = []
    for ref in names:
        batches = top_correlated_batches(cov[ref], batch_size)  # [n, b]
        sd_ref = np.sqrt(np.maximum(np.diag(cov[ref]), 0.0) + noise_var)  # [n]
        scale = sd_ref[batches][:, :, None] * sd_ref[batches][:, None, :]  # [n, b, b]
        sub = corr[:, batches[:, :, None], batches[:, None, :]] * scale  # [M, n, b, b]
        sub = sub + 1e-10 * np.mean(sd_ref ** 2) * np.eye(batch_size)
        y_b = np.broadcast_to(y[batches], sub.shape[:-1])  # [M, n, b]
        mu_b = np.broadcast_to(mean[ref][batches], sub.shape[:-1])
        vals = np.mean(_batched_gaussian_logpdf(y_b, mu_b, sub), axis=1) / batch_size  # [M]
        ranks = scipy.stats.rankdata(-vals, method="average") - 1.0
        rows += [{"reference": ref, "model": m, "xll": float(v), "xllr": float(r)}
                 for m, v, r in zip(names, vals, ranks)]
    return pd.DataFrame(rows)


def xll_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean XLL and XLLR per model over references (and seeds, if the table has them)."""
    _checks.frame("table", table)
    missing = [c for c in ("model", "xll", "xllr") if c not in table.columns]
    if missing:
        raise ValueError(f"table must come from xll_table (columns model, xll, xllr), missing {missing}")
    return table.groupby("model")[["xll", "xllr"]].mean().sort_values("xll", ascending=False)


# ------------------------------------------------------------------ the synthetic PPC study (§5.2, §5.3)
def ppc_study(splits: Sequence, models: Mapping[str, Any], oracle_model, *, noise_var: float = 0.01,
              batch_size: int | None = None, xll_batch_size: int = 5, verbose: bool = False,
              progress: bool = True) -> dict:
    """Metacorrelations, one-round BatchMIG / TIG performance and XLL for many selection models.

    For each split, every model is fitted on the training points; its noise-free
    covariance over (pool ∪ test) gives its metacorrelations with the oracle
    model's, its BatchMIG and TIG queries (scored by the oracle prediction model
    refitted on train + queries), and, restricted to the test points, its XLL
    with every model in turn as reference.

    Args:
      splits: GPSplits.
      models: name → agent (``fit(x, y, seed)`` → posterior with covariance / predict).
      oracle_model: the oracle agent (true kernel), used for metacorrelations and predictions.
      noise_var: σ²; batch_size: default the reference size; xll_batch_size: b (5).
      verbose: print one line a split.
      progress: a tqdm bar over the model fits (splits × models).

    Returns:
      {"models": DataFrame (split, model, pearson, spearman, variance_pearson,
      variance_spearman, batchmig_log_likelihood, tig_log_likelihood, fit_seconds),
      "xll": DataFrame (split, reference, model, xll, xllr)}.
    """
    import time

    from tqdm.auto import tqdm

    if not models:
        raise ValueError("models must name at least one model, got none")
    splits = _checks.nonempty("splits", splits, "split")
    model_rows, xll_tables = [], []
    with tqdm(total=len(splits) * len(models), desc="PPC study fits", unit="fit", disable=not progress) as bar:
        for s, split in enumerate(splits):
            _check_split(split)
            n_pool, n_test = len(split.x_pool), len(split.x_test)
            q = reference_batch_size(len(split.x_train), n_pool, n_test) if batch_size is None else batch_size
            pool, test = np.arange(n_pool), n_pool + np.arange(n_test)
            x_all = np.concatenate([split.x_pool, split.x_test])
            cov_oracle = oracle_model.fit(split.x_train, split.y_train, seed=s).covariance(x_all)
            means, covs = {}, {}
            for name, model in models.items():
                t0 = time.perf_counter()
                post = model.fit(split.x_train, split.y_train, seed=s)
                cov = np.asarray(post.covariance(x_all), np.float64)
                cov = 0.5 * (cov + cov.T)
                mean = np.asarray(post.predict(split.x_test)[0], np.float64)
                fit_s = time.perf_counter() - t0
                meta = metacorrelation(cov, cov_oracle, pool, test)
                ll_b, _ = evaluate_prediction(split, batch_mig(cov, pool, test, noise_var, q), oracle_model)
                ll_t, _ = evaluate_prediction(split, tig(cov, pool, test, noise_var, q), oracle_model)
                means[name], covs[name] = mean, cov[np.ix_(test, test)]
                model_rows.append({"split": s, "model": name, **meta._asdict(), "batchmig_log_likelihood": ll_b,
                                   "tig_log_likelihood": ll_t, "fit_seconds": fit_s})
                bar.update()
            table = xll_table(split.y_test, means, covs, noise_var, batch_size=xll_batch_size)
            table.insert(0, "split", s)
            xll_tables.append(table)
            if verbose:
                print(f"split {s + 1}/{len(splits)} done", flush=True)
    return {"models": pd.DataFrame(model_rows), "xll": pd.concat(xll_tables, ignore_index=True)}


def ppc_per_model(study: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per model: means over splits of the :func:`ppc_study` columns, XLL and XLLR."""
    cols = ["pearson", "spearman", "variance_pearson", "batchmig_log_likelihood", "tig_log_likelihood"]
    _checks.instance("study", study, Mapping, "the dict ppc_study returns")
    for part in ("models", "xll"):
        _checks.frame(f"study[{part!r}]", study.get(part))
    per_model = study["models"].groupby("model")[cols].mean().join(xll_summary(study["xll"]))
    return per_model.sort_values("pearson", ascending=False)


# ------------------------------------------------------------------ the Fig. 4 statistics
class SplitMeanCorrelation(NamedTuple):
    """Correlation across models of their means over splits, with a bootstrap over splits (Fig. 4)."""

    pearson: float  # Pearson r of the per-model means
    spearman: float  # Spearman ρ of the same
    low: float  # bootstrap percentile interval of pearson (resampling splits)
    high: float
    basic_low: float  # the basic (reverse-percentile) interval 2r − [high, low]: undoes the bootstrap's shift
    basic_high: float
    boot_median: float  # median of the bootstrap r (below pearson when split noise attenuates it)
    reliability_x: float  # share of the variance of the per-model means of x that is not split noise
    reliability_y: float  # the same for y
    num_models: int
    num_splits: int


def split_mean_reliability(values) -> float:
    """How much of the spread of per-model means is signal, not split noise.

    With v [C, S] (model c on split s, every model on the same splits), the
    split-to-split noise of a model's mean is estimated from the model × split
    interaction (two-way residuals, variance σ²_int with (C − 1)(S − 1) degrees
    of freedom) and compared with the variance of the C model means:
    1 − (σ²_int / S) / Var(means). A Pearson correlation between two such noisy
    means is attenuated by about sqrt(reliability_x · reliability_y) (Spearman 1904).

    Args:
      values: [C, S] finite array, C ≥ 2 models and S ≥ 2 splits.

    Returns:
      the reliability (≤ 1; ≤ 0 when the means differ no more than noise would make them).
    """
    v = _checks.as_float_array("values", values, ndim=2).astype(np.float64)
    c, s = v.shape
    if c < 2 or s < 2:
        raise ValueError(f"values must be [models, splits] with at least 2 of each, got shape {v.shape}")
    resid = v - v.mean(0, keepdims=True) - v.mean(1, keepdims=True) + v.mean()
    noise = float(np.sum(resid ** 2) / ((c - 1) * (s - 1))) / s
    spread = float(np.var(v.mean(1), ddof=1))
    return 1.0 - noise / spread if spread > 0 else float("nan")


def split_mean_correlation(x, y, num_resamples: int = 2000, level: float = 0.95, seed: Any = 0
                           ) -> SplitMeanCorrelation:
    """Pearson correlation across models of their split means, with a bootstrap interval over splits.

    This is the coefficient of the paper's Fig. 4 (one point per model or
    hyperparameter setting, each the mean over the same data splits). The
    interval resamples the splits with replacement (all models keep their pairing
    on a split), recomputes every model's means and r, and takes the percentiles.
    Resampling adds split noise to noise already in the means, so the bootstrap r
    sits below r when that noise matters (see :func:`split_mean_reliability`); the
    basic interval 2r − [high, low] corrects that shift and is returned as well.

    Args:
      x, y: [C, S] per-model, per-split values (e.g. metacorrelation and BatchMIG
        test log-likelihood), finite, C ≥ 3 models, S ≥ 2 splits.
      num_resamples: bootstrap resamples (2000).
      level: coverage of the interval, in (0, 1).
      seed: int or JAX key for the resampling.

    Returns:
      SplitMeanCorrelation.

    Example:
      >>> rng = np.random.default_rng(0); t = rng.normal(size=(8, 1))
      >>> res = split_mean_correlation(t + 0.1 * rng.normal(size=(8, 20)), t + 0.1 * rng.normal(size=(8, 20)))
      >>> res.pearson > 0.9 and res.low < res.pearson < res.high
      True
    """
    from jtk._numerics import numpy_rng

    x = _checks.as_float_array("x", x, ndim=2).astype(np.float64)
    y = _checks.as_float_array("y", y, ndim=2).astype(np.float64)
    if x.shape != y.shape:
        raise ValueError(f"y must have x's shape {x.shape} (models × splits), got {y.shape}")
    c, s = x.shape
    if c < 3 or s < 2:
        raise ValueError(f"x must be [models, splits] with at least 3 models and 2 splits, got shape {x.shape}")
    for name, v in (("x", x), ("y", y)):
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(v)))} NaN or inf entries")
    num_resamples = _checks.integer("num_resamples", num_resamples, minimum=10)
    level = _checks.positive("level", level)
    if level >= 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    import scipy.stats

    mx, my = x.mean(1), y.mean(1)
    r = float(scipy.stats.pearsonr(mx, my)[0]) if np.ptp(mx) > 0 and np.ptp(my) > 0 else float("nan")
    rho = float(scipy.stats.spearmanr(mx, my)[0]) if np.ptp(mx) > 0 and np.ptp(my) > 0 else float("nan")
    rng = numpy_rng(seed)
    boot = np.empty(num_resamples)
    chunk = max(1, int(2e7 // max(c * s, 1)))  # keep [C, chunk, S] under ~160 MB
    for start in range(0, num_resamples, chunk):
        idx = rng.integers(0, s, (min(chunk, num_resamples - start), s))  # [B, S]
        bx, by = x[:, idx].mean(-1), y[:, idx].mean(-1)  # [C, B]
        bx, by = bx - bx.mean(0), by - by.mean(0)
        denom = np.sqrt(np.sum(bx ** 2, 0) * np.sum(by ** 2, 0))
        boot[start:start + len(idx)] = np.divide(np.sum(bx * by, 0), denom, out=np.full(len(idx), np.nan),
                                                 where=denom > 0)
    alpha = 100 * (1 - level) / 2
    low, high = np.nanpercentile(boot, [alpha, 100 - alpha])
    return SplitMeanCorrelation(r, rho, float(low), float(high), float(min(2 * r - high, 1.0)),
                                float(min(2 * r - low, 1.0)), float(np.nanmedian(boot)),
                                split_mean_reliability(x), split_mean_reliability(y), c, s)
