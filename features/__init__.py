"""Conditioning keys and covariates derived from a trace (installed as ``acmemodel.features``)."""
from acmemodel.features.keys import (  # noqa: F401
    CELL_KEYS, DEFAULT_BACKOFF, DEFAULT_GPU_EDGES, Cell, backoff_chain, bucket_bounds, bucket_labels,
    gpu_bucket, normalize_key,
)
