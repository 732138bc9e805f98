"""The backward pass and the vjp layer above it: the other half of the engine.

``backward_pass`` sends cotangents from roots to leaves in reverse order of creation, with
no recursion and all of its state local to the call, so a pass that raises halfway leaves
the graph as it was. ``linearize`` runs a function once with some arguments boxed at a
fresh level; the ``Linearized`` it returns pulls cotangents back through that run. Every
transform (grad, vjp, jvp, jacobian, hessian, hvp, checkpoint) is built on those two.
"""

import functools
import heapq
import math
import numbers
import weakref
from typing import Any

import numpy as np

from .. import tree
from ..tree import StructureMismatch, kind_of, leaves_by, plural, tree_flatten, tree_unflatten
from . import refusals
from .backend import SCALAR_TYPES, is_foreign, ones_like_value, zeros_like_value
from .core import Frame, Tracked, box_at, live_levels, plain, state, writes
from .guard import Hold, level_holds, refused_write, release
from .lazy import is_lazy
from .methods import escapes, is_complex, owner, shape_of
from .refusals import fitted_list, library_rule, no_derivative, pullback_name
from .registry import (
    MINUS_ONE,
    ONE,
    Bilinear,
    Elementwise,
    LossError,
    NoRuleError,
    NotImplementedCotangent,
    Pick,
    Reduction,
    Unbatched,
    dropped_batch_axes,
    name_of,
)

FREED = object()  # the rule of a node whose graph a backward pass has released
_REAL = frozenset({np.float64, np.float32, float, int})


# ---------------------------------------------------------------------------- the backward pass

def backward_pass(roots, seeds, batch_shape=(), retain_graph=True):
    """Send ``seeds`` back from ``roots`` (values tracked at one level) through the graph.

    Returns a dict from each leaf reached to its cotangent. Nodes are visited in reverse
    creation order (a node is created after its inputs), so each node is visited once,
    after every node that uses it. ``batch_shape`` is the shape of the leading axes every
    cotangent carries. Unless ``retain_graph``, the nodes visited are released.
    """
    cts, heap = {}, []
    for root, seed in zip(roots, seeds):
        if root in cts:
            cts[root] = cts[root] + seed
        else:
            cts[root] = seed
            heap.append((-root.seq, root))
    heapq.heapify(heap)
    leaves, visited = {}, (None if retain_graph else [])  # visited: the nodes to release
    pop, push = heapq.heappop, heapq.heappush
    written = writes.seen
    while heap:
        node = pop(heap)[1]
        g = cts.pop(node)
        rule = node.rule
        if rule is None:
            leaves[node] = g
            continue
        cls = rule.__class__
        if cls is Pick:  # one output of several: gather into the hub's slots
            hub = node.args
            slots = cts.get(hub)
            if slots is None:
                slots = cts[hub] = [None] * len(hub.value)
                push(heap, (-hub.seq, hub))
            i = rule.index
            slots[i] = g if slots[i] is None else slots[i] + g
            continue
        if rule is FREED:
            raise RuntimeError(
                "pullback: backward() through a graph that an earlier backward() already freed. "
                "Pass retain_graph=True to the first backward() to keep it, or recompute the loss.")
        if visited is not None:
            visited.append(node)
        if written:
            _recorded_versions(node)
        if cls is Elementwise:
            pairs = _row_pullback(rule, node, g)
        elif cls is Bilinear:
            pairs = _product_pullback(rule, node, g)
        elif cls is Reduction:
            pairs = rule.pull(node, g)
        else:
            if type(g) is list:  # a hub: outputs nothing depended on get zeros
                g = tuple(zeros_for(o, batch_shape) if c is None else c
                          for o, c in zip(node.value, g))
            if g.__class__ is np.ndarray and not library_rule(rule):  # a user's pullback gets
                g = g.copy()  # its own cotangent (g *= 2 would change its siblings' too)
            if cls is Unbatched:
                pairs = _match(node, _per_slice(rule.rule, g, node.value))
            else:
                pairs = _match(node, rule(g))
        for parent, ct in pairs:
            if ct is None:
                continue
            c, v = ct.__class__, parent.value
            # a cotangent that already fits its input skips the projection (the common case;
            # with batch axes too, which pays in Jacobians: bench/NOTES.md)
            if c is np.ndarray:
                if ct.dtype is not v.dtype and ct.dtype != v.dtype or ct.shape != (
                        batch_shape + v.shape if batch_shape else v.shape):
                    ct = _project(ct, parent, batch_shape, rule)
            elif batch_shape or c is not v.__class__ or c not in SCALAR_TYPES:
                ct = _project(ct, parent, batch_shape, rule)
            prev = cts.get(parent)
            if prev is None:
                cts[parent] = ct
                push(heap, (-parent.seq, parent))
            else:
                cts[parent] = prev + ct
    if visited is not None:
        for node in visited:  # releases the arrays it held read-only (guard.py)
            node.rule, node.args, node.hold = FREED, None, None
    return leaves


