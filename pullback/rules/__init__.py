"""Derivative rules, one module per area of NumPy; importing this package registers them.
The SciPy modules load only when SciPy is installed."""

import importlib.util

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

if importlib.util.find_spec("scipy") is not None:
    from . import (  # noqa: F401
        scipy_array_api,
        scipy_fft,
        scipy_integrate,
        scipy_linalg,
        scipy_signal,
        scipy_spatial,
        scipy_special,
        scipy_special_distributions,
        scipy_special_integrals,
        scipy_special_more,
        scipy_stats,
        scipy_stats_generic,
        scipy_stats_quantiles,
    )
