"""``np.lib.stride_tricks.as_strided`` of a tracked value, which NumPy's dispatch does not see
(scipy.linalg's ``toeplitz``, ``hankel`` and ``circulant`` are built on it): the view of
its base's memory with the strides given, recorded as writes.py's ``reread`` (each element
of the base, read any number of times, gets the sum of its cotangents). A write into it
reaches the base, as a write into NumPy's view does (``writeable=False`` makes it
read-only, as NumPy's).
"""

import numpy as np

from ..._engine.methods import memory
from ..._engine.writes import base_and_geometry, reread
from ...extend import Tracked
from .._util import replace_when_tracked


def _refuse(shape, strides, why):
    raise ValueError(f"pullback: as_strided(shape={shape}, strides={strides}) of a tracked "
                     f"array {why}; only views within its memory, in whole elements, have "
                     "a derivative")


def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
    xv = memory(x)
    if not isinstance(xv, np.ndarray):
        raise TypeError("pullback: as_strided reads NumPy memory; a tracked "
                        f"{type(xv).__name__} has none (use its library's own views)")
    shape = xv.shape if shape is None else tuple(shape)
    strides = xv.strides if strides is None else tuple(strides)
    view = base_and_geometry(x)  # (toeplitz reads before the start of its view vals[n - 1:])
    if view is None:
        if not (xv.flags.c_contiguous or xv.flags.f_contiguous):
            _refuse(shape, strides, "that is a strided view of a plain array")
        base, offset, order = x, 0, "C" if xv.flags.c_contiguous else "F"
    else:
        base, (offset, _, _, order) = view
    size, itemsize = memory(base).size, xv.itemsize
    if offset % itemsize or any(s % itemsize for s in strides):
        _refuse(shape, strides, "reads between its elements")
    reach = [offset // itemsize + sum(s // itemsize * (n - 1) for n, s in zip(shape, strides)
                                      if (s < 0) == negative) for negative in (True, False)]
    if 0 not in shape and (reach[0] < 0 or reach[1] >= size):
        _refuse(shape, strides, f"reads outside the {size} elements of its memory")
    out = reread(x, base, (offset, shape, strides, order))
    if not writeable:
        memory(out).setflags(write=False)
    return out


# NumPy's own function object (its code swapped): wherever it was imported, as scipy.linalg's
# toeplitz, hankel and circulant do
replace_when_tracked(np.lib.stride_tricks, "as_strided", as_strided,
                     lambda x, *args, **kwargs: isinstance(x, Tracked))
