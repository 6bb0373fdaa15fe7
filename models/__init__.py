"""Statistical models of AcmeTrace jobs (installed as ``acmemodel.models``): the one registry.

:data:`MODELS` maps each bundle name to its model class — every model class of the package is here
and in ``__all__`` — and :data:`DEFAULT_MODELS` names the models ``acmemodel fit`` fits into a bundle
(:mod:`acmemodel.pipeline`), in that order. Loading a bundle, the calibration and the synthesiser
take their model lists from here.
"""
from acmemodel.models.base import BaseModel, MODEL_REGISTRY, register  # noqa: F401
from acmemodel.models.bundle import Bundle  # noqa: F401
from acmemodel.models.runtime import RuntimeModel  # noqa: F401,E402
from acmemodel.models.queue import QueueModel, StartupLatencyModel  # noqa: F401,E402
from acmemodel.models.failure import FailureModel  # noqa: F401,E402
from acmemodel.models.restart import RestartModel  # noqa: F401,E402
from acmemodel.models.predictor import RuntimePredictor  # noqa: F401,E402
from acmemodel.models.gpu_counts import GpuCountModel  # noqa: F401,E402
from acmemodel.models.arrival import ArrivalModel  # noqa: F401,E402
from acmemodel.models.forecast import DemandForecaster  # noqa: F401,E402
from acmemodel.models.fleet_reliability import FleetReliability  # noqa: F401,E402

#: bundle name → model class (every model a bundle may hold)
MODELS: dict[str, type] = {
    "runtime": RuntimeModel,
    "queue": QueueModel,
    "failure": FailureModel,
    "restart": RestartModel,
    "arrival": ArrivalModel,
    "gpu_counts": GpuCountModel,
    "predictor": RuntimePredictor,
    "forecast": DemandForecaster,
}

#: the models of a fitted bundle (``acmemodel fit``), in fitting order; the forecaster is fitted on
#: demand by ``acmemodel forecast``
DEFAULT_MODELS: tuple[str, ...] = ("runtime", "queue", "failure", "restart", "arrival", "gpu_counts", "predictor")

#: model classes that live inside another model (QueueModel's start-up latency part), not in a bundle slot
SUBMODELS: tuple[type, ...] = (StartupLatencyModel,)

__all__ = ["BaseModel", "Bundle", "MODELS", "DEFAULT_MODELS", "SUBMODELS", "MODEL_REGISTRY", "register", *(
    c.__name__ for c in (*MODELS.values(), *SUBMODELS)), "FleetReliability"]
