"""The parts of ``acmemodel reproduce`` below its driver (:mod:`acmemodel.reproduce`).

* :mod:`.compare` — the quality bar, the published curves, the KS distance at points and one
  cluster's comparison tables;
* :mod:`.plots` — the PNG overlays of each published CDF and the synthetic sample.

The synthesis (queue policy, the simulator's queue filler, :func:`~acmemodel.reproduce.to_trace`)
and the driver :func:`~acmemodel.reproduce.reproduce` stay in :mod:`acmemodel.reproduce`, which
re-exports every name that used to live there.
"""
