"""What a transform is given and what it returns, checked: the leaves it boxes
(``make_leaf``), ``argnums``, the function's name for messages, the outputs it requires
and the seed of a scalar loss, each refused with a message naming the argument, its path
in the tree and the fix.
"""
import functools
import math
import numbers
import weakref
from typing import Any

import numpy as np

from .. import tree
from ..tree import kind_of, plural
from .backend import is_foreign, ones_like_value
from .core import Tracked, plain
from .guard import release
from .lazy import is_lazy
from .methods import shape_of
from .registry import (
    LossError,
)

# the run (vjp.Linearized) of each level going on, for a loss refused while it runs
runs: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()


def make_leaf(x, level, what):
    """Box ``x`` as an input of the computation at ``level``; only floating-point and
    complex values can be differentiated."""
    if x.__class__ is np.ndarray:  # the common case first
        kind, value = x.dtype.kind, x
    elif isinstance(x, Tracked):
        kind, value = x.dtype.kind, x
    elif isinstance(x, (bool, np.bool_)) or isinstance(x, numbers.Integral):
        kind, value = "i", x
    elif isinstance(x, float):
        kind, value = "f", np.float64(x)
    elif isinstance(x, complex):
        kind, value = "c", np.complex128(x)
    elif isinstance(x, (np.ma.MaskedArray, np.matrix)):
        if isinstance(x, np.matrix):
            raise TypeError(
                f"pullback: {what} is an np.matrix, whose * is a matrix product and whose "
                "reductions keep two axes; pullback differentiates plain arrays. Pass "
                "np.asarray(x) (and write @ for the matrix product)."
            )
        raise TypeError(
            f"pullback: {what} is a masked array; pullback differentiates plain arrays and "
            "would ignore the mask. Pass x.filled(0.0) and multiply by the mask inside "
            "the function (np.where(mask, 0.0, x)) so masked entries get no gradient."
        )
    elif isinstance(x, (np.ndarray, np.generic)) or is_foreign(x):
        kind, value = x.dtype.kind, x
    else:
        raise TypeError(
            f"pullback: {what} is a {type(x).__name__}; differentiate with respect to "
            "floating-point arrays or scalars (or tuples, lists and dicts of them)"
        )
    if kind not in "fc":
        dtype = getattr(plain(value), "dtype", type(value).__name__)
        raise TypeError(
            f"pullback: {what} has dtype {dtype}; gradients are defined for floating-point "
            "and complex inputs only. Convert it first (x.astype(float)), or leave it out "
            "of argnums (pb.vjp and pb.jvp differentiate every argument: close over it)."
        )
    return Tracked(value, level)


def at_leaf(error, tree, flat, level, what):
    """``error`` of the leaf of ``tree`` that make_leaf refused, naming where it lies."""
    if len(flat) == 1:
        return error
    k = next(k for k, x in enumerate(flat) if not _boxable(x, level, what))
    path = path_of(tree, k)
    return TypeError(str(error).replace(what, f"{what}, at {path},", 1))


def _boxable(x, level, what):
    try:
        make_leaf(x, level, what)
    except TypeError:
        return False
    return True


def path_of(tree, k):
    """The index path (``["W"][1]``) of leaf ``k`` of ``tree``, in tree_flatten's order."""
    counter = [k]

    def walk(node, path):
        if type(node) in (list, tuple) or isinstance(node, tuple) and hasattr(node, "_fields"):
            items = enumerate(node)
        elif isinstance(node, dict):
            items = ((key, node[key]) for key in node)
        else:
            counter[0] -= 1
            return path if counter[0] < 0 else None
        for key, child in items:
            found = walk(child, f"{path}[{key!r}]")
            if found is not None:
                return found
        return None

    return walk(tree, "") or f"leaf {k}"