def _row_pullback(row, node, g):
    """Pairs (input, cotangent) of a table row, for its inputs tracked at the node's level;
    the one- and two-argument cases are written out, as they are the hot path."""
    args = node.args
    ans = node.value
    if len(args) == 1:  # the one argument is the node's input
        a = args[0]
        return ((a, _row_cotangent(row, 0, g, ans, (a.value,))),)
    level = node.level
    if len(args) == 2:
        a, b = args
        ta = isinstance(a, Tracked) and a.level == level
        tb = isinstance(b, Tracked) and b.level == level
        vals = (a.value if ta else a, b.value if tb else b)
        da, db = row.derivs  # ONE (add's, subtract's first): the cotangent as it is
        if ta and tb:
            return ((a, g if da is ONE else _row_cotangent(row, 0, g, ans, vals)),
                    (b, g if db is ONE else _row_cotangent(row, 1, g, ans, vals)))
        if ta:
            return ((a, g if da is ONE else _row_cotangent(row, 0, g, ans, vals)),)
        return ((b, g if db is ONE else _row_cotangent(row, 1, g, ans, vals)),)
    vals = [a.value if isinstance(a, Tracked) and a.level == level else a for a in args]
    return [(a, _row_cotangent(row, i, g, ans, vals)) for i, a in enumerate(args)
            if isinstance(a, Tracked) and a.level == level]


def _product_pullback(row, node, g):
    """Pairs (input, cotangent) of a product's row (registry.Bilinear), for its inputs
    tracked at the node's level."""
    (a, b), level, (vjp_a, vjp_b) = node.args, node.level, row.vjps
    ta = isinstance(a, Tracked) and a.level == level  # (a pb.param too: a subclass)
    tb = isinstance(b, Tracked) and b.level == level
    av, bv = a.value if ta else a, b.value if tb else b
    if not row.batched:  # a user's row takes a batched cotangent one slice at a time
        cts = _per_slice(lambda g: (vjp_a(g, av, bv) if ta else None,
                                    vjp_b(g, av, bv) if tb else None), g, node.value)
        return [(p, ct) for p, ct, t in zip((a, b), cts, (ta, tb)) if t]
    return ([(a, vjp_a(g, av, bv))] if ta else []) + ([(b, vjp_b(g, av, bv))] if tb else [])


def _row_cotangent(row, i, g, ans, vals):
    """The cotangent of argument ``i`` of a table row: ``g`` times the conjugate of the
    local derivative (ChainRules' complex convention)."""
    d = row.derivs[i]
    if d is ONE:
        return g
    if d is MINUS_ONE:
        return -g
    if d is None:
        raise NoRuleError(
            f"pullback: {name_of(row.func)} is not differentiable with respect to "
            f"argument {i}"
        )
    if not row.singular:
        local = d(ans, *vals)
        if (local.dtype.kind == "c" if local.__class__ is np.ndarray
                else local.__class__ not in _REAL and is_complex(local)):
            local = np.conjugate(local)
        return g * local
    with np.errstate(divide="ignore", invalid="ignore"):  # infinite derivatives expected
        local = d(ans, *vals)
        local = np.conjugate(local) if is_complex(local) else local
        ct = g * local
        # a zero cotangent gives zero even where the derivative is infinite (ct's sum is
        # not finite when an entry is not; another library's array is masked: asking syncs);
        # under a nested derivative as a row of its own, so the next order keeps the rule
        if is_foreign(pc := plain(ct)) or not np.isfinite(np.add.reduce(pc, axis=None)):
            ct = (singular.times(g, local) if isinstance(ct, Tracked)
                  else np.where(plain(g) == 0, 0, ct))
    return ct


