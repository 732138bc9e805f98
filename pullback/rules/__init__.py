"""Derivative rules, one module per area of NumPy; importing this package registers them."""

from . import elementwise, indexing, linalg, nondiff, reductions, shapes  # noqa: F401