def normalize_argnums(argnums, nargs, fname):
    """``(single, nums)``: whether ``argnums`` was one int (a Python or NumPy integer), and
    the argument positions."""
    if argnums.__class__ is int and -nargs <= argnums < nargs:  # the common case first
        return True, (argnums % nargs,)
    single = isinstance(argnums, numbers.Integral) and not isinstance(argnums, bool)
    if single:
        nums = (argnums,)
    elif isinstance(argnums, (tuple, list, range)):
        nums = tuple(argnums)
    else:
        nums = (argnums,)
    if not nums:  # as JAX's grad: a derivative with respect to nothing is a mistake
        raise TypeError(
            f"pullback: argnums={argnums!r} for {fname} selects no argument; pass an "
            "integer position (argnums=0) or a non-empty tuple of them (argnums=(0, 1))"
        )
    for i in nums:
        if (not isinstance(i, numbers.Integral) or isinstance(i, bool)
                or not -nargs <= i < nargs):
            raise TypeError(
                f"pullback: argnums={argnums!r} for {fname}, called with {nargs} positional "
                "argument(s): pass an integer position or a tuple of them, each in "
                f"range({-nargs}, {nargs}) (an argument given by keyword is not "
                "differentiated: give it by position)"
            )
    return single, tuple(int(i) % nargs for i in nums)


def function_named(f, transform):
    """``fname_of(f)``, after checking that ``f`` is a function (``pb.grad(3)``, or the
    arguments swapped, would fail only at the call, naming nothing)."""
    if not callable(f):
        raise TypeError(f"pullback: {transform} takes the function to differentiate first "
                        f"(got {type(f).__name__})")
    return fname_of(f)


def fname_of(f):
    """How messages name a user's function: its name, never its repr (a functools.partial's
    repr prints the arrays it holds, and this runs on every call of a transform)."""
    while isinstance(f, functools.partial):
        f = f.func
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or (
        type(f).__name__)


def described(x):
    """What a user's value is, in their words: "None", "a float64 scalar", "an array of
    shape (3,)", "a tuple of 2 items", "a str" (never a box's class)."""
    v = plain(x)
    if v is None:
        return "None"
    if isinstance(v, (tuple, list)):
        return f"a {type(v).__name__} of {plural(len(v))}"
    if isinstance(v, dict):
        return f"a dict with keys {sorted(map(repr, v))}"
    dtype = getattr(v, "dtype", None)
    if isinstance(v, (np.ndarray, np.generic, Tracked)) or is_foreign(v) or is_lazy(v):
        a = tree.article(str(dtype))  # (an object array, a <U1 array)
        return (f"{a} {dtype} scalar" if shape_of(v) == () else
                f"{a} {dtype} array of shape {shape_of(v)}")
    return kind_of(v)


def is_value(x):
    """Whether ``x`` (under its boxes) is a value a derivative can take or give: an array,
    a NumPy or Python number, another library's array, a lazy one (not None, a str, ...)."""
    v = plain(x)
    return (isinstance(v, (np.ndarray, np.generic, numbers.Number, Tracked))  # (pb.jit's)
            or is_foreign(v) or is_lazy(v))


def dtype_of(x):
    """The dtype of ``x`` under its boxes (a Python number's NumPy dtype)."""
    v = plain(x)
    dtype = getattr(v, "dtype", None)
    return np.result_type(v) if dtype is None else dtype


def require_outputs(outs, fname, integers=False, complex_fix=None, out_def=None):
    """A derivative's outputs must be arrays of floating-point (or complex) numbers: None
    (a missing return), a str, or an integer or boolean result would give zeros without a
    word. With ``integers``, integer outputs are let through (a jvp's integer output has a
    zero tangent, as JAX's). With ``complex_fix``, a complex output is refused too, the
    message saying that fix. ``out_def``: the outputs' structure, when they are a pytree's
    leaves."""
    for o in outs:
        if not is_value(o):
            v = plain(o)
            what = "None" if v is None else described(v)
            raise TypeError(f"pullback: {fname} returned " + (
                f"{what} inside its output" if out_def is not None else
                "None (is a return statement missing?)" if v is None else what)
                + "; its derivative needs array outputs (or a pytree of them)")
        dtype = dtype_of(o)
        if not integers and dtype.kind in "biu":
            raise TypeError(
                f"pullback: {fname} has an output of dtype {dtype}: a comparison, a "
                "count or np.argmax has no derivative. Return floating-point outputs")
        if complex_fix is not None and dtype.kind == "c":
            raise TypeError(f"pullback: {fname} has complex outputs; {complex_fix}")


