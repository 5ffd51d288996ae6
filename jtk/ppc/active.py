"""Transductive active learning (TAL): TIG, MIG, BatchMIG and the TAL loop.

Wang, Sun & Grosse (2021), "Beyond marginal uncertainty: how accurately can
Bayesian regression models estimate posterior predictive correlations?"
The posterior-predictive-correlation metrics of the same paper
(metacorrelations, XLL / XLLR, the synthetic PPC study) are in :mod:`jtk.ppc`.

Acquisition (§3.2; exact scores as in the reference code; docs/reference.md, "Active learning").
Every function takes ``cov``, the noise-free posterior covariance of f over
*all* candidate and test points given the current training data, and index
arrays ``pool`` and ``test`` into it. Selection uses the joint covariance of
(noisy pool observations y_p, noise-free test values f_u): σ² is added to the
diagonal of pool entries only.

* TIG: top q pool points by predictive variance of y_p.
* MIG: top q by −Σ_u log(1 − ρ²(y_p, f_u)).
* BatchMIG: greedy; with S the points chosen so far, candidate p scores
  −Σ_u log(1 − ρ²_u(S ∪ {p})), ρ²_u(S) = Σ_uS Σ_SS⁻¹ Σ_Su / Σ_uu (the squared
  multiple correlation of f_u with y_S). The first pick equals MIG's.

TAL protocol (§5.1): the *selection* model scores the pool, the *prediction*
model (the oracle GP on synthetic data) is refitted on train + queried points
and scored by its mean test log-likelihood; one round with batch size
max(⌊0.01 (train + pool + test)⌋, 1), or several rounds for learning curves.

Example:
  >>> import numpy as np
  >>> a = np.random.default_rng(0).normal(size=(30, 5)); cov = a @ a.T
  >>> pool, test = np.arange(20), np.arange(20, 30)
  >>> chosen = batch_mig(cov, pool, test, noise_var=0.1, batch_size=3)
  >>> bool(chosen[0] == mig(cov, pool, test, 0.1, 1)[0])
  True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from jtk import _checks, _memory
from jtk._numerics import numpy_rng, paired_interval, serial_blas

if TYPE_CHECKING:  # imported where used: jtk.ppc.active stays free of JAX at import
    from jtk.envs.gp import GPSplit, ReLUKernelGP

CRITERIA = ("batchmig", "mig", "tig", "random")
_FLOOR = 1e-12  # floor on 1 − ρ² (guards log 0 when σ² = 0)
_PSD_RTOL = 1e-6  # eigenvalues down to −1e-6 · max diag count as PSD (round-off of sample covariances)


# ------------------------------------------------------------------ validation
_as_index = _checks.indices  # distinct int64 indices into a matrix (the one owner is jtk._checks)


@serial_blas
def check_covariance(cov: Any, name: str = "cov", index: np.ndarray | None = None) -> np.ndarray:
    """Returns ``cov`` as float64 after checking it is a finite, square, symmetric PSD matrix.

    Positive semi-definiteness is checked on ``cov[index][:, index]`` (all of cov
    when None), at any size, by a Cholesky factorisation of that matrix divided
    by its largest diagonal entry, plus 1e-6 · I: round-off in rank-deficient
    sample covariances passes while a clearly indefinite matrix fails. Dividing
    by the scale first makes the check work for any magnitude (1e-300 or 1e300).
    The check costs one factorisation, O(n³ / 3) for n = len(index), and
    3 n² float64 of memory (refused up front when that exceeds the budget).

    Raises:
      ValueError: naming ``name``, what was expected and what was given.
    """
    cov = _checks.as_float_array(name, cov, ndim=2, dtype=np.float64)
    if cov.shape[0] != cov.shape[1]:
        raise ValueError(f"{name} must be a square [n, n] covariance matrix, got shape {cov.shape}")
    scale = max(float(np.max(np.abs(np.diag(cov)))) if cov.size else 0.0, 1e-300)
    asym = float(np.max(np.abs(cov - cov.T))) if cov.size else 0.0
    if asym > 1e-6 * scale:
        raise ValueError(f"{name} must be symmetric, got max |{name} - {name}.T| = {asym:.3g} "
                         f"(max diagonal {scale:.3g})")
    if np.any(np.diag(cov) < -_PSD_RTOL * scale):
        raise ValueError(f"{name} must be positive semi-definite, got a negative diagonal entry "
                         f"{np.min(np.diag(cov)):.3g}")
    n = cov.shape[0] if index is None else len(index)
    _memory.check_budget(f"PSD check of {name}: 3 × n² float64 with n = {n}",
                         _memory.nbytes(3, n, n, dtype=np.float64),
                         "use fewer pool / test points")
    whole = index is None or (len(index) == cov.shape[0] and np.array_equal(index, np.arange(len(index))))
    sub = cov if whole else cov[np.ix_(index, index)]  # no copy when index is every row in order (the PPC study's)
    unit = sub / scale  # [n, n] with max diagonal 1
    unit = 0.5 * (unit + unit.T)
    unit[np.diag_indices_from(unit)] += _PSD_RTOL
    from scipy.linalg import lapack
    _, info = lapack.dpotrf(unit, lower=True, clean=False, overwrite_a=True)
    if info > 0:
        where = "" if index is None else " (in the order pool, then test)"
        if n <= 2000:  # an eigenvalue is cheap enough to report
            sub = cov if index is None else cov[np.ix_(index, index)]
            low = float(np.linalg.eigvalsh(0.5 * (sub + sub.T))[0])
            detail = f"smallest eigenvalue {low:.3g}"
        else:
            detail = f"its leading {info} x {info} principal submatrix{where} is indefinite"
        raise ValueError(f"{name} must be positive semi-definite, got {detail} (max diagonal {scale:.3g})")
    return cov


def _check_problem(cov, pool, test, noise_var, batch_size, cov_name: str = "cov", pool_name: str = "pool"):
    """Validates an acquisition problem; returns it with cov and noise_var divided by cov's largest diagonal entry.

    ``cov_name`` / ``pool_name``: the public names of cov and pool in messages (``oracle_cov``, ``batch``).
    """
    cov = _checks.as_float_array(cov_name, cov, ndim=2, dtype=np.float64)
    if cov.shape[0] != cov.shape[1]:
        raise ValueError(f"{cov_name} must be a square [n, n] covariance matrix, got shape {cov.shape}")
    n = cov.shape[0]
    pool = _as_index(pool_name, pool, n, cov_name)
    test = _as_index("test", test, n, cov_name)
    shared = np.intersect1d(pool, test)
    if shared.size:
        raise ValueError(f"{pool_name} and test must be disjoint index sets, got {shared.size} shared indices "
                         f"(first: {shared[:5].tolist()})")
    noise_var = _checks.positive("noise_var", noise_var, allow_zero=True)
    batch_size = _checks.integer("batch_size", batch_size, minimum=1)
    if batch_size > len(pool):
        raise ValueError(f"batch_size must be <= the pool size {len(pool)}, got {batch_size}")
    _memory.check_budget(f"pool × test float64 × 3 (pool {len(pool)}, test {len(test)})",
                         _memory.nbytes(3, len(pool), len(test), dtype=np.float64), "use fewer pool / test points")
    cov = check_covariance(cov, cov_name, np.concatenate([pool, test]))
    # Every criterion is invariant to scaling cov and noise_var together: work with
    # max diag = 1, so covariances of any magnitude (1e-300 or 1e300) neither under- nor overflow.
    scale = float(np.max(np.diag(cov)))
    if scale > 0:
        with np.errstate(over="ignore"):
            cov, ratio = cov / scale, noise_var / scale
        if not np.isfinite(ratio):  # σ² / max diag overflows: the products of the criteria would be inf / NaN
            raise ValueError(f"{cov_name} must have a scale float64 can relate to noise_var, but noise_var / max "
                             f"diagonal of {cov_name} = {noise_var:.3g} / {scale:.3g} overflows float64 (the criteria "
                             f"would compute with inf and NaN); rescale {cov_name} and noise_var together (every "
                             f"criterion is invariant to that)")
        noise_var = ratio
    return cov, pool, test, noise_var, batch_size


# ------------------------------------------------------------------ acquisition
@serial_blas
def tig(cov, pool, test, noise_var: float, batch_size: int) -> np.ndarray:
    """Total information gain: the q pool points with the largest variance of y_p (MacKay 1992).

    Args:
      cov: [n, n] noise-free posterior covariance of f over all points.
      pool: [P] indices of candidate points; test: [U] indices of test points
        (unused by TIG, validated for a uniform API).
      noise_var: observation noise variance σ² ≥ 0.
      batch_size: q ≤ P.

    Returns:
      [q] indices into cov (members of pool), best first.
    """
    cov, pool, test, noise_var, batch_size = _check_problem(cov, pool, test, noise_var, batch_size)
    return _top(pool, np.diag(cov)[pool] + noise_var, batch_size)


def _top(pool, score, batch_size):
    """The ``batch_size`` pool points with the largest scores, ties to the earlier point."""
    return pool[np.argsort(-score, kind="stable")[:batch_size]]


@serial_blas
def mig_scores(cov, pool, test, noise_var: float) -> np.ndarray:
    """MIG score −Σ_u log(1 − ρ²(y_p, f_u)) of every pool point → [P].

    ρ²(y_p, f_u) = Σ_pu² / ((Σ_pp + σ²) Σ_uu); test points with zero variance add nothing.
    """
    cov, pool, test, noise_var, _ = _check_problem(cov, pool, test, noise_var, 1)
    return _mig_scores(cov, pool, test, noise_var)


def _mig_scores(cov, pool, test, noise_var):
    var_y = np.diag(cov)[pool] + noise_var  # [P]
    var_f = np.diag(cov)[test]  # [U]
    cross = cov[np.ix_(pool, test)]  # [P, U]
    denom = np.outer(var_y, var_f)
    rho2 = np.divide(cross ** 2, denom, out=np.zeros_like(cross), where=denom > 0)
    return -np.sum(np.log(np.maximum(1.0 - rho2, _FLOOR)), axis=1)


@serial_blas
def mig(cov, pool, test, noise_var: float, batch_size: int) -> np.ndarray:
    """Marginal information gain: the q pool points with the highest MIG score, chosen at once.

    Args/Returns: as :func:`tig`; the score is :func:`mig_scores`.
    """
    cov, pool, test, noise_var, batch_size = _check_problem(cov, pool, test, noise_var, batch_size)
    return _top(pool, _mig_scores(cov, pool, test, noise_var), batch_size)


@serial_blas
def batch_mig_score(cov, batch, test, noise_var: float) -> float:
    """The BatchMIG score of a given batch, computed directly (no incremental updates).

    −Σ_u log(1 − ρ²_u(S)), ρ²_u(S) = Σ_uS (Σ_SS + σ² I)⁻¹ Σ_Su / Σ_uu. Used as the
    brute-force reference in tests and to show the objective in notebooks.

    Args:
      cov: [n, n] noise-free covariance; batch: [q] indices (the set S);
      test: [U] indices; noise_var: σ².

    Returns:
      the score (a float ≥ 0).
    """
    cov, batch, test, noise_var, _ = _check_problem(cov, batch, test, noise_var, 1, pool_name="batch")
    s_ss = cov[np.ix_(batch, batch)] + noise_var * np.eye(len(batch))
    s_su = cov[np.ix_(batch, test)]
    var_f = np.diag(cov)[test]
    explained = np.sum(s_su * np.linalg.lstsq(s_ss, s_su, rcond=1e-12)[0], axis=0)  # [U]
    rho2 = np.divide(explained, var_f, out=np.zeros_like(var_f), where=var_f > 0)
    return float(-np.sum(np.log(np.maximum(1.0 - rho2, _FLOOR))))


@serial_blas
def batch_mig(cov, pool, test, noise_var: float, batch_size: int, return_scores: bool = False):
    """Greedy BatchMIG (Wang et al. 2021, eq. 2) with incremental Cholesky updates.

    Keeps, for the points chosen so far S, the columns of the Cholesky factor of
    the joint covariance of (y_S, y_pool, f_test) (L_pool [P, k], L_test [U, k]) and
    the residual cross-covariance C = Cov(y_p, f_u | y_S) [P, U]. Adding s costs
    one rank-one update, O(P·k + P·U), and all candidates are scored at once:

        1 − ρ²_u(S ∪ {p}) = (Var(f_u | y_S) − C_pu² / Var(y_p | y_S)) / Σ_uu.

    Args:
      cov: [n, n] noise-free posterior covariance of f over all points.
      pool: [P] candidate indices; test: [U] test indices, disjoint from pool.
      noise_var: σ² added to pool variances (noisy observations).
      batch_size: q ≤ P.
      return_scores: also return the score after each pick.

    Returns:
      [q] indices into cov in the order chosen (and, if asked, scores [q]).
    """
    cov, pool, test, noise_var, batch_size = _check_problem(cov, pool, test, noise_var, batch_size)
    chosen, scores = _batch_mig(cov, pool, test, noise_var, batch_size)
    return (chosen, scores) if return_scores else chosen


def _batch_mig(cov, pool, test, noise_var, batch_size):
    num_pool = len(pool)
    var_f0 = np.diag(cov)[test].copy()  # [U] prior Σ_uu
    informative = var_f0 > 0
    var_f0 = np.where(informative, var_f0, 1.0)
    var_f = var_f0.copy()  # [U] Var(f_u | y_S)
    var_y = np.diag(cov)[pool] + noise_var  # [P] Var(y_p | y_S)
    cross_t = np.asfortranarray(cov[np.ix_(test, pool)])  # [U, P] Cov(f_u, y_p | y_S), Fortran for dger
    cross = cross_t.T  # [P, U] C-contiguous view
    buf = np.empty_like(cross)  # [P, U] work array
    l_pool = np.zeros((num_pool, batch_size))  # [P, q] Cholesky columns
    available = np.ones(num_pool, bool)
    chosen, scores = np.empty(batch_size, np.int64), np.empty(batch_size)
    tiny = 1e-12 * max(float(np.max(var_y)), 1e-300)
    for k in range(batch_size):
        # 1 − ρ²_u(S ∪ {p}) = r_u (1 − C_pu² / (Var(y_p|S) Var(f_u|S))), r_u = Var(f_u|S) / Σ_uu;
        # the score floors the product at 1e-12, i.e. the bracket at 1e-12 / r_u.
        r = var_f / var_f0
        live = informative & (r > _FLOOR)
        const = np.sum(np.log(np.maximum(r[informative], _FLOOR)))
        inv_f = np.divide(1.0, var_f, out=np.zeros_like(var_f), where=live)
        floor = np.divide(_FLOOR, r, out=np.full_like(r, _FLOOR), where=live)
        inv_y = np.divide(1.0, var_y, out=np.zeros_like(var_y), where=var_y > tiny)
        np.multiply(cross, cross, out=buf)
        buf *= inv_f[None, :]
        buf *= inv_y[:, None]
        np.subtract(1.0, buf, out=buf)
        np.maximum(buf, floor[None, :], out=buf)
        np.log(buf, out=buf)
        score = -(const + buf.sum(axis=1))  # [P]
        score[~available] = -np.inf
        s = int(np.argmax(score))
        chosen[k], scores[k] = pool[s], score[s]
        available[s] = False
        if k + 1 == batch_size:
            break
        root = np.sqrt(max(var_y[s], tiny))
        col_pool = (cov[pool, pool[s]] - l_pool[:, :k] @ l_pool[s, :k]) / root  # [P]
        col_pool[s] = root  # the noise term of Cov(y_s, y_s)
        col_test = cross[s] / root  # [U]
        l_pool[:, k] = col_pool
        _rank_one_update(cross_t, col_test, col_pool)  # cross −= col_pool col_testᵀ, in place
        var_y = var_y - col_pool ** 2
        var_f = np.maximum(var_f - col_test ** 2, 0.0)
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"cov gave non-finite BatchMIG scores {scores.tolist()}: check that cov is a valid "
                         f"covariance (positive semi-definite, not near-singular to round-off) and noise_var")
    return chosen, scores


def _rank_one_update(a_fortran: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """a ← a − x yᵀ in place for a Fortran-ordered float64 matrix (BLAS dger)."""
    try:
        from scipy.linalg.blas import dger
        out = dger(-1.0, x, y, a=a_fortran, overwrite_a=True)
        if out is not a_fortran and not np.shares_memory(out, a_fortran):
            a_fortran[...] = out
    except ImportError:  # pragma: no cover
        a_fortran -= np.outer(x, y)


def random_selection(pool, batch_size: int, seed: Any = 0) -> np.ndarray:
    """q distinct pool indices uniformly at random (the baseline)."""
    pool = _as_index("pool", pool, None, "the candidates")
    batch_size = _checks.integer("batch_size", batch_size, minimum=1)
    if batch_size > len(pool):
        raise ValueError(f"batch_size must be <= the pool size {len(pool)}, got {batch_size}")
    return pool[numpy_rng(seed).choice(len(pool), batch_size, replace=False)]


def select(criterion: str, cov, pool, test, noise_var: float, batch_size: int, seed: Any = 0) -> np.ndarray:
    """Dispatches to batchmig / mig / tig / random → [q] chosen indices into cov.

    ``cov`` may be None for "random" (then only pool and batch_size are checked).
    """
    _checks.one_of("criterion", criterion, CRITERIA)
    if criterion == "random":
        if cov is not None:
            _check_problem(cov, pool, test, noise_var, batch_size)
        return random_selection(pool, batch_size, seed)
    return {"batchmig": batch_mig, "mig": mig, "tig": tig}[criterion](cov, pool, test, noise_var, batch_size)


@serial_blas
def select_many(cov, pool, test, noise_var: float, batch_size: int, criteria: Sequence[str] = ("batchmig", "mig", "tig"),
                seed: Any = 0) -> dict[str, np.ndarray]:
    """Every criterion's batch for one problem, validating ``cov`` once → {criterion: [q] indices into cov}.

    The same batches as :func:`select` per criterion; the PSD check of ``cov``
    (one Cholesky, most of the cost for a 700-point problem) runs once instead of
    once per criterion. The PPC study scores hundreds of models this way.
    """
    criteria = _checks.names("criteria", criteria, CRITERIA)
    cov, pool, test, noise_var, batch_size = _check_problem(cov, pool, test, noise_var, batch_size)
    out = {}
    for c in criteria:
        if c == "random":
            out[c] = random_selection(pool, batch_size, seed)
        elif c == "tig":
            out[c] = _top(pool, np.diag(cov)[pool] + noise_var, batch_size)
        elif c == "mig":
            out[c] = _top(pool, _mig_scores(cov, pool, test, noise_var), batch_size)
        else:
            out[c] = _batch_mig(cov, pool, test, noise_var, batch_size)[0]
    return out


def _select_trusted(criterion: str, cov: np.ndarray, pool: np.ndarray, test: np.ndarray, noise_var: float,
                    batch_size: int, seed: Any = 0) -> np.ndarray:
    """:func:`select` for a problem built in this package (a GP posterior covariance, valid indices): the same
    scaling and criteria as :func:`_check_problem` and :func:`select_many`, without the PSD factorisation."""
    if criterion == "random":
        return random_selection(pool, batch_size, seed)
    scale = float(np.max(np.diag(cov)))
    if scale > 0:
        cov, noise_var = cov / scale, noise_var / scale
    if criterion == "tig":
        return _top(pool, np.diag(cov)[pool] + noise_var, batch_size)
    if criterion == "mig":
        return _top(pool, _mig_scores(cov, pool, test, noise_var), batch_size)
    return _batch_mig(cov, pool, test, noise_var, batch_size)[0]


# ------------------------------------------------------------------ TAL loop
def reference_batch_size(num_train: int, num_pool: int, num_test: int) -> int:
    """The reference query size max(⌊0.01 (train + pool + test)⌋, 1) (docs/reference.md, "Active learning")."""
    total = sum(_checks.integer(n, v, minimum=0) for n, v in
                (("num_train", num_train), ("num_pool", num_pool), ("num_test", num_test)))
    return max(int(np.floor(0.01 * total)), 1)


@dataclass(frozen=True)
class TALResult:
    """One TAL run: round 0 is before any query.

    Attributes:
      criterion: the acquisition function.
      num_train: [R + 1] training-set sizes.
      test_log_likelihood: [R + 1] mean test log-likelihood of the prediction model.
      test_rmse: [R + 1] test RMSE of its mean.
      queried: [R, q] indices into the split's pool arrays, in selection order.
    """

    criterion: str
    num_train: np.ndarray
    test_log_likelihood: np.ndarray
    test_rmse: np.ndarray
    queried: np.ndarray


def _check_split(split):
    """Checks the arrays of a split, naming them as ``split.x_pool`` etc. (not as the models' ``x``)."""
    for attr in ("x_train", "y_train", "x_pool", "y_pool", "x_test", "y_test"):
        if not hasattr(split, attr):
            raise TypeError(f"split must have x_train, y_train, x_pool, y_pool, x_test, y_test "
                            f"(a jtk.envs.gp.GPSplit), got {type(split).__name__} without {attr}")
    dim = None
    for part in ("train", "pool", "test"):
        x = _checks.as_float_array(f"split.x_{part}", getattr(split, f"x_{part}"), ndim=2, dtype=np.float64)
        y = _checks.as_float_array(f"split.y_{part}", getattr(split, f"y_{part}"), ndim=1, dtype=np.float64)
        if len(y) != len(x):
            raise ValueError(f"split.y_{part} must hold one target per row of split.x_{part} ({len(x)}), "
                             f"got {len(y)}")
        if dim is not None and x.shape[1] != dim:
            raise ValueError(f"split.x_{part} must have the {dim} columns of split.x_train, got shape {x.shape}")
        dim = x.shape[1] if dim is None else dim


def _fixed_kernel_gp(prediction_model):
    """The (kernel, noise_var) of a GP with a given kernel and noise (GPRegression(kernel=k, noise_var=σ²)), else raise."""
    kernel, noise_var = getattr(prediction_model, "kernel", None), getattr(prediction_model, "noise_var", None)
    if not callable(kernel) or noise_var is None or not callable(getattr(prediction_model, "fit", None)):
        raise TypeError(f"prediction_model must be a GP with a given kernel and noise variance "
                        f"(jtk.regression.gp.GPRegression(kernel=k, noise_var=σ²)) to use a gram matrix, got "
                        f"{type(prediction_model).__name__}" + (" without a kernel" if hasattr(prediction_model, "kernel")
                                                              else ""))
    return kernel, float(noise_var)


def _same_gp(a, b) -> bool:
    """Whether two models are the same fixed-kernel GP: the same object, or equal with kernels that are one bound
    method of equal objects (a bound method's == compares its object by identity)."""
    if a is b:
        return True
    try:
        ka, kb = getattr(a, "kernel", None), getattr(b, "kernel", None)
        if type(a) is not type(b) or not callable(ka) or not callable(kb) or a.noise_var != b.noise_var:
            return False
        if hasattr(ka, "__self__") and hasattr(kb, "__self__"):
            same_kernel = ka.__func__ is kb.__func__ and bool(ka.__self__ == kb.__self__)
        else:
            same_kernel = ka is kb
        return same_kernel and bool(dataclasses.replace(a, kernel=None) == dataclasses.replace(b, kernel=None))
    except Exception:  # an agent whose == does not give a bool, or that is no dataclass
        return False


def _split_x(split) -> np.ndarray:
    return np.concatenate([np.asarray(split.x_train, np.float64), np.asarray(split.x_pool, np.float64),
                           np.asarray(split.x_test, np.float64)])


@serial_blas
def prediction_gram(split, prediction_model) -> np.ndarray:
    """The prediction model's kernel matrix over all points of a split, in the order train, pool, test.

    Computed once per split, it lets :func:`evaluate_prediction`, :func:`run_tal` and
    :func:`tal_comparison` refit the oracle GP on train + queried points by slicing it instead of
    evaluating the kernel again (the same numbers up to round-off).

    Args:
      split: a :class:`jtk.envs.gp.GPSplit` (or :class:`DataSplit`).
      prediction_model: a GP with a given kernel and noise variance
        (:class:`jtk.regression.gp.GPRegression` with ``kernel``).

    Returns:
      [N, N] float64, N = train + pool + test points.
    """
    _check_split(split)
    kernel, _ = _fixed_kernel_gp(prediction_model)
    x = _split_x(split)
    _memory.check_budget(f"gram matrix: (train + pool + test)² float64 × 3 (N = {len(x)})",
                         _memory.nbytes(3, len(x), len(x), dtype=np.float64), "use fewer pool / test points")
    gram = np.asarray(kernel(x), np.float64)
    return 0.5 * (gram + gram.T)


def _check_gram(gram, split, prediction_model) -> tuple[np.ndarray, float]:
    """Validates a :func:`prediction_gram` for ``split`` and ``prediction_model`` → (gram, noise_var)."""
    kernel, noise_var = _fixed_kernel_gp(prediction_model)
    n = len(split.x_train) + len(split.x_pool) + len(split.x_test)
    gram = _checks.as_float_array("gram", gram, ndim=2, dtype=np.float64)
    if gram.shape != (n, n):
        raise ValueError(f"gram must be the [{n}, {n}] kernel matrix over split's train, pool and test points "
                         f"(prediction_gram(split, prediction_model)), got shape {gram.shape}")
    # a spot check that gram is this kernel over these points, in this order: the first and the last point
    ends = np.array([0, n - 1])
    expect = np.asarray(kernel(_split_x(split)[ends]), np.float64)
    got = gram[np.ix_(ends, ends)]
    if not np.allclose(got, expect, rtol=1e-8, atol=1e-12 * max(float(np.max(np.abs(expect))), 1e-300)):
        raise ValueError(f"gram must be prediction_model's kernel over split's train, pool and test points in that "
                         f"order (prediction_gram(split, prediction_model)), got entries {got.ravel().tolist()} "
                         f"where the kernel gives {expect.ravel().tolist()}")
    return gram, noise_var


@serial_blas
def _evaluate_gram(split, queried: np.ndarray, gram: np.ndarray, noise_var: float) -> tuple[float, float]:
    """:func:`evaluate_prediction` of the fixed-kernel GP from its :func:`prediction_gram` (no checks)."""
    from jtk.regression.gp import gaussian_log_likelihood, gram_posterior

    n_train, n_pool = len(split.x_train), len(split.x_pool)
    observed = np.concatenate([np.arange(n_train), n_train + queried])
    y = np.concatenate([split.y_train, split.y_pool[queried]])
    targets = n_train + n_pool + np.arange(len(split.x_test))
    mean, std = gram_posterior(gram, observed, np.asarray(y, np.float64), targets, noise_var)
    y_test = np.asarray(split.y_test, np.float64)
    ll = float(np.mean(gaussian_log_likelihood(y_test, mean, std ** 2 + noise_var)))
    return ll, float(np.sqrt(np.mean((mean - y_test) ** 2)))


@serial_blas
def evaluate_prediction(split, queried, prediction_model, seed: Any = 0, *, gram=None) -> tuple[float, float]:
    """Fits the prediction model on train + queried pool points → (test log-likelihood, test RMSE).

    Args:
      split: a GPSplit; queried: indices into ``split.x_pool``;
      prediction_model: an agent whose posterior has ``log_likelihood(x, y)``
        (e.g. :class:`jtk.regression.gp.GPRegression` with the oracle kernel) or
        ``predict(x)`` plus a ``noise_var`` attribute.
      gram: optional :func:`prediction_gram` of ``split`` for a fixed-kernel GP ``prediction_model``: the
        refit reads the kernel from it (the same numbers up to round-off, without kernel evaluations).
    """
    _check_split(split)
    q = _as_index("queried", queried, len(split.x_pool), "split.x_pool", allow_empty=True)
    if gram is not None:
        gram, noise_var = _check_gram(gram, split, prediction_model)
        return _evaluate_gram(split, q, gram, noise_var)
    x = np.concatenate([split.x_train, split.x_pool[q]])
    y = np.concatenate([split.y_train, split.y_pool[q]])
    post = prediction_model.fit(x, y, seed=seed)
    if hasattr(post, "log_likelihood"):
        return post.log_likelihood(split.x_test, split.y_test), post.rmse(split.x_test, split.y_test)
    mean, std = post.predict(split.x_test)
    var = np.asarray(std, np.float64) ** 2 + float(getattr(prediction_model, "noise_var"))
    ll = -0.5 * (np.log(2 * np.pi * var) + (split.y_test - mean) ** 2 / var)
    return float(np.mean(ll)), float(np.sqrt(np.mean((split.y_test - mean) ** 2)))


@serial_blas
def run_tal(split, selection_model, prediction_model, criterion: str = "batchmig", *, batch_size: int | None = None,
            num_rounds: int = 1, noise_var: float = 0.01, seed: Any = 0, gram=None) -> TALResult:
    """Transductive active learning with decoupled selection and prediction models (§3.2, §5.1).

    Each round fits ``selection_model`` on the current training set, takes its
    noise-free covariance over (remaining pool ∪ test), picks ``batch_size`` points
    with ``criterion``, moves them (with their noisy labels) into the training set
    and scores ``prediction_model`` refitted on it.

    Args:
      split: a :class:`jtk.envs.gp.GPSplit`, or a :class:`DataSplit` of your own
        data (:func:`split_data`).
      selection_model: agent with ``fit(x, y, seed) → posterior.covariance(x)``
        (ignored for "random").
      prediction_model: agent scored on the test points (the oracle GP in the paper).
      criterion: "batchmig", "mig", "tig" or "random".
      batch_size: points per round; default the reference size
        max(⌊0.01 (train + pool + test)⌋, 1).
      num_rounds: rounds (1 in the reference synthetic protocol).
      noise_var: σ² used by the acquisition functions (the true 0.01).
      seed: int or JAX key (random selection and stochastic models).
      gram: optional :func:`prediction_gram` of ``split`` for a fixed-kernel GP ``prediction_model``: every
        refit of the prediction model (and of the selection model, when it equals the prediction model, as
        in Fig. 3's oracle TAL) reads the kernel from it instead of evaluating it; the same queries and
        numbers up to round-off.

    Returns:
      TALResult.
    """
    _check_split(split)
    _checks.one_of("criterion", criterion, CRITERIA)
    gram_noise, same = None, False
    if gram is not None:
        gram, gram_noise = _check_gram(gram, split, prediction_model)
        same = _same_gp(selection_model, prediction_model)
    num_rounds = _checks.integer("num_rounds", num_rounds, minimum=1)
    noise_var = _checks.positive("noise_var", noise_var, allow_zero=True)
    n_train, n_pool, n_test = len(split.x_train), len(split.x_pool), len(split.x_test)
    batch_size = reference_batch_size(n_train, n_pool, n_test) if batch_size is None else batch_size
    batch_size = _checks.integer("batch_size", batch_size, minimum=1)
    if batch_size * num_rounds > n_pool:
        raise ValueError(f"batch_size * num_rounds must be <= the pool size {n_pool}, "
                         f"got {batch_size} * {num_rounds}")
    rng = numpy_rng(seed)
    remaining = np.arange(n_pool)
    queried: list[np.ndarray] = []
    def evaluate(q):
        if gram is None:
            return evaluate_prediction(split, q, prediction_model, seed=0)
        return _evaluate_gram(split, q, gram, gram_noise)

    ll0, rmse0 = evaluate(np.zeros(0, np.int64))
    lls, rmses, sizes = [ll0], [rmse0], [n_train]
    for _ in range(num_rounds):
        done = np.concatenate(queried) if queried else np.zeros(0, np.int64)
        round_seed = int(rng.integers(0, 2**31 - 1))
        local_pool = np.arange(len(remaining))
        local_test = len(remaining) + np.arange(n_test)
        if criterion == "random":
            pick = random_selection(local_pool, batch_size, round_seed)
        elif same:  # the oracle selects: its posterior covariance from the gram, a GP's (no PSD check needed)
            from jtk.regression.gp import gram_posterior

            observed = np.concatenate([np.arange(n_train), n_train + done])
            y_obs = np.asarray(np.concatenate([split.y_train, split.y_pool[done]]), np.float64)
            targets = np.concatenate([n_train + remaining, n_train + n_pool + np.arange(n_test)])
            cov = gram_posterior(gram, observed, y_obs, targets, gram_noise, full_covariance=True)[1]
            pick = _select_trusted(criterion, cov, local_pool, local_test, noise_var, batch_size)
        else:
            post = selection_model.fit(np.concatenate([split.x_train, split.x_pool[done]]),
                                       np.concatenate([split.y_train, split.y_pool[done]]), seed=round_seed)
            cov = post.covariance(np.concatenate([split.x_pool[remaining], split.x_test]))
            pick = select(criterion, cov, local_pool, local_test, noise_var, batch_size)
        queried.append(remaining[pick])
        remaining = np.setdiff1d(remaining, remaining[pick])
        ll, rmse = evaluate(np.concatenate(queried))
        lls.append(ll), rmses.append(rmse), sizes.append(n_train + batch_size * len(queried))
    return TALResult(criterion, np.array(sizes), np.array(lls), np.array(rmses), np.stack(queried))


def tal_comparison(splits: Sequence, selection_model, prediction_model,
                   criteria: Sequence[str] = CRITERIA, progress: bool = True, use_gram: bool = False,
                   **tal_kwargs) -> pd.DataFrame:
    """Runs :func:`run_tal` for every split and criterion → long DataFrame.

    Columns: split, criterion, round, num_train, test_log_likelihood, test_rmse. ``progress``: a tqdm bar over the
    (split, criterion) runs; ``use_gram``: compute each split's :func:`prediction_gram` once and hand it to every
    run on that split (a fixed-kernel GP prediction model only; the same results up to round-off, faster);
    ``tal_kwargs`` go to :func:`run_tal`.
    """
    from tqdm.auto import tqdm

    splits = _checks.nonempty("splits", splits, "split")
    criteria = _checks.names("criteria", criteria, CRITERIA)
    if not isinstance(use_gram, (bool, np.bool_)):
        raise TypeError(f"use_gram must be True or False, got {use_gram!r}")
    if "gram" in tal_kwargs:
        raise TypeError("gram is per split: pass use_gram=True to tal_comparison instead of gram")
    if use_gram:
        _fixed_kernel_gp(prediction_model)
    rows = []
    runs = [(i, split, criterion) for i, split in enumerate(splits) for criterion in criteria]
    grams: dict[int, np.ndarray] = {}
    for i, split, criterion in tqdm(runs, desc="TAL runs", unit="run", disable=not progress):
        if use_gram and i not in grams:
            grams.clear()  # one split's gram at a time
            grams[i] = prediction_gram(split, prediction_model)
        res = run_tal(split, selection_model, prediction_model, criterion, seed=i,
                      **(dict(gram=grams[i]) if use_gram else {}), **tal_kwargs)
        for r in range(len(res.num_train)):
            rows.append({"split": i, "criterion": criterion, "round": r, "num_train": int(res.num_train[r]),
                         "test_log_likelihood": res.test_log_likelihood[r], "test_rmse": res.test_rmse[r]})
    return pd.DataFrame(rows)


def summarize(df: pd.DataFrame, value: str = "test_log_likelihood", by: str | Sequence[str] = "criterion"
              ) -> pd.DataFrame:
    """Mean, standard error and count of ``value`` per group (stderr = std / sqrt(n))."""
    need = [value] + ([by] if isinstance(by, str) else list(by))
    _checks.frame("df", df, need)
    g = df.groupby(by)[value]
    out = pd.DataFrame({"mean": g.mean(), "stderr": g.std(ddof=1) / np.sqrt(g.count()), "n": g.count()})
    return out.sort_values("mean", ascending=False)


def paired_gaps(df: pd.DataFrame, pairs: Sequence[tuple[str, str]], value: str = "test_log_likelihood",
                by: str = "criterion", pair_on: str = "split", level: float = 0.95) -> pd.DataFrame:
    """Differences between criteria on the same splits, with their t-intervals: what a comparison may claim.

    Args:
      df: one row per (criterion, split), e.g. the last round of :func:`tal_comparison`.
      pairs: (a, b) criteria to compare, a − b each.
      value: the score column.
      by: the column naming the criterion.
      pair_on: the column the two criteria share (the split).
      level: confidence level of the intervals.

    Returns:
      DataFrame indexed by "a − b": difference, half_width, within_noise, n (splits both scored).
    """
    _checks.frame("df", df, [value, by, pair_on])
    wide = df.pivot_table(index=pair_on, columns=by, values=value)
    rows = {}
    for a, b in pairs:
        for name in (a, b):
            if name not in wide.columns:
                raise ValueError(f"pairs names {name!r}, which is not a {by} of df ({list(wide.columns)})")
        both = wide[[a, b]].dropna()
        d, half, within = paired_interval(both[a].to_numpy(), both[b].to_numpy(), level)
        rows[f"{a} − {b}"] = {"difference": d, "half_width": half, "within_noise": within, "n": len(both)}
    return pd.DataFrame.from_dict(rows, orient="index")


# ------------------------------------------------------------------ a researcher's own data (§5.1, UCI protocol)
class DataSplit(NamedTuple):
    """A train / pool / test split of a regression data set, in the shape :func:`run_tal` takes.

    Attributes:
      x_train, x_pool, x_test: [n_*, d] float64 inputs (standardised with the
        training + pool statistics when asked).
      y_train, y_pool, y_test: [n_*] float64 targets (likewise standardised).
      x_mean, x_scale: [d] the input standardisation (zeros and ones when off).
      y_mean, y_scale: the target standardisation; a test log-likelihood in the
        original units is the standardised one minus log(y_scale).
      feature_names: the input column names (a DataFrame's, else x0, x1, …).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_pool: np.ndarray
    y_pool: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    x_mean: np.ndarray
    x_scale: np.ndarray
    y_mean: float
    y_scale: float
    feature_names: tuple[str, ...]

    @property
    def query_size(self) -> int:
        """Points per TAL iteration: 1 % of the whole data set, at least 1 (the paper's UCI protocol)."""
        return max(int(np.floor(0.01 * (len(self.y_train) + len(self.y_pool) + len(self.y_test)))), 1)


def _table_xy(x, y, target):
    """(x [n, d] float64, y [n] float64, feature names) from arrays, a DataFrame and a target column, or both."""
    names = None
    if isinstance(x, pd.DataFrame):
        if target is not None:
            if y is not None:
                raise ValueError("give either y or target (a column of x), not both")
            if target not in x.columns:
                raise ValueError(f"target must name a column of x, got {target!r}; columns: {list(x.columns)}")
            y, x = x[target], x.drop(columns=[target])
        names = tuple(str(c) for c in x.columns)
        bad = [str(c) for c in x.columns if not pd.api.types.is_numeric_dtype(x[c])]
        if bad:
            raise TypeError(f"x must have numeric columns only (encode categories first), got non-numeric {bad}")
        x = x.to_numpy()
    elif target is not None:
        raise ValueError(f"target names a column of a DataFrame x, but x is a {type(x).__name__}; pass y instead")
    if y is None:
        raise ValueError("y must be given (or x must be a DataFrame and target one of its columns)")
    if isinstance(y, (pd.Series, pd.DataFrame)):
        y = y.to_numpy()
    x = _checks.as_float_array("x", x, ndim=(1, 2), dtype=np.float64)
    x = x[:, None] if x.ndim == 1 else x
    y = _checks.as_float_array("y", np.squeeze(np.asarray(y)) if np.ndim(y) == 2 and np.shape(y)[1] == 1 else y,
                               ndim=1, dtype=np.float64)
    if len(y) != len(x):
        raise ValueError(f"y must have one target per row of x ({len(x)} rows), got {len(y)}")
    names = tuple(f"x{i}" for i in range(x.shape[1])) if names is None else names
    return x, y, names


def split_data(x, y=None, *, target: str | None = None, train_fraction: float = 0.2, test_fraction: float = 0.2,
               seed: Any = 0, standardize: bool = True) -> DataSplit:
    """Splits a researcher's own regression data for TAL with the paper's UCI protocol (§5.1).

    20 % of the rows become the initial training set, 20 % the test set and the
    remaining 60 % the pool (defaults); each TAL iteration then queries 1 % of the
    data (:attr:`DataSplit.query_size`). Rows are shuffled by ``seed`` (the paper
    runs 10 seeds). Inputs and targets are standardised with the mean and std of
    the training + pool rows (the data a learner may see), as the reference code does.

    Args:
      x: [n, d] (or [n]) numeric array, or a pandas DataFrame of numeric columns.
      y: [n] targets (array or Series); leave out when ``target`` names a column of x.
      target: the target column of a DataFrame ``x``.
      train_fraction, test_fraction: shares of the rows, each in (0, 1) and together < 1.
      seed: int or JAX key for the shuffle.
      standardize: standardise x and y (True).

    Returns:
      DataSplit, usable as ``run_tal(split, ...)``.

    Example:
      >>> import pandas as pd
      >>> df = pd.DataFrame({"a": np.arange(100.0), "b": np.arange(100.0) ** 0.5, "t": np.arange(100.0) % 7})
      >>> s = split_data(df, target="t", seed=1)
      >>> len(s.y_train), len(s.y_pool), len(s.y_test), s.query_size, s.feature_names
      (20, 60, 20, 1, ('a', 'b'))
    """
    x, y, names = _table_xy(x, y, target)
    fractions = {}
    for name, v in (("train_fraction", train_fraction), ("test_fraction", test_fraction)):
        v = _checks.positive(name, v)
        if v >= 1:
            raise ValueError(f"{name} must be in (0, 1), got {v}")
        fractions[name] = v
    if fractions["train_fraction"] + fractions["test_fraction"] >= 1:
        raise ValueError(f"train_fraction + test_fraction must be < 1 to leave a pool, got "
                         f"{fractions['train_fraction']} + {fractions['test_fraction']}")
    n = len(y)
    n_train = int(round(fractions["train_fraction"] * n))
    n_test = int(round(fractions["test_fraction"] * n))
    if min(n_train, n_test, n - n_train - n_test) < 1:
        raise ValueError(f"x must have enough rows for a training set, a pool and a test set of at least 1 row "
                         f"each with these fractions, got {n} rows ({n_train} / {n - n_train - n_test} / {n_test})")
    order = numpy_rng(seed).permutation(n)
    train, pool, test = order[:n_train], order[n_train:n - n_test], order[n - n_test:]
    seen = np.concatenate([train, pool])
    if standardize:
        x_mean, x_scale = x[seen].mean(0), x[seen].std(0)
        x_scale = np.where(x_scale > 0, x_scale, 1.0)  # a constant column stays constant
        y_mean, y_scale = float(y[seen].mean()), float(y[seen].std())
        if y_scale <= 0:
            raise ValueError("y must vary over the training + pool rows to be standardised, got a constant target; "
                             "pass standardize=False")
    else:
        x_mean, x_scale, y_mean, y_scale = np.zeros(x.shape[1]), np.ones(x.shape[1]), 0.0, 1.0
    xs, ys = (x - x_mean) / x_scale, (y - y_mean) / y_scale
    return DataSplit(xs[train], ys[train], xs[pool], ys[pool], xs[test], ys[test], x_mean, x_scale, y_mean, y_scale,
                     names)


# ------------------------------------------------------------------ the Fig. 2 toy (one TAL round, precomputable)
@dataclass(frozen=True, eq=False)
class ToyState:
    """Everything the app needs, computed once.

    Attributes:
      split: the 1-D toy data (pool = an even grid over [−4, 4]).
      oracle: the data-generating GP (also the prediction model).
      covs: selection-model name → noise-free covariance [P + U, P + U] over (pool, test).
      noise_var: observation noise variance σ².
    """

    split: GPSplit
    oracle: ReLUKernelGP
    covs: Mapping[str, np.ndarray]
    noise_var: float

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(self.covs)


def default_toy_models(oracle: ReLUKernelGP) -> dict[str, Any]:
    """Selection models of decreasing PPC quality for the toy."""
    from jtk.envs.gp import NOISE_VAR
    from jtk.regression.gp import GPRegression, MonteCarloGP

    if not callable(getattr(oracle, "kernel", None)):
        raise TypeError(f"oracle must be a jtk.envs.ReLUKernelGP (an object with a .kernel), got "
                        f"{type(oracle).__name__}")
    exact = GPRegression(kernel=oracle.kernel, noise_var=NOISE_VAR)
    return {
        "oracle GP": exact,
        "GP-RBF (ML-II)": GPRegression(noise_var=NOISE_VAR),
        "GP-RBF, lengthscale 0.3": GPRegression(noise_var=NOISE_VAR, lengthscale=0.3),
        "oracle seen through 5 samples": MonteCarloGP(exact, 5),
    }


def make_toy_state(seed: Any = 0, models: Mapping[str, Any] | None = None, **toy_kwargs) -> ToyState:
    """Draws the toy split and fits each selection model on its training points.

    Args:
      seed: int or JAX key for the toy data.
      models: name → agent with ``fit(x, y, seed) → posterior.covariance``; default
        :func:`default_toy_models`.
      **toy_kwargs: passed to :func:`jtk.envs.gp.toy_split_1d` (num_train, num_pool, num_test).
    """
    from jtk.envs.gp import NOISE_VAR, ReLUKernelGP, toy_split_1d

    oracle = ReLUKernelGP(input_dim=1)
    split = toy_split_1d(seed, oracle=oracle, **toy_kwargs)
    models = default_toy_models(oracle) if models is None else dict(models)
    if not models:
        raise ValueError("models must name at least one selection model, got none")
    x_all = np.concatenate([split.x_pool, split.x_test])
    covs = {}
    for name, model in models.items():
        cov = np.asarray(model.fit(split.x_train, split.y_train, seed=0).covariance(x_all), np.float64)
        covs[name] = 0.5 * (cov + cov.T)
    return ToyState(split, oracle, covs, NOISE_VAR)


def toy_view(state: ToyState, criterion: str, batch_size: int, model: str) -> dict:
    """The plotted data for one setting of the controls (pure).

    Args:
      state: from :func:`make_toy_state`.
      criterion: "batchmig", "mig", "tig" or "random".
      batch_size: points queried in the one round (1 ≤ q ≤ pool size).
      model: a key of ``state.covs``: the selection model.

    Returns:
      dict with x_grid, f_grid (ground truth on the pool grid), x_train, y_train,
      x_test, x_query, y_query (in selection order), mean, std (oracle prediction
      after the query on the grid), test_log_likelihood, criterion, model.

    Example:
      >>> view = toy_view(make_toy_state(seed=0), "batchmig", 4, "oracle GP")
      >>> len(view["x_query"])
      4
    """
    _checks.instance("state", state, ToyState, "a ToyState from make_toy_state")
    _checks.one_of("criterion", criterion, CRITERIA)
    _checks.one_of("model", model, state.model_names)
    s = state.split
    n_pool, n_test = len(s.x_pool), len(s.x_test)
    batch_size = _checks.integer("batch_size", batch_size, minimum=1, maximum=n_pool)
    from jtk.regression.gp import GPRegression

    pool, test = np.arange(n_pool), n_pool + np.arange(n_test)
    picked = select(criterion, state.covs[model], pool, test, state.noise_var, batch_size, seed=0)
    prediction = GPRegression(kernel=state.oracle.kernel, noise_var=state.noise_var)
    ll, _ = evaluate_prediction(s, picked, prediction)
    post = prediction.fit(np.concatenate([s.x_train, s.x_pool[picked]]), np.concatenate([s.y_train, s.y_pool[picked]]))
    order = np.argsort(s.x_pool[:, 0])
    mean, std = post.predict(s.x_pool[order])
    return {"x_grid": s.x_pool[order, 0], "f_grid": s.f_pool[order], "x_train": s.x_train[:, 0], "y_train": s.y_train,
            "x_test": s.x_test[:, 0], "x_query": s.x_pool[picked, 0], "y_query": s.y_pool[picked],
            "mean": mean, "std": std, "test_log_likelihood": ll, "criterion": criterion, "model": model}