class singular:  # times(g, local), the product above as a row (rules/numpy/elementwise.py,
    # set in _wiring.py)
    times: Any = None


def _per_slice(pullback, g, out):
    """Apply a pullback that takes no batch axes to each slice of a batched cotangent (a
    tuple of them for several outputs) and stack the results."""
    several = type(g) is tuple  # a hub's: one cotangent per output, each batched
    g0, out0 = (g[0], out[0]) if several else (g, out)
    nb = np.ndim(plain(g0)) - np.ndim(plain(out0))
    if nb <= 0:
        return pullback(g)
    n = math.prod(batch := np.shape(plain(g0))[:nb])  # (n, not -1: a slice may be empty)
    flats = [np.reshape(c, (n,) + shape_of(c)[nb:]) for c in (g if several else (g,))]
    # a slice's entries may be thunks: run them here, where they are stacked
    slices = [[c() if callable(c) else c for c in pullback(
        tuple(f[i] for f in flats) if several else flats[0][i])]
        for i in range(n)]
    stacks = [None if all(p is None for p in parts) else np.stack(parts)
              for parts in zip(*slices)]
    return tuple(None if s is None else np.reshape(s, batch + shape_of(s)[1:])
                 for s in stacks)


def zeros_for(out, batch_shape=()):
    """Zeros like ``out`` with ``batch_shape`` in front: the cotangent of an unused output."""
    v = plain(out)  # may be a Python scalar (cho_factor's ``lower`` flag)
    return zeros_like_value(v, batch_shape + np.shape(v), np.result_type(v))


def _match(node, cts):
    """Pair a general rule's cotangents with its tracked positional arguments. An entry may
    be a thunk (a function of no arguments): it is called only for an input that needs its
    cotangent, so rules can skip work nobody asked for."""
    args, level = node.args, node.level
    # extra trailing entries belong to arguments given by keyword or left at defaults
    if not isinstance(cts, (tuple, list)) or len(cts) < len(args):
        got = len(cts) if isinstance(cts, (tuple, list)) else type(cts).__name__
        raise TypeError(
            f"pullback: {pullback_name(node.rule)} returned {got} cotangents for "
            f"{len(args)} positional arguments (a tracked one given by keyword counts, in its "
            "place); return a tuple with one entry per argument (None for no gradient)"
        )
    pairs, nested = [], []  # nested: (arguments, cotangents) of lists and tuples, walked after
    for i, (a, ct) in enumerate(zip(args, cts)):
        if isinstance(a, Tracked):
            if a.level == level and ct is not None:
                if ct.__class__ is NotImplementedCotangent:
                    no_derivative(node.rule, i, ct)
                pairs.append((a, ct() if callable(ct) else ct))
        elif type(a) is list or type(a) is tuple:
            if ct.__class__ is NotImplementedCotangent:
                if _tracked_at(a, level):
                    no_derivative(node.rule, i, ct)
            elif ct is not None and _tracked_at(a, level):  # (a plain list needs none)
                nested.append((a, fitted_list(a, ct() if callable(ct) else ct, node.rule, i)))
    while nested:
        items, entries = nested.pop()
        for b, c in zip(items, entries):
            if isinstance(b, Tracked):
                if b.level == level and c is not None:
                    pairs.append((b, c() if callable(c) else c))
            elif (type(b) is list or type(b) is tuple) and c is not None:
                nested.append((b, c() if callable(c) else c))
    return pairs


def _tracked_at(a, level):
    """Whether ``a`` or a value in its nested lists is tracked at the (finished) ``level``."""
    if isinstance(a, Tracked):
        return a.level == level
    return (type(a) is list or type(a) is tuple) and any(_tracked_at(b, level) for b in a)