def scalar_seed(y, fname, losscheck, transform="grad"):
    """``_seed``, after which a loss refused leaves the arrays of its run writeable: that
    run is never pulled back, and a user's ``except`` handler may change them (the
    traceback keeps the run alive)."""
    try:
        return _seed(y, fname, losscheck, transform)
    except BaseException:
        run = runs.get(y.level) if isinstance(y, Tracked) else None
        if run is not None and hasattr(run, "out"):  # (a run still going on keeps them)
            release(run.hold.arrays)
        raise


def _seed(y, fname, losscheck, transform):
    """The seed of a scalar loss ``y``: ones of its dtype and shape, after checking that it
    is a real scalar (or holds one element, as autograd and PyTorch accept) and, with
    ``losscheck``, finite. A lazy loss (a Dask array) is not computed here: its seed is
    ``ones_like`` it, and ``value_and_grad`` checks it when it is computed (lazy.py).
    ``transform`` is the derivative messages name ("grad"; a hessian's has other fixes).
    """
    v = plain(y)
    if v.__class__ is np.float64:  # the common case: a real scalar already
        if not losscheck or math.isfinite(v):
            return np.array(1.0)
    elif is_lazy(v):
        return _lazy_seed(v, fname)
    elif not is_value(v):  # (a CuPy loss is one; a lazy one was seeded above)
        what = "None (is a return statement missing?)" if v is None else described(v)
        if isinstance(getattr(v, "data", None), Tracked):  # an xarray.DataArray holding it
            raise TypeError(
                f"pullback: {transform} of {fname} needs a real scalar output, but {fname} "
                f"returned {what} ({type(v).__module__}.{type(v).__qualname__}), which is not "
                "an array pullback differentiates; return the array it holds (loss.data)")
        raise TypeError(
            f"pullback: {transform} of {fname} needs a real scalar output, but {fname} "
            f"returned {what}. " + ("Return the loss itself (not [loss] or (loss,)); for "
                                    "several outputs use has_aux=True, pb.vjp or pb.jacobian."
                                    if transform.endswith("grad") else _VECTOR_FIX)
        )
    elif np.size(v) != 1:
        raise TypeError(
            f"pullback: {transform} of {fname} needs a scalar output, got shape "
            f"{np.shape(v)}. Reduce it (np.sum, np.mean), or " + (
                "use pb.vjp or pb.jacobian for non-scalar outputs." if transform.endswith("grad")
                else _VECTOR_FIX.lower())
        )
    elif np.iscomplexobj(v):
        raise TypeError(
            f"pullback: {transform} of {fname} needs a real output, got {np.result_type(v)}; "
            "take np.real or np.abs of it, or use pb.vjp with a complex cotangent"
        )
    elif np.result_type(v).kind in "biu":  # as JAX: its derivative would be zero silently
        raise TypeError(
            f"pullback: {transform} of {fname} needs a floating-point output, got "
            f"{np.result_type(v)}: a comparison, a count or np.argmax has no derivative. "
            "Return a float loss (0.0 for a constant one)."
        )
    # under pb.jit the check is on the traced value, a guard of the recorded program
    if losscheck and not (np.isfinite(v) if isinstance(v, Tracked)  # (a longdouble's
                          else np.isfinite(np.ravel(v)[0])):    # 5e400 is finite)
        raise LossError(
            f"pullback: the loss of {fname} is {np.ravel(v)[0]}; find where it stops being "
            "finite" + (", or pass losscheck=False to differentiate it anyway"
                        if transform.endswith("grad") else "")
        )
    return ones_like_value(v, np.shape(v), np.result_type(v))


_VECTOR_FIX = "For a vector function use pb.jacobian(pb.jacobian(f))."


def _lazy_seed(v, fname):
    if math.prod(v.shape) != 1 or v.dtype.kind != "f":  # (an integer or bool loss too, as
        raise TypeError(                                 # NumPy's: its gradient would be 0)
            f"pullback: grad of {fname} needs a real floating-point scalar output, got a "
            f"Dask array of shape {v.shape} and dtype {v.dtype}. Reduce it (np.sum, "
            "np.mean); take np.real of a complex loss; a comparison, a count or np.argmax "
            "has no derivative."
        )
    return np.ones_like(v)
