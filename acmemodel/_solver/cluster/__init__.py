"""C99 discrete-event cluster simulator and quota search kernels."""
