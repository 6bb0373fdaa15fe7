"""The one helper that limits BLAS to a single thread around small dense fits.

The GLM, MLE and state-space fits of the models work on small matrices (a few thousand rows × up to
~170 columns), where multi-threaded BLAS only adds contention (measured 7x slower on a busy 2-core
machine). threadpoolctl ships with scikit-learn.
"""
from __future__ import annotations

import contextlib

__all__ = ["single_thread_blas"]


def single_thread_blas():
    """Context manager limiting BLAS to one thread (a no-op without threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
