"""Plot helpers shared by the models and reports: duration axes labelled in human units.

:func:`duration_axis` puts a logarithmic axis of seconds on ticks at 1 s, 10 s, 1 min, 10 min, 1 h,
6 h, 1 d, 1 w, 30 d, 1 y (those inside the data's range) labelled ``1 s``, ``10 min``, ``6 h``,
``1 w``... instead of ``2^21`` or ``10^5`` seconds. Internals stay in seconds; only the labels change.
"""
from __future__ import annotations

__all__ = ["DURATION_TICKS", "duration_axis"]

#: (seconds, label) of the ticks of a duration axis
DURATION_TICKS = ((1.0, "1 s"), (10.0, "10 s"), (60.0, "1 min"), (600.0, "10 min"), (3600.0, "1 h"),
                  (6 * 3600.0, "6 h"), (86400.0, "1 d"), (7 * 86400.0, "1 w"), (30 * 86400.0, "30 d"),
                  (365 * 86400.0, "1 y"))


def duration_axis(ax, axis: str = "x", label: str | None = None):
    """Make ``axis`` of ``ax`` a log axis of seconds with human tick labels (module docstring);
    ``label``: the axis title (its unit is the tick labels). Returns ``ax``."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    secs = [s for s, _ in DURATION_TICKS]
    names = dict(DURATION_TICKS)
    a.set_major_locator(FixedLocator(secs))
    a.set_major_formatter(FuncFormatter(lambda v, _pos: names.get(float(v), "")))
    a.set_minor_locator(NullLocator())
    if label is not None:
        (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)
    return ax
