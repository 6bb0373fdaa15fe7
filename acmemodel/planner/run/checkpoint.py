"""Checkpoint interval: expected wall time ``E[T](τ)`` and its optimum (C kernel, vectorised).

Model (renewal reward; implemented in ``acmemodel/_solver/checkpoint.c``, NumPy twin in
:mod:`acmemodel._solver.reference.checkpoint`). ``W`` seconds of work are cut into segments of ``τ`` seconds of
work, each followed by a blocking checkpoint of ``C`` seconds (``x = τ + C``). Failures of the job form
a renewal process (:mod:`acmemodel.planner.run.processes`): the hazard clock restarts at every failure, not
at checkpoints. Each failure is followed by a restart of random length ``R``; a failure can strike
during the restart, which then starts over (Daly's assumption). Between two failures (a cycle of mean
length ``E[F]``, the MTTF) ``N = ⌊(F − R)⁺ / x⌋`` checkpoints complete, so

    E[N](τ) = Σ_{i≥1} E_R[ S(R + i·x) ],        E[T](τ) = W · E[F] / (τ · E[N](τ)).

``W/τ`` counts segments with the fractional last one pro rata (Daly's convention; the long-run rate,
exact when ``W`` is a multiple of ``τ`` and ``W ≫ MTTF``; the Monte Carlo simulator treats the last
segment and the failure-free start exactly, a difference of at most about one segment). ``τ > W``
means one segment (``τ = W``). For exponential failures ``S(t) = e^{−t/M}`` this is **Daly's complete
model** ``E[T] = M e^{R/M} (e^{(τ+C)/M} − 1) W/τ``, with ``e^{R/M}`` replaced by ``1/E[e^{−R/M}]`` when
``R`` is random. ``E[F]`` does not depend on ``τ``, so the optimal ``τ`` maximises the expected work
saved per cycle ``τ·E[N](τ)``. For exponential failures it is found by Brent's method on the root of
its derivative (exactly ``τ* = M (1 + W₀(−e^{−1−C/M}))``, independent of ``R``). Weibull and
piecewise-constant hazards are summed numerically (no memoryless closed form; Euler–Maclaurin through
B20 after a few direct terms for Weibull, geometric series per piece) together with the first two
τ-derivatives (Weibull: the restart nodes near the least one — a log-normal restart law has many of
small weight near 0 — are summed as their 4-point Gauss rule, ~1e-15 of E[N]), and the optimum is a safeguarded Newton ascent (never ending below its start) from Daly's interval for the mean
``U/G0`` (``U = E[(F − R)⁺]``, ``G0 = P(F > R)``) followed by a guard scan for a better local optimum that
skips what upper bounds on ``τ·E[N]`` exclude (see ``checkpoint.c``). Under a piecewise-constant hazard
``E[T](τ)`` has local minima 0.5–3 % apart and ~1e-5–1e-3 from each other (``φ'`` jumps where ``r + i x``
crosses a break); a ripple search samples that neighbourhood at a quarter of the shortest ripple
period and refines the best, and when the ripple is large (window capped at ±15 %) also samples the bands
out to the guard scan's √2 steps, where a long-period ripple can put a distinct, better minimum; where a
ripple as large as the gap to the best could hide one between the guard's samples (a wear-out jump makes
``φ`` a sawtooth), the guard steps a quarter period and probes the sharpest kink between samples. Tests:
within 1e-6 of a brute-force grid on seeded random hazards; on broad random hazards with wear-out jumps
(tests' ``_broad``) about 1 % of optima are still 1e-5–1e-4 above the grid minimum. The optimisers it replaced (a Newton +
guard-scan kernel and the original grid search) were removed; their last figures are in ``benchmarks/bench_solver.py``.

"Does not finish": a checkpoint cost at or above the MTTF (``C ≥ E[F]``), or an expected wall time that
is not finite (restart time or failure rate too high), gives ``status > 0`` with a reason; the interval
is then NaN in arrays and ``None`` in :meth:`CheckpointResult.to_dict`, the expected time ``inf`` and
the ETTR 0 — never a large finite number.

References: Young (1974) ``τ ≈ √(2CM)``; Daly (2006) higher-order estimate
``τ = √(2CM)·[1 + ⅓√(C/2M) + ⅑(C/2M)] − C`` for ``C < 2M``, else ``τ = M``.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from acmemodel._solver import _core
from acmemodel.planner.run.processes import FailureProcess, RestartTime

if TYPE_CHECKING:
    import pandas as pd

#: kernel status codes → meaning
STATUS_REASONS: dict[int, str] = {
    0: "",
    1: "checkpoint cost is at or above the mean time to failure: no progress is possible",
    2: "expected wall time is not finite: failures or restarts leave no time for a checkpoint to complete",
    3: "Monte Carlo replicas exceeded the wall-time cap",
}

#: maximum restart-distribution nodes for the (summed) Weibull / piecewise kernels
MAX_RESTART_NODES = 64


def _kernels(backend: str):
    """The kernels of ``backend``: ``_core`` (C) or its NumPy twins, as one object with
    ``ckpt_expected_time``, ``ckpt_optimize`` and ``mc_run``."""
    if backend == "c":
        return _core
    if backend == "numpy":
        # the twins import SciPy's optimisers: loaded only when asked for (tests, benchmarks)
        from acmemodel._solver.reference import checkpoint, montecarlo, optimum

        return SimpleNamespace(ckpt_expected_time=checkpoint.ckpt_expected_time,
                               ckpt_optimize=optimum.ckpt_optimize, mc_run=montecarlo.mc_run)
    raise ValueError(f"backend must be 'c' or 'numpy', got {backend!r}")


def _positive(name: str, value) -> np.ndarray:
    a = np.asarray(value, dtype=float)
    if a.size == 0 or np.any(~np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must be finite and > 0 seconds, got {value!r}")
    return a


def young_interval(ckpt_cost, mttf) -> np.ndarray:
    """Young's first-order optimum ``√(2 C M)`` (seconds)."""
    C, M = _positive("ckpt_cost", ckpt_cost), _positive("mttf", mttf)
    return np.sqrt(2.0 * C * M)