def _project(ct, parent, batch_shape, rule):
    """Fit a cotangent to its input: sum broadcast axes, keep the batch axes, take the
    real part for a real input, and match the input's floating dtype."""
    v = parent.value
    shape, dtype = v.shape, v.dtype
    if ct.__class__ is np.ndarray and ct.dtype == dtype:  # only the shape to fit
        return _fit(ct, ct.shape, batch_shape + shape, len(batch_shape), rule, v)
    cv = plain(ct)
    cshape = getattr(cv, "shape", None)
    if cshape is None:  # a Python scalar
        ct = cv = np.asarray(ct)
        cshape = ct.shape
    target = batch_shape + shape
    if cshape != target:
        ct = _fit(ct, cshape, target, len(batch_shape), rule, v)
    cdtype = cv.dtype
    if cdtype != dtype:
        if cdtype.kind == "c" and dtype.kind != "c":
            ct = np.real(ct)
            cdtype = np.dtype(cdtype.char.lower())
        if cdtype != dtype and dtype.kind in "fc":
            ct = ct.astype(dtype)
    return ct


def _fit(ct, cshape, target, nb, rule, v):
    """Sum away the axes broadcasting added (after the ``nb`` batch axes), then broadcast
    up where the cotangent is smaller than the input (planned once per pair of shapes)."""
    try:
        plan = _plans.get((cshape, target, nb))
        if plan is None:
            if len(_plans) > 4096:
                _plans.clear()
            plan = _plans[cshape, target, nb] = _plan(cshape, target, nb, rule)
        axes, keepdims, kept = plan
        if axes:  # an array's ufunc method skips np.sum's Python layer
            ct = (np.add.reduce if ct.__class__ is np.ndarray else np.sum)(ct, axis=axes,
                                                                           keepdims=keepdims)
        if kept is not None:  # .reshape: the ndarray's, or ArrayMethods' for a tracked value
            ct = ct.reshape(kept)
        if ct.shape != target:  # a small cotangent is copied out: np.broadcast_to costs far
            if not library_rule(rule):  # a user's pullback, as PyTorch's and JAX's, fits its own
                raise ValueError
            if is_lazy(v):  # more (bench/NOTES.md); a Dask input lends its chunks
                ct = ct + np.zeros_like(v)
            elif ct.__class__ is np.ndarray and math.prod(target) <= 65536:
                ct, small = np.empty(target, ct.dtype), ct
                ct[...] = small
            else:
                ct = np.broadcast_to(ct, target)
    except (ValueError, TypeError) as error:  # (TypeError: a Dask shape that is not known)
        if str(error).startswith("pullback:"):
            raise
        raise refusals.misfit(pullback_name(rule), cshape, target, nb) from None
    return ct


_plans: dict = {}


def _plan(cshape, target, nb, rule):
    """The axes to sum, whether to keep them, and the shape to reshape to (None: keep it)."""
    n, lead = len(target), len(cshape) - len(target)
    if nb and (lead < 0 or cshape[:nb] != target[:nb]):
        raise dropped_batch_axes(pullback_name(rule), cshape, target, nb)
    if np.broadcast_shapes(cshape[nb:], target[nb:]) not in (cshape[nb:], target[nb:]):
        raise ValueError  # neither broadcast to the other (a (3, 1) for a (3,)): a slip
    ones = tuple(i for i in range(max(nb, -lead), n) if target[i] == 1 and cshape[i + lead] != 1)
    if lead > 0 and not ones and n:  # only leading axes added (a bias): summed away; to a
        return tuple(range(nb, nb + lead)), False, None  # 0-d target, kept (an array)
    axes = tuple(range(nb, nb + max(lead, 0))) + tuple(i + lead for i in ones)
    if lead > 0:
        kept = [1 if i in axes else s for i, s in enumerate(cshape)]
        return axes, True, tuple(kept[:nb] + kept[nb + lead:])
    return axes, True, None


# ---------------------------------------------------------------------------- the vjp layer

def _recorded_versions(node):
    """Point ``node``'s inputs at the versions it was recorded with: an input written into
    since (``x[i] = v``) holds its update now, and its earlier version is the update's
    first argument (rules/writes.py)."""
    node.args = tuple(_version(a, node.seq) for a in node.args)


