"""Matplotlib / seaborn figures, one module a topic; every figure is titled and labelled."""
