"""Arrays of other libraries (CuPy, Dask, ...): any array with ``shape``, ``dtype`` and
NumPy's dispatch protocols (``__array_function__``, ``__array_ufunc__``) is differentiated
as NumPy's own, since every rule is NumPy calls that those protocols send to the array's
library. What the engine and the rules build themselves (seeds, zeros, constants) goes
through the functions here, which leave an ndarray's case unchanged and cost it nothing.

A constant is built in NumPy and then moved (``np.asarray(c, like=x)``), never built by
the other library from NumPy's arguments: NumPy passes ``order=``/``device=`` to ``like=``
constructors that Dask's ``eye`` and CuPy's ``ones`` do not take.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import Tracked, plain

# NumPy's scalar types and Python's numbers: a cotangent of one of them is no array
SCALAR_TYPES = frozenset(t for t in np.sctypeDict.values()) | {float, int, complex, bool}


def is_foreign(v: Any) -> bool:
    """Whether the plain value ``v`` is an array of another library: not a NumPy array or
    scalar or a Python number, with ``shape``, ``dtype`` and ``__array_function__``.

    >>> pb.extend.is_foreign(np.ones(2)), pb.extend.is_foreign(1.0)
    (False, False)
    """
    cls = v.__class__
    if cls is np.ndarray or cls is float or cls is int or cls is complex:
        return False
    # (a tracked value here is a pb.jit trace's, which plain keeps)
    return (hasattr(cls, "__array_function__") and hasattr(v, "dtype") and hasattr(v, "shape")
            and not isinstance(v, (np.ndarray, np.generic, Tracked)))


def on_backend(const: Any, like: Any) -> Any:
    """``const``, built in NumPy, on the array library of ``like`` (a value that may be
    tracked): unchanged when ``like`` is a NumPy array or a scalar, else moved there with
    ``np.asarray(const, like=...)`` (CuPy: a host-to-device copy; Dask: a one-chunk array).
    Rules build their constants (``np.eye``, ``np.arange``, masks) this way so that they
    mix with a CuPy value, which refuses ``numpy.ndarray`` operands.

    >>> x = np.ones(3)
    >>> pb.extend.on_backend(np.arange(3.0), x) is not None
    True
    """
    v = plain(like)
    if v.__class__ is np.ndarray or not is_foreign(v):
        return const
    return np.asarray(const, like=v)


def ones_like_value(v: Any, shape: tuple, dtype: Any) -> Any:
    """Ones of ``shape`` and ``dtype`` on the array library of the plain value ``v`` (a
    seed)."""
    if v.__class__ is not np.ndarray and is_foreign(v):
        return np.ones_like(v, dtype=dtype, shape=shape)
    return np.ones(shape, dtype=dtype)


def zeros_like_value(v: Any, shape: tuple, dtype: Any) -> Any:
    """Zeros of ``shape`` and ``dtype`` on the array library of the plain value ``v`` (the
    cotangent of what nothing depended on)."""
    if v.__class__ is not np.ndarray and is_foreign(v):
        return np.zeros_like(v, dtype=dtype, shape=shape)
    return np.zeros(shape, dtype=dtype)


def zeros_on(like: Any, shape: tuple, dtype: Any = float) -> Any:
    """Zeros of ``shape`` and ``dtype`` on the array library of ``like`` (a value that may
    be tracked): ``np.zeros`` for a NumPy value, ``np.zeros_like`` on another library's,
    so that a rule's buffer is built where its values live.

    >>> pb.extend.zeros_on(np.ones(3), (2,), np.float32)
    array([0., 0.], dtype=float32)
    """
    return zeros_like_value(plain(like), shape, dtype)