def _version(a, seq):
    if isinstance(a, Tracked):
        while a.seq > seq:
            a = a.args[0]
    elif type(a) is list or type(a) is tuple:  # a module-level function: no cycle
        return type(a)(_version(b, seq) for b in a)
    return a


def strip(x):
    """``x`` without the boxes of finished computations (and of the top-level Tracker
    level): what a transform hands back once its own level has ended."""
    while isinstance(x, Tracked) and (x.level == 0 and not state.in_gradient or x.level > 0
                                      and x.level not in live_levels):  # (pb.jit's stays)
        x = x.value
    return x


def writeable(ct):
    """``ct``, copied if it is a read-only view (the engine's broadcasts are): what a user
    gets back must be an array of their own."""
    if ct.__class__ is np.ndarray and not ct.flags.writeable:
        return ct.copy()
    return ct


def as_result(ct, x):
    """A finished cotangent in the form of its input ``x``: same dtype, an ndarray for an
    ndarray, a NumPy scalar for a Python or NumPy scalar."""
    if ct.__class__ is np.ndarray and x.__class__ is np.ndarray and ct.dtype == x.dtype:
        return ct if ct.flags.writeable else ct.copy()  # the common case first
    if isinstance(x, Tracked) and x.level < 0:  # under pb.jit: the form of the traced value
        x = x.value
    if isinstance(ct, Tracked) and ct.level < 0:
        x = plain(x)  # (a live box around a traced value: the form of the value)
        x = x.value if isinstance(x, Tracked) else x
        if isinstance(x, np.ndarray) and not isinstance(ct.value, np.ndarray):
            ct = np.reshape(np.atleast_1d(ct), x.shape)  # a 0-d array for a 0-d array
        dtype = x.dtype if isinstance(x, (np.ndarray, np.generic)) else np.result_type(type(x))
        ct = ct.astype(dtype)  # (the method: np.astype is NumPy 2's)
        return ct if isinstance(x, np.ndarray) else ct[()]
    if isinstance(ct, Tracked) or isinstance(x, Tracked):
        return ct
    if is_foreign(ct) or is_foreign(x):  # another library's array stays in it, with x's
        dtype = x.dtype if hasattr(x, "dtype") else np.result_type(x)  # dtype (lazy.py)
        return ct if ct.dtype == dtype else ct.astype(dtype)
    if isinstance(x, np.ndarray):
        return writeable(np.asarray(ct, dtype=x.dtype))
    dtype = x.dtype if isinstance(x, np.generic) else np.result_type(type(x))
    return dtype.type(ct)


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


def _at_leaf(error, tree, flat, level, what):
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
        run = _runs.get(y.level) if isinstance(y, Tracked) else None
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


_runs: "weakref.WeakValueDictionary[int, Linearized]" = weakref.WeakValueDictionary()


def _list_of_numbers(inputs, argnums, f):
    """Where a differentiated argument is a list (or tuple) of plain numbers, which is a
    pytree of scalars, the sentence that names it and the fix (None where there is none):
    NumPy's functions given that list see a list of tracked scalars, not an array."""
    for i, (treedef, flat, _) in zip(argnums, inputs):
        if treedef is None or treedef[0] not in (list, tuple) or any(
                child is not None for child in treedef[1]) or not all(
                isinstance(x, (int, float, np.number)) and not isinstance(x, bool)
                for x in flat) or not flat:
            continue
        kind = treedef[0].__name__
        return (f"pullback: argument {i} of {fname_of(f)} is a {kind} of {len(flat)} numbers, "
                f"which is differentiated as a pytree (one scalar per entry, as JAX does), so "
                f"NumPy's functions inside see a {kind} of tracked scalars; pass an array, "
                f"np.array({kind == 'list' and '[...]' or '(...)'}), to differentiate it as one "
                "array (its gradient is then an array)")
    return None


