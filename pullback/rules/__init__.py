"""Derivative rules, one module per area of NumPy; importing this package registers them.
The SciPy modules (``scipy_*.py``) are imported when the program imports the SciPy module
they cover (``_interception.SCIPY_RULES``)."""

from . import (  # noqa: F401
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
