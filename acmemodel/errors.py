"""The package's exception types. The CLI maps every :class:`AcmeModelError` to exit code 2."""
from __future__ import annotations


class AcmeModelError(Exception):
    """Base of every user-facing error of acmemodel (bad input, bad config, bad bundle)."""


class TraceFormatError(AcmeModelError, ValueError):
    """A trace file cannot be read as a whole (missing column, empty file, bad compression...).

    The message always names the file and the problem.
    """


class ConfigError(AcmeModelError, ValueError):
    """A cluster configuration or a parameter is invalid; the message names the field."""


class BundleError(AcmeModelError, ValueError):
    """A saved model bundle is missing, malformed or from an incompatible schema version."""


class NotFittedError(AcmeModelError, AttributeError):
    """A model method that needs fitted parameters was called before ``fit``."""


class ConvergenceWarning(UserWarning):
    """An optimiser stopped before convergence; the result may be inaccurate."""


class DataWarning(UserWarning):
    """The data are usable but unusual (unknown type values, sparse cells, fallbacks)."""
