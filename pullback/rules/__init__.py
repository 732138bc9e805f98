"""Derivative rules: ``numpy/``, one module per area of NumPy, registered when this package
is imported; ``scipy/``, one module per SciPy module, each imported when the program imports
the SciPy module it covers (``_engine/interception.py``'s ``SCIPY_RULES``)."""

from .numpy import (  # noqa: F401
    array_api,
    assembly,
    elementwise,
    fft,
    functional,
    in_place,
    indexing,
    linalg,
    linalg_decomp,
    linalg_norm,
    nondiff,
    padding,
    polynomials,
    products,
    reductions,
    scans,
    scimath,
    shapes,
    sorting,
    statistics,
    strided,
    windows,
    writes,
)