def daly_interval(ckpt_cost, mttf) -> np.ndarray:
    """Daly's higher-order optimum: ``√(2CM)[1 + ⅓√(C/2M) + ⅑(C/2M)] − C`` if ``C < 2M`` else ``M``."""
    C, M = _positive("ckpt_cost", ckpt_cost), _positive("mttf", mttf)
    r = C / (2.0 * M)
    est = np.sqrt(2.0 * C * M) * (1.0 + np.sqrt(r) / 3.0 + r / 9.0) - C
    return np.where(C < 2.0 * M, est, M)


def _prepare(work, ckpt_cost, failure: FailureProcess, restart, extra=()):
    if not isinstance(failure, FailureProcess):
        raise ValueError(f"failure must be a FailureProcess (ExponentialFailures, WeibullFailures, "
                         f"PiecewiseHazard), got {type(failure).__name__}")
    W = _positive("work", work)
    C = _positive("ckpt_cost", ckpt_cost)
    if isinstance(restart, RestartTime):
        max_nodes = None if failure.family == "exponential" else MAX_RESTART_NODES
        rv, rw = restart.nodes(max_nodes=max_nodes)
        r_shape: tuple = ()
    else:
        rv = np.asarray(restart, dtype=float)
        if np.any(~np.isfinite(rv)) or np.any(rv < 0):
            raise ValueError(f"restart must be finite and >= 0 seconds, got {restart!r}")
        r_shape = rv.shape
    shape = np.broadcast_shapes(W.shape, C.shape, failure.batch_shape, r_shape,
                                *[np.shape(e) for e in extra])
    n = int(np.prod(shape)) if shape else 1
    flat = lambda a: np.ascontiguousarray(np.broadcast_to(a, shape).reshape(n), dtype=float)  # noqa: E731
    if isinstance(restart, RestartTime):
        r_nodes = np.ascontiguousarray(np.broadcast_to(rv, (n, rv.size)), dtype=float)
        r_weights = np.ascontiguousarray(np.broadcast_to(rw, (n, rw.size)), dtype=float)
        r_mean = np.full(n, restart.mean)
    else:
        r_nodes = flat(rv).reshape(n, 1).copy()
        r_weights = np.ones((n, 1))
        r_mean = r_nodes[:, 0].copy()
    params = failure.kernel_params_for(shape)
    mttf = flat(failure.mean())
    return shape, n, flat, W, C, params, r_nodes, r_weights, r_mean, mttf