class Linearized:
    """One run of ``f`` with the arguments ``argnums`` boxed at a fresh level: ``out`` is
    what ``f`` returned, and ``pull`` sends cotangents back through the run."""

    def __init__(self, f, args, kwargs, argnums):
        with Frame() as frame:
            self.level = frame.level
            _runs[frame.level] = self
            # the arrays this graph needs stay read-only while this object lives (guard.py)
            self.hold = level_holds[frame.level] = Hold()
            try:
                self._run(f, args, kwargs, argnums, frame)
            except BaseException:  # a run that raised is never pulled back: its arrays are
                release(self.hold.arrays)  # writeable at once (the traceback keeps it alive)
                raise
            finally:
                level_holds.pop(frame.level, None)
                # x.item() or x.tolist() of this level's values: said if nothing depends on it
                self.escaped, self.f = escapes.pop(frame.level, None), f

    def _run(self, f, args, kwargs, argnums, frame):
        args = list(args)
        self.inputs = []  # per differentiated argument: (treedef, leaves, boxes)
        boxed = {}  # an argument named twice in argnums is boxed once
        arrays = 0
        for i in argnums:
            if i not in boxed:
                flat, treedef = tree_flatten(args[i])
                what = f"argument {i} of {fname_of(f)}"
                try:
                    boxes = [make_leaf(x, frame.level, what) for x in flat]
                except TypeError as error:  # a pytree's leaf: say which
                    raise _at_leaf(error, args[i], flat, frame.level, what) from None
                held = [x for x in flat if x.__class__ is np.ndarray]
                self.hold.add(held, what)
                arrays += len(held)
                args[i] = tree_unflatten(treedef, boxes)
                boxed[i] = (treedef, flat, boxes)
            self.inputs.append(boxed[i])
        if len(self.hold.seen) < arrays:  # one array given twice (f(w, w)): a write into
            for _, _, boxes in boxed.values():  # one of its boxes goes into the other too
                for box in boxes:
                    if box.value.__class__ is np.ndarray:
                        writes.view(box)
        refusals.forget_refusals()
        try:
            self.out = f(*args, **kwargs)
        except (TypeError, ValueError) as error:  # one that hid a refusal, or NumPy's for a
            # write into an array the guard holds: say it
            if (clear := refused_write(error) or refusals.swallowed(error)) is not None:
                raise clear from error
            if (listed := _list_of_numbers(self.inputs, argnums, f)) is not None:
                said = str(error)  # NumPy's own words stay; pullback's are replaced
                raise type(error)(listed + ("" if said.startswith("pullback:") else
                                            f" (the error inside: {said})")) from error
            raise
        if writes.seen:  # a leaf written into holds its update; its first version is the leaf
            for _, _, boxes in self.inputs:
                for k, box in enumerate(boxes):
                    while box.rule is not None:
                        box = box.args[0]
                    boxes[k] = box

    def pull_leaves(self, outs, seeds, batch_shape=(), retain_graph=True):
        """The cotangent of each boxed leaf, one flat list per differentiated argument
        (None where nothing reached it)."""
        roots, root_seeds = [], []
        for o, s in zip(outs, seeds):
            node = box_at(o, self.level)
            if node is not None:
                roots.append(node)
                root_seeds.append(s)
        if not roots and self.escaped is not None:
            raise ValueError(
                f"pullback: the output of {fname_of(self.f)} does not depend on the "
                "differentiated arguments through tracked operations, so its derivative "
                f"would be zero; {self.escaped} took a plain number out of the graph on "
                "the way. Keep that computation in NumPy operations on the tracked value "
                "(x[i] rather than x[i].item()); if the derivative is meant to be zero, use "
                "pb.stop_gradient(x) instead."
            )
        leaves = backward_pass(roots, root_seeds, batch_shape, retain_graph) if roots else {}
        return [[None if (ct := leaves.get(box)) is None else strip(ct) for box in boxes]
                for _, _, boxes in self.inputs]

    def pull(self, outs, seeds, batch_shape=()):
        """Cotangents of the inputs, one pytree per differentiated argument, each leaf in
        the form of its argument (zeros where nothing reached it)."""
        # each result an array of its own, which a write into another result or into a
        # cotangent given does not change (x + y: one array for both; x.ravel(): a view of
        # the cotangent)
        given = {id(owner(s)) for s in seeds}
        result = []
        for (treedef, flat, _), cts in zip(self.inputs, self.pull_leaves(outs, seeds,
                                                                         batch_shape)):
            leaves = [zeros_for(x, batch_shape) if ct is None
                      else writeable(ct) if batch_shape else as_result(ct, x)
                      for x, ct in zip(flat, cts)]
            for k, leaf in enumerate(leaves):
                if leaf.__class__ is np.ndarray:
                    if id(owner(leaf)) in given:
                        leaves[k] = leaf = leaf.copy()
                    given.add(id(owner(leaf)))
            result.append(tree_unflatten(treedef, leaves))
        return result


