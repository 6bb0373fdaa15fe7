"""C99 kernels of the planner (compiled by the package build). See ``acmemodel._solver.reference.checkpoint``."""