def expected_time(interval, *, work, ckpt_cost, failure: FailureProcess, restart=0.0,
                  backend: str = "c") -> np.ndarray:
    """Expected wall time ``E[T](τ)`` in seconds (see module docstring); ``inf`` where it does not finish.

    Parameters
    ----------
    interval : checkpoint interval τ, seconds of work between checkpoints (> 0; array ok).
    work : seconds of failure-free compute ``W`` (> 0).
    ckpt_cost : blocking checkpoint cost ``C`` seconds (> 0).
    failure : a :class:`~acmemodel.planner.run.processes.FailureProcess` of the job at its size.
    restart : seconds (number/array, deterministic) or a :class:`RestartTime` distribution.
    backend : ``"c"`` (default) or ``"numpy"`` (the reference twin).
    All array arguments broadcast; the result has the broadcast shape.
    """
    tau = _positive("interval", interval)
    shape, n, flat, W, C, params, rn, rw, _, _ = _prepare(work, ckpt_cost, failure, restart, (tau,))
    et, _st = _kernels(backend).ckpt_expected_time(flat(tau), flat(W), flat(C), failure.family_code,
                                                   params, rn, rw)
    et = np.asarray(et, dtype=float)
    return et.reshape(shape) if shape else et[0]


@dataclass
class CheckpointResult:
    """Optimal checkpoint interval per scenario (arrays of the broadcast input shape, seconds).

    ``interval_s`` optimum τ* (NaN if the run does not finish); ``expected_time_s`` ``E[T](τ*)``
    (``inf`` if not); ``young_interval_s`` / ``daly_interval_s`` the classic estimates and
    ``young_expected_time_s`` / ``daly_expected_time_s`` ``E[T]`` at them; ``status`` 0 = finishes,
    see :data:`STATUS_REASONS`.
    """

    interval_s: np.ndarray
    expected_time_s: np.ndarray
    work_s: np.ndarray
    ckpt_cost_s: np.ndarray
    mttf_s: np.ndarray
    restart_mean_s: np.ndarray
    young_interval_s: np.ndarray
    daly_interval_s: np.ndarray
    young_expected_time_s: np.ndarray
    daly_expected_time_s: np.ndarray
    status: np.ndarray
    family: str = "exponential"

    @property
    def finishes(self) -> np.ndarray:
        return np.asarray(self.status) == 0

    @property
    def ettr(self) -> np.ndarray:
        """Effective training time ratio ``W / E[T]`` (0 if the run does not finish)."""
        with np.errstate(divide="ignore"):
            return np.where(self.finishes, self.work_s / self.expected_time_s, 0.0)

    @property
    def overhead_fraction(self) -> np.ndarray:
        """Expected extra wall time per unit of work ``(E[T] − W) / W`` (``inf`` if it does not finish)."""
        return np.where(self.finishes, self.expected_time_s / self.work_s - 1.0, np.inf)

    def reason(self) -> np.ndarray:
        """Why each scenario does not finish (empty string where it does)."""
        st = np.atleast_1d(self.status)
        C, M = np.atleast_1d(self.ckpt_cost_s), np.atleast_1d(self.mttf_s)
        out = []
        for s, c, m in zip(st.ravel(), np.broadcast_to(C, st.shape).ravel(), np.broadcast_to(M, st.shape).ravel()):
            msg = STATUS_REASONS.get(int(s), f"status {int(s)}")
            if int(s) == 1:
                msg = f"checkpoint cost {c:g} s is at or above the mean time to failure {m:g} s: " \
                      "no progress is possible"
            out.append(msg)
        return np.array(out, dtype=object).reshape(np.shape(self.status))

    def gpu_hours_lost_per_day(self, gpus) -> np.ndarray:
        """GPU-hours per wall-clock day not spent on useful work: ``g · 24 · (1 − ETTR)``."""
        g = _positive("gpus", gpus)
        return g * 24.0 * (1.0 - self.ettr)

    def to_frame(self) -> pd.DataFrame:
        """One row per scenario."""
        import pandas as pd  # (here only: the checkpoint optimum itself starts without pandas)

        cols = {k: np.ravel(getattr(self, k)) for k in (
            "work_s", "ckpt_cost_s", "mttf_s", "restart_mean_s", "interval_s", "expected_time_s",
            "young_interval_s", "daly_interval_s", "young_expected_time_s", "daly_expected_time_s", "status")}
        df = pd.DataFrame(cols)
        df["ettr"] = np.ravel(self.ettr)
        df["overhead_fraction"] = np.ravel(self.overhead_fraction)
        df["finishes"] = np.ravel(self.finishes)
        df["reason"] = np.ravel(self.reason())
        return df

    def to_dict(self, gpus=None) -> dict:
        """JSON-safe dict of a single scenario (``None`` for quantities that do not exist)."""
        if np.size(self.status) != 1:
            raise ValueError("to_dict() needs a single scenario; use to_frame() for arrays")
        fin = bool(np.ravel(self.finishes)[0])
        v = lambda a: float(np.ravel(a)[0])  # noqa: E731
        fin_or_none = lambda a: (v(a) if fin else None)  # noqa: E731
        d = {
            "finishes": fin,
            "reason": None if fin else str(np.ravel(self.reason())[0]),
            "failure_family": self.family,
            "work_s": v(self.work_s), "ckpt_cost_s": v(self.ckpt_cost_s), "mttf_s": v(self.mttf_s),
            "restart_mean_s": v(self.restart_mean_s),
            "interval_s": fin_or_none(self.interval_s),
            "expected_wall_time_s": fin_or_none(self.expected_time_s),
            "overhead_fraction": fin_or_none(self.overhead_fraction),
            "ettr": v(self.ettr),
            "young_interval_s": v(self.young_interval_s), "daly_interval_s": v(self.daly_interval_s),
            "young_expected_wall_time_s": _finite_or_none(v(self.young_expected_time_s)),
            "daly_expected_wall_time_s": _finite_or_none(v(self.daly_expected_time_s)),
        }
        if gpus is not None:
            d["gpus"] = int(gpus)
            d["gpu_hours_lost_per_day"] = v(self.gpu_hours_lost_per_day(gpus))
            if fin:
                d.update(self._loss_split(int(gpus), v))
        return d

    def _loss_split(self, g: int, v) -> dict:
        """The GPU time not spent on work, split into checkpoint overhead and failures, per wall-clock
        day and over the whole run: of ``T − W`` (expected wall time minus work), the checkpoints of
        the ``W/τ`` completed segments cost ``(W/τ)·C``; the rest, ``T − W − (W/τ)·C``, is lost to
        failures (re-done work, restarts, checkpoints cut short)."""
        W, C, tau, T = v(self.work_s), v(self.ckpt_cost_s), v(self.interval_s), v(self.expected_time_s)
        ck = W / tau * C if tau > 0 else 0.0
        fail = max(T - W - ck, 0.0)
        per_day = g * 24.0 / T if T > 0 else float("nan")
        return {"gpu_hours_lost_per_day_failures": fail * per_day,
                "gpu_hours_lost_per_day_checkpoint": ck * per_day,
                "gpu_hours_lost_run": {"total": g * (T - W) / 3600.0, "failures": g * fail / 3600.0,
                                       "checkpoint": g * ck / 3600.0}}


