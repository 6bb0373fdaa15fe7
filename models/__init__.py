"""Statistical models of AcmeTrace jobs (installed as ``acmemodel.models``)."""
from acmemodel.models.base import BaseModel, MODEL_REGISTRY, register  # noqa: F401
from acmemodel.models.bundle import Bundle  # noqa: F401
from acmemodel.models.runtime import RuntimeModel  # noqa: F401,E402
from acmemodel.models.queue import QueueModel  # noqa: F401,E402
from acmemodel.models.predictor import RuntimePredictor  # noqa: F401,E402
from acmemodel.models.gpu_counts import GpuCountModel  # noqa: F401,E402
from acmemodel.models.arrival import ArrivalModel  # noqa: F401,E402
from acmemodel.models.forecast import DemandForecaster  # noqa: F401,E402
