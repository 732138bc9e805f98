"""The functional face: grad, value_and_grad and vjp, all built on one backward pass."""

import functools
import math
import numbers

import numpy as np

from .backward import backward_pass, zeros_for
from .core import Frame, LossError, Tracked, _live, plain, shape_of
from .tree import tree_flatten, tree_unflatten

__all__ = ["grad", "value_and_grad", "vjp", "VJP"]


# ---------------------------------------------------------------------------- helpers

def strip(x):
    """``x`` without the boxes of finished computations (and of the top-level Tracker
    level): what a transform hands back once its own level has ended."""
    while isinstance(x, Tracked) and (x.level == 0 or x.level not in _live):
        x = x.value
    return x


def _name(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def make_leaf(x, level, what):
    """Box ``x`` as an input of the computation at ``level``; only floating-point and
    complex values can be differentiated."""
    if x.__class__ is np.ndarray:  # the common case first
        kind, value = x.dtype.kind, x
    elif isinstance(x, Tracked):
        kind = x.dtype.kind
        value = x
    elif isinstance(x, (bool, np.bool_)) or isinstance(x, numbers.Integral):
        kind, value = "i", x
    elif isinstance(x, float):
        kind, value = "f", np.float64(x)
    elif isinstance(x, complex):
        kind, value = "c", np.complex128(x)
    elif isinstance(x, (np.ndarray, np.generic)):
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
            "of argnums."
        )
    return Tracked(value, level)


def writeable(ct):
    """``ct``, copied if it is a read-only view (the engine's broadcasts are): what a user
    gets back must be an array of their own."""
    if ct.__class__ is np.ndarray and not ct.flags.writeable:
        return ct.copy()
    return ct


def _like(ct, x):
    """A finished cotangent in the form of its input: same dtype, an ndarray for an
    ndarray, a NumPy scalar for a Python or NumPy scalar."""
    if isinstance(ct, Tracked):
        return ct
    if isinstance(x, np.ndarray):
        return writeable(np.asarray(ct, dtype=x.dtype))
    if isinstance(x, Tracked):
        return ct
    dtype = x.dtype if isinstance(x, np.generic) else np.result_type(type(x))
    return dtype.type(ct)


def peel(x, level):
    """The box of ``x`` at ``level``, looking through boxes of higher levels; None when
    ``x`` does not depend on that level."""
    while isinstance(x, Tracked) and x.level > level:
        x = x.value
    if isinstance(x, Tracked) and x.level == level:
        return x
    return None


def normalize_argnums(argnums, nargs, fname):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for i in nums:
        if not isinstance(i, int) or not -nargs <= i < nargs:
            raise TypeError(
                f"pullback: argnums={argnums!r} for {fname}, called with {nargs} positional "
                "argument(s)"
            )
    return single, tuple(i % nargs for i in nums)


class Trace:
    """One run of ``f`` with boxed inputs at a fresh level, and pulls back through it."""

    def __init__(self, frame, args, argnums):
        self.frame = frame
        self.args = list(args)
        self.inputs = []  # per differentiated argument: (treedef, original leaves, boxes)
        for i in argnums:
            flat, treedef = tree_flatten(self.args[i])
            what = f"argument {i}"
            boxes = [make_leaf(x, frame.level, what) for x in flat]
            self.args[i] = tree_unflatten(treedef, boxes)
            self.inputs.append((treedef, flat, boxes))

    def pull(self, outs, seeds, batch_shape=(), retain_graph=True):
        """Cotangents of the inputs, one pytree per differentiated argument."""
        level = self.frame.level
        roots, root_seeds = [], []
        for o, s in zip(outs, seeds):
            node = peel(o, level)
            if node is not None:
                roots.append(node)
                root_seeds.append(s)
        leaves = backward_pass(roots, root_seeds, batch_shape, retain_graph) if roots else {}
        result = []
        for treedef, flat, boxes in self.inputs:
            cts = []
            for x, box in zip(flat, boxes):
                ct = leaves.get(box)
                ct = zeros_for(x, batch_shape) if ct is None else strip(ct)
                cts.append(_like(ct, x) if not batch_shape else writeable(ct))
            result.append(tree_unflatten(treedef, cts))
        return result


def _scalar_loss(y, fname, losscheck):
    v = plain(y)
    if np.ndim(v) != 0 or isinstance(v, (str, bytes)):
        raise TypeError(
            f"pullback: grad of {fname} needs a scalar output, got shape {np.shape(v)}. "
            "Reduce it (np.sum, np.mean), or use pb.vjp or pb.jacobian for non-scalar outputs."
        )
    if np.iscomplexobj(v):
        raise TypeError(
            f"pullback: grad of {fname} needs a real output, got {np.result_type(v)}; "
            "take np.real or np.abs of it, or use pb.vjp with a complex cotangent"
        )
    if losscheck and not math.isfinite(float(v)):
        raise LossError(
            f"pullback: the loss of {fname} is {float(v)}; find where it stops being finite, "
            "or pass losscheck=False to differentiate it anyway"
        )
    return np.ones((), dtype=np.result_type(v))


