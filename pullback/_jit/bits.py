"""What ``pb.jit`` calls the same value: arrays by their bits (a NaN matches a NaN, -0.0
is not 0.0), numbers by a key that tells those apart as ``==`` does not; and the snapshot
of an array's bits, the test of whether it still holds them, and writing them back."""

from __future__ import annotations

import math

import numpy as np


def _same_bits(a, b):
    """Whether ``a`` and ``b`` are the same values: NaN matches NaN, -0.0 is not 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (np.ndarray, np.generic)):
        if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(
                a, b, equal_nan=a.dtype.kind in "fc"):
            return False
        if a.dtype.kind == "c":
            return _same_bits(np.real(a), np.real(b)) and _same_bits(np.imag(a), np.imag(b))
        return a.dtype.kind != "f" or bool(np.all(np.signbit(a) == np.signbit(b)))
    return bool(a == b)


def _number_key(x):
    """``x``, or for a float zero or NaN (and a complex number with such a part) what tells
    0.0 from -0.0 and matches every NaN of a sign, as ``==`` does neither: the cache key of
    a static number, and what a guard compares."""
    if isinstance(x, (complex, np.complexfloating)):
        return (_number_key(x.real), _number_key(x.imag))
    if isinstance(x, (float, np.floating)) and not (x and x == x):
        return ("nan" if x != x else 0.0, math.copysign(1.0, x))
    return x


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _snapshot(x):
    """The bits of array ``x``: its bytes, or past 128 KiB (where an elementwise comparison
    is the faster one) a copy viewed as unsigned integers."""
    bits = _BITS.get(x.dtype.itemsize)
    if bits is None or x.nbytes < 1 << 17 or x.dtype.fields is not None:
        return x.tobytes()
    return x.view(bits).copy()


def _bits_changed(x, data):
    """Whether array ``x`` no longer holds the bits ``_snapshot`` took."""
    if type(data) is bytes:
        return x.tobytes() != data
    return not (x.view(data.dtype) == data).all()  # (its bits, as unsigned integers)


def _put_back(x, data):
    """Write the bits ``_snapshot`` took back into array ``x``."""
    saved = np.frombuffer(data, x.dtype) if type(data) is bytes else data.view(x.dtype)
    np.copyto(x, saved.reshape(x.shape))
