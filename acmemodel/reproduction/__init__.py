"""``acmemodel reproduce``: does a bundle reproduce the published AcmeTrace statistics?

* :mod:`.run` — the synthesis of each cluster (queue policy, the simulator's queue filler,
  ``to_trace``) and the driver ``reproduce``;
* :mod:`.compare` — the quality bar, the published curves, the KS distance at points and one
  cluster's comparison tables;
* :mod:`.plots` — the PNG overlays of each published CDF and the synthetic sample.
"""
