"""Energy and carbon of GPU time: the paper's power model, with its defaults, overridable.

Per GPU server of ``n = 8`` GPUs (all powers in W):

* a GPU draws ``P_busy`` while it runs a job and ``P_idle = 60 W`` when idle;
* the rest of the server (CPUs 11.2 %, power-supply losses 9.6 %, memory, network, fans) draws a constant
  ``P_rest``: GPUs are ``s = 65.7 %`` of a server's power when they run at full power
  (``P_max = 400 W``, the A100-SXM limit), so ``P_rest = n · P_max · (1 − s) / s`` (≈ 1,671 W);
* the facility draws ``PUE = 1.25`` times the IT power; carbon intensity ``c = 0.478 tCO₂e/MWh``.

``P_busy`` comes from the published Acme GPU-power CDF (``reference/power_cdf.csv``, Seren, 15-s samples
of every GPU): its mean ``P̄`` is the fleet's average per-GPU draw, of which about 30 % of GPUs were idle,
so ``P_busy = (P̄ − 0.3 · P_idle) / 0.7`` (≈ 215 W). The published GPU-server power CDF checks ``P_rest``
(:meth:`PowerModel.server_check`: its mean minus ``n · P̄`` is ≈ 1,583 W; reading ``s`` as a share of the
power at the fleet's average draw instead would put the mean server at 2,050 W against the published
2,930 W).

A lost GPU-hour costs, at the facility, its GPU and its share of the server:

    E_busy = (P_busy + P_rest / n) · PUE · 1 h      (lost work, checkpoint overhead; ≈ 0.53 kWh)
    E_idle = (P_idle + P_rest / n) · PUE · 1 h      (restart downtime: GPUs held idle; ≈ 0.34 kWh)

and a cluster of ``N`` GPUs over ``H`` hours with busy share ``u`` uses

    E = N · H · (u · P_busy + (1 − u) · P_idle + P_rest / n) · PUE,     CO₂e = c · E.

Units: W, kWh, MWh, tCO₂e.
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, fields
from typing import Mapping

import numpy as np

from acmemodel.errors import ConfigError
from acmemodel.datasets import reference_rows
from acmemodel.planner.config_fields import check_number

#: published Seren energy in May 2023 (MWh) and its carbon (tCO2e), the model's check
SEREN_MAY_2023_MWH = 673.0
SEREN_MAY_2023_TCO2E = 321.7


@functools.lru_cache(maxsize=None)
def _power_curve(cluster: str, metric: str) -> tuple[float, float]:
    """(mean, samples) of a published power CDF, by integrating its quantile function."""
    # (the CSV rows without pandas: the checkpoint command prices its loss and starts without pandas)
    g = sorted((float(r["cdf_percent"]), float(r["x_watts"])) for r in reference_rows("power_cdf")
               if r["cluster"] == cluster and r["metric"] == metric)
    if not g:
        raise ValueError(f"no published power curve for {cluster!r} / {metric!r}")
    u = (np.arange(20_000) + 0.5) / 20_000 * 100.0
    cdf, watts = np.array(g).T
    q = np.interp(u, cdf, watts)
    return float(q.mean()), float(len(g))


def published_mean_gpu_power_w(cluster: str = "Seren") -> float:
    """Mean per-GPU draw (W) of the published GPU-power CDF of ``cluster`` (Seren or Kalos)."""
    return _power_curve(cluster, "GPU power (W)")[0]


def published_mean_server_power_w() -> float:
    """Mean GPU-node server power (W) of the published Seren server-power CDF."""
    return _power_curve("Seren", "GPU node server power (W)")[0]


@dataclass(frozen=True)
class PowerModel:
    """The power model of the module docstring. ``gpu_busy_w=None``: derived from the published CDF."""

    gpu_busy_w: float | None = None
    gpu_idle_w: float = 60.0
    gpu_max_w: float = 400.0
    gpus_per_server: int = 8
    idle_share: float = 0.30
    gpu_share_of_server: float = 0.657
    pue: float = 1.25
    carbon_t_per_mwh: float = 0.478
    cluster: str = "Seren"

    def __post_init__(self):
        for f in ("gpu_idle_w", "gpu_max_w", "gpus_per_server", "pue", "carbon_t_per_mwh", "gpu_share_of_server",
                  "idle_share"):
            check_number(getattr(self, f), f"energy.{f}", lo=0.0)
        if not 0 < self.gpu_share_of_server <= 1:
            raise ConfigError(f"energy.gpu_share_of_server must be in (0, 1], got {self.gpu_share_of_server!r}")
        if not 0 <= self.idle_share < 1:
            raise ConfigError(f"energy.idle_share must be in [0, 1), got {self.idle_share!r}")
        if self.pue < 1:
            raise ConfigError(f"energy.pue must be >= 1, got {self.pue!r}")
        b = self.gpu_busy_w
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b)
                              or b <= 0):
            raise ConfigError(f"energy.gpu_busy_w must be a finite number > 0 or auto, got {b!r}")

    @classmethod
    def from_dict(cls, d: Mapping | None) -> "PowerModel":
        """From a config mapping (``energy:`` section); unknown keys are errors; ``gpu_busy_w: auto``."""
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        bad = sorted(set(map(str, d)) - known)
        if bad:
            raise ConfigError(f"energy has unknown key(s) {bad}; allowed: {sorted(known)}")
        if d.get("gpu_busy_w") == "auto":
            d["gpu_busy_w"] = None
        if "cluster" in d and d["cluster"] not in ("Seren", "Kalos"):
            raise ConfigError(f"energy.cluster must be Seren or Kalos (the published GPU-power curves), "
                              f"got {d['cluster']!r}")
        return cls(**d)

    @property
    def busy_w(self) -> float:
        """``P_busy`` (W): given, or ``(P̄ − idle_share · P_idle) / (1 − idle_share)`` from the CDF."""
        if self.gpu_busy_w is not None:
            return float(self.gpu_busy_w)
        p = published_mean_gpu_power_w(self.cluster)
        return (p - self.idle_share * self.gpu_idle_w) / (1.0 - self.idle_share)

    @property
    def rest_w(self) -> float:
        """``P_rest``: the non-GPU power of one server, ``n · P_max · (1 − s) / s`` (W)."""
        s = self.gpu_share_of_server
        return self.gpus_per_server * self.gpu_max_w * (1.0 - s) / s

    @property
    def kwh_per_gpu_hour(self) -> float:
        """``E_busy``: facility kWh of one busy GPU-hour (its GPU and its share of the server)."""
        return (self.busy_w + self.rest_w / self.gpus_per_server) * self.pue / 1000.0

    def energy_kwh(self, gpu_hours: float) -> float:
        """Facility energy (kWh) of ``gpu_hours`` busy GPU-hours."""
        return float(gpu_hours) * self.kwh_per_gpu_hour

    def carbon_t(self, kwh: float) -> float:
        """tCO₂e of ``kwh`` kWh."""
        return float(kwh) / 1000.0 * self.carbon_t_per_mwh

    def price(self, gpu_hours: float | None) -> dict:
        """``{"kwh", "tco2e"}`` of busy GPU-hours (``None`` stays ``None``)."""
        if gpu_hours is None or not math.isfinite(float(gpu_hours)):
            return {"kwh": None, "tco2e": None}
        kwh = self.energy_kwh(gpu_hours)
        return {"kwh": kwh, "tco2e": self.carbon_t(kwh)}

    @property
    def kwh_per_idle_gpu_hour(self) -> float:
        """``E_idle``: facility kWh of one allocated but idle GPU-hour."""
        return (self.gpu_idle_w + self.rest_w / self.gpus_per_server) * self.pue / 1000.0

    def price_loss(self, loss_gpu_h: Mapping | None) -> dict:
        """kWh and tCO₂e of a plan's GPU-time loss (``{"lost_work", "restart", "checkpoint"}`` GPU-h):
        lost work and checkpoint overhead ran on busy GPUs (``E_busy``); restart downtime held idle GPUs
        (``P_idle``). ``total`` is their sum; ``None`` entries (a run that does not finish) stay ``None``."""
        out, tot = {}, 0.0
        for cause, per_h in (("lost_work", self.kwh_per_gpu_hour), ("restart", self.kwh_per_idle_gpu_hour),
                             ("checkpoint", self.kwh_per_gpu_hour)):
            v = (loss_gpu_h or {}).get(cause)
            if v is None or tot is None:
                out[cause] = {"kwh": None, "tco2e": None}
                tot = None
                continue
            kwh = float(v) * per_h
            out[cause] = {"kwh": kwh, "tco2e": self.carbon_t(kwh)}
            tot += kwh
        out["total"] = {"kwh": tot, "tco2e": None if tot is None else self.carbon_t(tot)}
        return out

    def cluster_energy_mwh(self, gpus: int, hours: float, busy_share: float) -> float:
        """Facility energy (MWh) of ``gpus`` GPUs over ``hours`` with a share ``busy_share`` busy."""
        if not 0 <= busy_share <= 1:
            raise ValueError(f"busy_share must be in [0, 1], got {busy_share!r}")
        w = busy_share * self.busy_w + (1 - busy_share) * self.gpu_idle_w + self.rest_w / self.gpus_per_server
        return gpus * hours * w * self.pue / 1e6

    def server_check(self) -> dict:
        """``P_rest`` of the model against the published CDFs' ``mean server − n · mean GPU`` (W)."""
        pub = published_mean_server_power_w() - self.gpus_per_server * published_mean_gpu_power_w("Seren")
        return {"model_rest_w": self.rest_w, "published_rest_w": pub, "ratio": self.rest_w / pub}

    def to_dict(self) -> dict:
        d = asdict(self)
        d["busy_w"] = self.busy_w
        d["rest_w"] = self.rest_w
        d["kwh_per_gpu_hour"] = self.kwh_per_gpu_hour
        d["kwh_per_idle_gpu_hour"] = self.kwh_per_idle_gpu_hour
        return d


