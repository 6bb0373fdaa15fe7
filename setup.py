"""Build the C99 solver extension (``acmemodel._solver._core``).

``acmemodel/_solver/*.c`` is compiled into ``acmemodel._solver._core`` and
``acmemodel/_solver/cluster/*.c`` into ``acmemodel._solver._cluster``; in each, ``module.c`` holds the
Python method table and each other file one kernel (``checkpoint.c`` with its renewal sums in
``checkpoint_sums.c`` and ``renewal_piecewise.c``, its Newton ascent in ``checkpoint_ascent.c``, its
piecewise ripple search and bounds in ``checkpoint_ripple.c`` and ``checkpoint_bounds.c``, sharing
``renewal.h``). The NumPy twin of every kernel is in ``acmemodel/_solver/reference/``.
"""
import glob

import numpy
from setuptools import Extension, setup



def _ext(name: str, folder: str) -> Extension:
    return Extension(
        name,
        sources=sorted(glob.glob(f"{folder}/*.c")),
        include_dirs=[numpy.get_include(), folder],
        extra_compile_args=["-std=c99", "-O3", "-Wall", "-pthread"],
        extra_link_args=["-lm", "-pthread"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


setup(
    ext_modules=[
        # checkpoint-interval optimiser and Monte Carlo run simulator
        _ext("acmemodel._solver._core", "acmemodel/_solver"),
        # discrete-event cluster simulator and quota search
        _ext("acmemodel._solver._cluster", "acmemodel/_solver/cluster"),
    ]
)
