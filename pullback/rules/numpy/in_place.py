"""NumPy's functions that write into their first argument (``np.copyto``, ``np.put``,
``np.putmask``, ``np.place``, ``np.put_along_axis``, ``np.fill_diagonal``, ``np.add.at``
and ``np.subtract.at``), on a tracked target: each is the write ``a[index] = v`` it stands
for, recorded as writes.py records every write, so that every name for the array (and
every view of it) sees the new values. Into a plain array with a tracked value they are
refused, as a plain array's ``a[i] = x`` is.
"""

import numpy as np

from ..._engine.methods import memory
from ..._engine.refusals import called_from
from ...extend import Tracked, composite, is_complex, name_of, on_backend, plain, ufunc_method
from .indexing import index_add


def _target(func, a):
    if isinstance(a, Tracked):
        return
    name = func if isinstance(func, str) else name_of(func)
    where = called_from()  # a library's code (scipy.stats' np.place into its output)
    fix = (f"The function of {where} has no derivative rule: give it one (pb.primitive and "
           "pb.rrule), or pass it plain values (pb.stop_gradient(x))" if where else
           "Make the array tracked (a = np.zeros_like(x)), or build the result out of "
           "place (np.where(mask, v, a))")
    by = f" (called by {where})" if where else ""
    raise TypeError(f"pullback: {name}{by} writes a tracked value into a plain array, which "
                    f"would drop its gradient. {fix}.")


def _indices(func, a, ind, mode):
    """``ind`` (plain) as flat indices into ``a``, by ``mode`` as np.put reads it."""
    if isinstance(ind, Tracked):
        raise TypeError(f"pullback: the indices of {name_of(func)} must be plain, not tracked")
    ind, size = np.ravel(np.asarray(ind)), int(np.prod(np.shape(a)))
    if mode == "wrap":
        return ind % size if size else ind
    if mode == "clip":
        return np.clip(ind, 0, size - 1)
    return ind


def _cycled(values, n):
    """The first ``n`` of the flat ``values`` repeated as needed, as NumPy's writing
    functions take them."""
    return values[np.arange(n) % values.size]


def _mask_of(name, a, mask):
    """``mask`` as booleans of ``a``'s shape; NumPy's error where it has another size."""
    mask = np.asarray(plain(mask), dtype=bool)
    if mask.size != np.size(a):
        raise ValueError(f"{name}: mask and data must be the same size")
    return np.reshape(mask, np.shape(a))


def copyto(dst, src, casting="same_kind", where=True):
    _target(np.copyto, dst)
    mask = where if where is True else on_backend(plain(where), dst)
    # NumPy's own checks of the cast, the shapes and the mask, on a scratch array
    np.copyto(np.empty_like(memory(dst)), plain(src), casting=casting, where=mask)
    dst[...] = src if mask is True else np.where(mask, src, dst)


def put(a, ind, v, mode="raise"):
    _target(np.put, a)
    ind = _indices(np.put, a, ind, mode)
    v = np.ravel(v)
    if ind.size and v.size:
        a.flat[ind] = _cycled(v, ind.size)


def _no_complex_into_real(func, a, values):
    """NumPy's refusal of complex values written into a real array by ``func``."""
    if is_complex(values) and not is_complex(a):
        raise TypeError(
            f"pullback: {name_of(func)} cannot write complex values into the real array "
            f"(NumPy's error: it casts them under the rule 'safe'); write np.real(values), "
            "or make the array complex first (a = a.astype(complex))"
        )


def putmask(a, mask, values):
    _target(np.putmask, a)
    _no_complex_into_real(np.putmask, a, values)
    mask, values = _mask_of("putmask", a, mask), np.ravel(values)
    if values.size:  # over a's flat positions
        a[mask] = np.reshape(_cycled(values, mask.size), np.shape(a))[mask]


def place(arr, mask, vals):
    _target(np.place, arr)
    _no_complex_into_real(np.place, arr, vals)
    mask, vals = _mask_of("place", arr, mask), np.ravel(vals)
    n = int(np.count_nonzero(mask))
    if n and not vals.size:
        raise ValueError("Cannot insert from an empty array!")
    if n:  # in order, at the places the mask holds
        arr[mask] = _cycled(vals, n)


def _numpys(func):
    """NumPy's own implementation of ``func`` (Python code made of writes ``a[...] = v``
    and ``a.flat[...] = v``), called on the tracked target."""
    implementation = getattr(func, "_pb_original", func)._implementation  # (construct.py)

    def write_into_tracked(a, *args, **kwargs):
        _target(func, a)
        return implementation(a, *args, **kwargs)

    write_into_tracked.__name__ = f"{func.__name__}_into_tracked"
    return write_into_tracked


composite(np.copyto, copyto)
composite(np.put, put)
composite(np.putmask, putmask)
composite(np.place, place)
composite(np.put_along_axis, _numpys(np.put_along_axis))
composite(np.fill_diagonal, _numpys(np.fill_diagonal))


def _accumulate_at(ufunc):
    """``ufunc.at(a, indices, b)`` for np.add and np.subtract: ``a`` plus (or minus) ``b``
    added at ``indices``, repeated indices adding up, written into ``a``."""
    def at(a, indices, b):
        _target(f"np.{ufunc.__name__}.at", a)
        a[...] = ufunc(a, index_add(np.broadcast_to(b, np.shape(plain(a)[indices])), indices,
                                    np.shape(a)))

    return at


ufunc_method(np.add, "at")(_accumulate_at(np.add))
ufunc_method(np.subtract, "at")(_accumulate_at(np.subtract))
