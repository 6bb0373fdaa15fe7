"""One training run under failures: its inputs and the two questions asked of them.

* :mod:`.processes` — failure processes (exponential, Weibull, piecewise-constant hazard) and restart
  times, with the parameters the C kernels take;
* :mod:`.inputs` — ``RunInputs``: a run's failure process, failure-type mix and restart law, assembled
  once from a bundle and a configuration (the precedence rules of the failure assumptions);
* :mod:`.checkpoint` — the renewal-model optimal checkpoint interval and E[T](τ);
* :mod:`.montecarlo` — ``FailureMix`` and the Monte Carlo run simulator;
* :mod:`.plan` — ``RunPlan`` and ``plan_run``: one run planned from its inputs (optimum, Monte Carlo,
  the E[T](τ) curve).
"""
