"""Derivative rules, one module per area of NumPy; importing this package registers them.
The SciPy modules load only when SciPy is installed."""

import importlib.util

from . import (  # noqa: F401
    elementwise,
    fft,
    indexing,
    linalg,
    nondiff,
    products,
    reductions,
    scans,
    shapes,
    sorting,
)

if importlib.util.find_spec("scipy") is not None:
    from . import scipy_linalg, scipy_signal, scipy_special, scipy_stats  # noqa: F401
