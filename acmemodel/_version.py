"""The package version, in a module of its own so that any layer can read it without importing the
top-level package (whose lazy attributes reach the trace, datasets and models layers)."""
__version__ = "0.1.0"