# ---------------------------------------------------------------------------- transforms

def value_and_grad(f, argnums=0, has_aux=False, losscheck=True):
    """``f``'s value and its gradient with respect to ``argnums``, as plain arrays.

    ``f`` must return a real scalar (or ``(scalar, aux)`` with ``has_aux=True``). Arguments
    may be pytrees; the gradient has each argument's structure, shape and dtype. A NaN or
    infinite value raises ``pb.LossError`` unless ``losscheck=False``.

    >>> value, g = pb.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
    >>> value, g
    (5.0, array([2., 4.]))
    """
    fname = _name(f)

    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        single, nums = normalize_argnums(argnums, len(args), fname)
        with Frame() as frame:
            trace = Trace(frame, args, nums)
            out = f(*trace.args, **kwargs)
            if has_aux:
                if not (isinstance(out, (tuple, list)) and len(out) == 2):
                    raise TypeError(
                        f"pullback: {fname} was differentiated with has_aux=True, so it must "
                        f"return a pair (loss, aux); it returned {type(out).__name__}"
                    )
                out, aux = out
            seed = _scalar_loss(out, fname, losscheck)
        grads = trace.pull([out], [seed])  # the graph goes with the trace: no freeing
        value = strip(out)
        if has_aux:
            leaves, treedef = tree_flatten(aux)
            value = (value, tree_unflatten(treedef, [strip(a) for a in leaves]))
        return value, (grads[0] if single else tuple(grads))

    return value_and_grad_f


def grad(f, argnums=0, has_aux=False, losscheck=True):
    """The gradient of scalar-valued ``f`` with respect to argument(s) ``argnums``.

    Returns plain arrays of the arguments' shapes and dtypes (a tuple for a tuple of
    argnums; ``(grad, aux)`` with ``has_aux=True``). Nest freely: ``pb.grad(pb.grad(f))``.

    >>> pb.grad(lambda x: np.sum(np.sin(x)))(np.array([0.0, np.pi]))
    array([ 1., -1.])
    """
    vg = value_and_grad(f, argnums, has_aux, losscheck)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


class VJP:
    """The pullback of a traced function: call it with a cotangent of the output's
    structure to get one cotangent per primal. It can be called any number of times."""

    def __init__(self, trace, outs, treedef, fname):
        self._trace = trace
        self._outs = outs
        self._treedef = treedef
        self._fname = fname

    def __call__(self, cotangent):
        return self.batched(cotangent, ())

    def batched(self, cotangent, batch_shape):
        """The pullback of a stack of cotangents, each with leading axes ``batch_shape``,
        in one backward pass."""
        seeds, treedef = tree_flatten(cotangent)
        if len(seeds) != len(self._outs):
            raise TypeError(
                f"pullback: the cotangent for {self._fname} has {len(seeds)} leaves but its "
                f"output has {len(self._outs)}; pass one array per output array"
            )
        checked = []
        for k, (s, o) in enumerate(zip(seeds, self._outs)):
            want = batch_shape + shape_of(o)
            if shape_of(s) != want:
                raise ValueError(
                    f"pullback: cotangent {k} for {self._fname} has shape "
                    f"{shape_of(s)}, but the output has shape {want}"
                )
            if not isinstance(s, Tracked):
                s = np.asarray(s)
            checked.append(s)
        cts = self._trace.pull(self._outs, checked, batch_shape)
        return tuple(cts)


def vjp(f, *primals, has_aux=False):
    """``(out, vjp_fn)``: ``f(*primals)`` and its pullback ``vjp_fn(cotangent)``, which
    returns one cotangent per primal and may be called as often as you like.

    >>> out, vjp_fn = pb.vjp(lambda x, y: x * y, np.ones(3), np.arange(3.0))
    >>> vjp_fn(np.ones(3))
    (array([0., 1., 2.]), array([1., 1., 1.]))
    """
    fname = _name(f)
    with Frame() as frame:
        trace = Trace(frame, primals, range(len(primals)))
        out = f(*trace.args)
        if has_aux:
            out, aux = out
    outs, treedef = tree_flatten(out)
    value = tree_unflatten(treedef, [strip(o) for o in outs])
    pullback = VJP(trace, outs, treedef, fname)
    if has_aux:
        leaves, adef = tree_flatten(aux)
        return value, pullback, tree_unflatten(adef, [strip(a) for a in leaves])
    return value, pullback
