"""Posterior predictive correlations (Wang, Sun & Grosse 2021): transductive active learning with TIG / MIG /
BatchMIG and the TAL loop (:mod:`jtk.ppc.active`), and metacorrelations, XLL / XLLR and the PPC study
(:mod:`jtk.ppc.ppc`, whose names the package re-exports, as the module ``jtk.ppc`` had them). It may import the
platform (jtk's top-level modules), :mod:`jtk.envs` and :mod:`jtk.regression` (its models serve as the studies'
posteriors); never :mod:`jtk.testbed`, :mod:`jtk.course`, :mod:`jtk.plots`, :mod:`jtk.widgets` or :mod:`jtk.cli`
(tests/test_architecture.py).

The public surface of a study module (:mod:`~jtk.ppc.synthetic_study`, :mod:`~jtk.ppc.real_study`,
:mod:`~jtk.ppc.tal_oracle`) is its command, ``main(argv)`` (``argv`` a list of str, or None for the command line;
``python -m MODULE`` and ``jtk reproduce`` call it), and the few functions that another module, a notebook or a page
calls, named in its ``__all__``; each checks its arguments at entry (tests/test_fuzz_ppc.py holds a bad-input
case for every one). Its other functions are the study's internals: importable (its tests use them), not documented,
and free to change.
"""

from jtk.ppc import active
from jtk.ppc.ppc import (Metacorrelation, SplitMeanCorrelation, correlation_matrix, cross_normalized_log_likelihood,
                         metacorrelation, ppc_per_model, ppc_study, split_mean_correlation, split_mean_reliability,
                         top_correlated_batches, top_correlated_log_likelihood, xll_summary, xll_table)

__all__ = ["active", "Metacorrelation", "SplitMeanCorrelation", "correlation_matrix",
           "cross_normalized_log_likelihood", "metacorrelation", "ppc_per_model", "ppc_study", "split_mean_correlation",
           "split_mean_reliability", "top_correlated_batches", "top_correlated_log_likelihood", "xll_summary",
           "xll_table"]