def busy_share_in_window(start_s, end_s, gpus, *, t0: float, t1: float, capacity_gpus: int) -> float:
    """Share of ``capacity_gpus × (t1 − t0)`` GPU-seconds that jobs (``start_s``, ``end_s``, ``gpus``
    arrays, UTC seconds) were running inside ``[t0, t1)``."""
    s = np.asarray(start_s, float)
    e = np.asarray(end_s, float)
    g = np.asarray(gpus, float)
    ok = np.isfinite(s) & np.isfinite(e) & (g > 0)
    overlap = np.clip(np.minimum(e[ok], t1) - np.maximum(s[ok], t0), 0.0, None)
    return float((overlap * g[ok]).sum() / (capacity_gpus * (t1 - t0)))


def seren_may_check(jobs, model: PowerModel | None = None, *, capacity_gpus: int = 2288,
                    scale: float = 1.0) -> dict:
    """The model's energy for May 2023 (UTC+8 calendar month) of a Seren job table (``start_s``,
    ``run_s`` or ``end_s``, ``gpu_num``) against the published 673 MWh (321.7 tCO₂e). ``scale``: the
    table's share of the real job volume (its busy share is divided by it, capped at 1)."""
    import pandas as pd

    model = model or PowerModel()
    t0 = pd.Timestamp("2023-05-01", tz="Asia/Shanghai").timestamp()
    t1 = pd.Timestamp("2023-06-01", tz="Asia/Shanghai").timestamp()
    start = jobs["start_s"].to_numpy(float)
    end = jobs["end_s"].to_numpy(float) if "end_s" in jobs else start + jobs["run_s"].to_numpy(float)
    u = min(1.0, busy_share_in_window(start, end, jobs["gpu_num"].to_numpy(float), t0=t0, t1=t1,
                                      capacity_gpus=capacity_gpus) / scale)
    mwh = model.cluster_energy_mwh(capacity_gpus, (t1 - t0) / 3600.0, u)
    return {"busy_share": u, "mwh": mwh, "tco2e": mwh * model.carbon_t_per_mwh,
            "published_mwh": SEREN_MAY_2023_MWH, "published_tco2e": SEREN_MAY_2023_TCO2E,
            "relative_error": mwh / SEREN_MAY_2023_MWH - 1.0}
