"""NumPy/SciPy twins of the C kernels, one module per kernel: the same model written plainly, used by the
tests to check the kernels and by ``backend="numpy"``.

* :mod:`.checkpoint` — ``checkpoint.c``'s model (renewal sums, E[T](τ)); :mod:`.optimum` — its
  optimiser, with the Newton ascent of :mod:`.ascent`, the ripple search of :mod:`.ripple` and the
  bounds of :mod:`.bounds`; :mod:`.quadrature` — ``quadrature.c`` (Gauss rules of restart laws);
* :mod:`.montecarlo` — ``montecarlo.c`` (the run simulator, within sampling error);
* :mod:`.cluster` — ``cluster/`` (the discrete-event cluster simulator).
"""
