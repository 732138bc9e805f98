"""SciPy's array-API helpers on tracked values: ``array_api_extra``'s ``apply_where`` and
``at(x, idx).set(y)`` (and ``.add``, ``.multiply`` ...), the vendored ``array_api_compat``'s
``clip`` and ``linalg.solve``, and its ``array_namespace``. They sit under SciPy's
statistics (``scipy.stats.tmean``, ``circvar``, ``yeojohnson_llf`` ...) and the private
methods of its distributions.

Each is a composite, the same computation with functions that have rules:

- ``apply_where(cond, args, f1, f2, fill_value=...)`` evaluates ``f1`` on the entries where
  ``cond`` holds only (and ``f2`` on the others), as SciPy does: the arguments gathered by
  a boolean index, the results gathered back into place and joined by ``np.where``, so no
  function sees an entry it was not meant for, and no NaN of the branch not taken reaches
  a gradient.
- ``at(x, idx).set(y)`` on a tracked ``y`` (or ``x``) is the functional update
  ``index_update(x, idx, y)`` that ``x[idx] = y`` records on a tracked ``x``; ``add`` and
  the other operators update with ``x[idx] op y``. The result is a new array, as the
  array API's ``at`` promises (``copy=False``, an update in place of a plain ``x``, is
  refused: a plain array cannot hold a tracked value).
- ``clip(x, min, max)`` keeps ``x``'s dtype and takes a NaN bound, as the array API's does.
- ``array_namespace`` of tracked and plain arguments together is that of their values:
  ``array_api_compat.numpy`` for both, where a tracked value alone would say ``numpy``
  and the two would be "multiple namespaces".
"""

import operator

import numpy as np
import scipy._lib._util as scipy_util
import scipy._lib.array_api_compat as compat
import scipy._lib.array_api_compat.common._helpers as compat_helpers
import scipy._lib.array_api_compat.numpy as compat_numpy
import scipy._lib.array_api_compat.numpy.linalg as compat_linalg
import scipy._lib.array_api_extra as xpx
import scipy._lib.array_api_extra._lib._at as xpx_at

from ..._engine.registry import display_names
from ..._engine.writes import index_update
from ...extend import Tracked, composite, on_backend, plain, shape_of
from .._util import intercept


def _prim(owner, name, impl, label):
    prim = intercept(owner, name)
    display_names[prim] = label
    composite(prim, impl)
    return prim


def _gathered(cond, values):
    """``values`` (one per true entry of ``cond``, in order) spread to ``cond``'s shape; the
    entries where ``cond`` is false hold some of them, for ``np.where`` to replace."""
    where = np.maximum(np.cumsum(np.ravel(cond)) - 1, 0)
    return np.reshape(values[where], cond.shape)


def apply_where_impl(cond, args, f1, f2=None, /, *, fill_value=None, xp=None):
    """``xpx.apply_where`` on tracked values. Each argument is broadcast alone (a plain one
    stays plain: ``np.broadcast_arrays`` would make it a tracked constant)."""
    if (f2 is None) == (fill_value is None):
        raise TypeError("Exactly one of `fill_value` or `f2` must be given.")
    args = list(args) if isinstance(args, tuple) else [args]
    cond = np.asarray(plain(cond), dtype=bool)
    shape = np.broadcast_shapes(cond.shape, shape_of(fill_value) if fill_value is not None
                                else (), *[shape_of(a) for a in args])
    cond = np.broadcast_to(cond, shape)
    args = [np.broadcast_to(a, shape) for a in args]
    out = fill_value
    if f2 is not None:
        out = np.zeros(shape)
        if not np.all(cond):
            out = _gathered(~cond, f2(*(a[~cond] for a in args)))
    if not np.any(cond):
        return np.where(cond, 0.0, out)
    return np.where(cond, _gathered(cond, f1(*(a[cond] for a in args))), out)


APPLY_WHERE = _prim(xpx, "apply_where", apply_where_impl,
                    "scipy._lib.array_api_extra.apply_where")

