"""Backtests and metrics on time-ordered holdouts (installed as ``acmemodel.evaluation``)."""