def _finite_or_none(x: float):
    return x if np.isfinite(x) else None


def optimal_interval(*, work, ckpt_cost, failure: FailureProcess, restart=0.0,
                     backend: str = "c") -> CheckpointResult:
    """Optimal checkpoint interval τ* minimising ``E[T](τ)`` (see module docstring), vectorised.

    Parameters as :func:`expected_time`. Returns a :class:`CheckpointResult` whose arrays have the
    broadcast shape of the inputs (0-d for scalars).
    """
    shape, n, flat, W, C, params, rn, rw, r_mean, mttf = _prepare(work, ckpt_cost, failure, restart)
    k = _kernels(backend)
    Wf, Cf = flat(W), flat(C)
    tau, et, st = k.ckpt_optimize(Wf, Cf, failure.family_code, params, rn, rw)
    young = young_interval(Cf, mttf)
    daly = daly_interval(Cf, mttf)
    et_y, _ = k.ckpt_expected_time(young, Wf, Cf, failure.family_code, params, rn, rw)
    et_d, _ = k.ckpt_expected_time(np.ascontiguousarray(daly), Wf, Cf, failure.family_code, params, rn, rw)
    rs = lambda a: np.asarray(a).reshape(shape)  # noqa: E731
    return CheckpointResult(
        interval_s=rs(tau), expected_time_s=rs(et), work_s=rs(Wf), ckpt_cost_s=rs(Cf), mttf_s=rs(mttf),
        restart_mean_s=rs(r_mean), young_interval_s=rs(young), daly_interval_s=rs(daly),
        young_expected_time_s=rs(et_y), daly_expected_time_s=rs(et_d), status=rs(st).astype(int),
        family=failure.family)