def lazyselect_impl(condlist, choicelist, arrays, default=0):
    """SciPy's ``_lazyselect``: each choice evaluated on the entries of its condition only,
    a later condition's result replacing an earlier one's, ``default`` elsewhere."""
    shape = np.broadcast_shapes(*[shape_of(a) for a in arrays])
    arrays = [np.broadcast_to(a, shape) for a in arrays]  # (a plain one stays plain)
    out = np.full(shape, default, dtype=np.result_type(
        *[plain(a).dtype for a in arrays], np.asarray(default).dtype, np.float16))
    for func, cond in zip(choicelist, condlist):
        if np.all(cond is False):
            continue
        cond = np.broadcast_to(np.asarray(plain(cond), dtype=bool), shape_of(arrays[0]))
        if np.any(cond):
            out = np.where(cond, _gathered(cond, func(*(a[cond] for a in arrays))), out)
    return out


def intercept_lazyselect(owner):
    """``_lazyselect`` where ``owner`` (a module that imported it by name) calls it."""
    return _prim(owner, "_lazyselect", lazyselect_impl, "scipy._lib._util._lazyselect")


LAZYSELECT = intercept_lazyselect(scipy_util)

_UPDATES = {"set": None, "add": operator.add, "subtract": operator.sub,
            "multiply": operator.mul, "divide": operator.truediv, "power": operator.pow,
            "min": np.minimum, "max": np.maximum}


def at_op_impl(self, at_op, in_place_op, out_of_place_op, y, /, copy=None, xp=None):
    """``xpx.at(x, idx).<op>(y)`` on a tracked ``y``: a new array, ``x`` updated at
    ``idx``."""
    x, idx = self._x, self._idx
    if copy is False and not isinstance(x, Tracked):
        raise TypeError(
            f"pullback: array_api_extra's at(x, idx).{at_op.value}(y, copy=False) writes a "
            f"tracked y into the plain array x (shape {np.shape(x)}) in place, which would "
            "drop its gradient: make x tracked too, or let at() return a new array (copy="
            "None)")
    op = _UPDATES[at_op.value]
    if not isinstance(x, Tracked):  # (the update is a new array: x stays as it was)
        x = np.array(x, copy=True)
    value = y if op is None else op(x[idx], y)
    return index_update(x, idx, value)


AT_OP = _prim(xpx_at.at, "_op", at_op_impl, "scipy._lib.array_api_extra.at")


def clip_impl(x, /, min=None, max=None, *, out=None):
    """The array API's ``clip``: ``x``'s dtype; a NaN bound gives NaN."""
    if out is not None:
        raise TypeError("pullback: array_api_compat's clip(..., out=) on tracked values: "
                        "use the returned array instead of out=")
    result_shape = np.broadcast_shapes(shape_of(x), shape_of(min) if min is not None else (),
                                       shape_of(max) if max is not None else ())
    dtype = plain(x).dtype
    result = np.broadcast_to(x, result_shape)
    for bound, beyond in ((min, np.less), (max, np.greater)):
        if bound is not None:
            b = np.broadcast_to(on_backend(np.asarray(bound, dtype=dtype), x) if not isinstance(
                bound, Tracked) else bound, result_shape)
            moved = beyond(plain(result), plain(b)) | np.isnan(plain(b))
            result = np.where(moved, b, result)
    return result[()]


CLIP = _prim(compat_numpy, "clip", clip_impl, "scipy._lib.array_api_compat.numpy.clip")


def solve_impl(x1, x2, /):
    """The array API's ``linalg.solve``: ``x2`` a vector only when it is 1-d."""
    if len(shape_of(x2)) == 1:
        return np.linalg.solve(x1, x2[..., None])[..., 0]
    return np.linalg.solve(x1, x2)


SOLVE = _prim(compat_linalg, "solve", solve_impl, "scipy._lib.array_api_compat.linalg.solve")


def _namespace_impl(original):
    def array_namespace_impl(*xs, **kwargs):
        return original(*[plain(x) for x in xs], **kwargs)

    return array_namespace_impl


NAMESPACES = [
    _prim(owner, name, _namespace_impl(getattr(owner, name)),
          f"scipy._lib.array_api_compat.{name}")
    for owner in (compat, compat_helpers) for name in ("array_namespace", "get_namespace")
]
