"""Sweeps (``acmemodel sweep``): one cluster configuration over a grid of axes, on Dask or in-process.

* :mod:`.grid` — the grid file, its axes and the points it names;
* :mod:`.runner` — ``sweep(config, grid, client=None)``, ``read_sweep``: the points planned and written;
* :mod:`.plots` — the Pareto front and the sweep's plots.
"""