def linearize(f, args, kwargs, argnums):
    """Run ``f(*args, **kwargs)`` once with ``argnums`` boxed at a fresh level:
    ``(lin, outs, out_def)``, the run, its flat outputs and their structure."""
    lin = Linearized(f, args, kwargs, argnums)
    outs, out_def = tree_flatten(lin.out)
    return lin, outs, out_def


def _leaves_in(tree, spec, fname):
    """The leaves of the cotangent ``tree`` in the order of the output's structure
    ``spec`` (tree.leaves_by); a different structure is refused, saying where."""
    try:
        return leaves_by(spec, tree, bare_singletons=True)  # (one array for a 1-tuple)
    except StructureMismatch as m:
        raise TypeError(f"pullback: the cotangent for {fname} must have the output's "
                        f"structure; at out{m.path} the output has {m.want}, the cotangent "
                        f"{m.got}") from None


class VJP:
    """The pullback of a linearized function: call it with a cotangent of the output's
    structure to get one cotangent per differentiated argument. It can be called any
    number of times.

    >>> out, vjp_fn = pb.vjp(np.sin, np.zeros(2))
    >>> vjp_fn(np.ones(2))
    (array([1., 1.]),)
    """

    def __init__(self, lin, outs, fname, out_def=False):
        self._lin = lin
        self._outs = outs
        self._fname = fname
        self._out_def = out_def  # the output's structure (False: not known)

    def __call__(self, cotangent, *more):
        if more:
            raise TypeError(f"pullback: the pullback of {self._fname} takes one cotangent "
                            "with the output's structure: pass several as one tuple, "
                            "vjp_fn((ct1, ct2))")
        return self.batched(cotangent, ())

    def batched(self, cotangent, batch_shape):
        """The pullback of a stack of cotangents, each with leading axes ``batch_shape``,
        in one backward pass."""
        seeds = (tree_flatten(cotangent)[0] if self._out_def is False
                 else _leaves_in(cotangent, self._out_def, self._fname))
        if len(seeds) != len(self._outs):
            raise TypeError(
                f"pullback: the cotangent for {self._fname} has {len(seeds)} leaves but its "
                f"output has {len(self._outs)}; pass one array per output array"
            )
        checked = []
        for k, (s, o) in enumerate(zip(seeds, self._outs)):
            if isinstance(s, (str, bytes)) or s is None or dtype_of(s).kind not in "biufc":
                raise TypeError(  # (None: NaN further on; a str or object array: a crash)
                    f"pullback: cotangent {k} for {self._fname} is "
                    + ("None" if s is None else f"a {type(s).__name__}" if isinstance(
                        s, (str, bytes)) else described(s))
                    + "; pass an array of the output's shape holding numbers "
                    "(np.ones_like(out) for a sum)")
            want = batch_shape + shape_of(o)
            if shape_of(s) != want:
                raise ValueError(
                    f"pullback: cotangent {k} for {self._fname} has shape "
                    f"{shape_of(s)}, but the output has shape {want}"
                )
            if is_complex(s) and not is_complex(o):
                raise TypeError(
                    f"pullback: cotangent {k} for {self._fname} is complex but the output is "
                    "real: its imaginary part would be dropped. Pass a real cotangent "
                    "(np.real(ct)), or make the output complex (out * (1 + 0j))."
                )
            checked.append(s if isinstance(s, Tracked) or is_foreign(s) else np.asarray(s))
        return tuple(self._lin.pull(self._outs, checked, batch_shape))
