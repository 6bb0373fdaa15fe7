"""Writers for cluster-simulator formats (see :func:`write`)."""
