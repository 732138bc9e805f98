"""The backward pass: the other half of the engine.

``backward_pass`` sends cotangents from roots to leaves in reverse order of creation, with
no recursion and all of its state local to the call, so a pass that raises halfway leaves
the graph as it was. Each node's cotangent goes through its record (a table row, a product,
a pullback), then is fitted to its parent's shape in one place (``_project``).
"""
import heapq
import math

import numpy as np

from . import refusals
from .backend import SCALAR_TYPES, is_foreign, zeros_like_value
from .core import Tracked, plain, writes
from .lazy import is_lazy
from .methods import is_complex, shape_of
from .refusals import fitted_list, library_rule, no_derivative, pullback_name
from .register import elementwise, primitive
from .registry import (
    MINUS_ONE,
    ONE,
    Bilinear,
    Elementwise,
    NoRuleError,
    NotImplementedCotangent,
    Pick,
    Reduction,
    Unbatched,
    dropped_batch_axes,
    name_of,
)
from .writes import version_at

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
            ct = (times_singular(g, local) if isinstance(ct, Tracked)
                  else np.where(plain(g) == 0, 0, ct))
    return ct


@primitive
def times_singular(g, local):
    """``g * local``, but zero where ``g`` is zero even where ``local`` is infinite: a
    singular row's cotangent under a nested derivative, recorded as a singular row itself
    so that the next order keeps the rule."""
    return np.where(g == 0, 0, g * local)


elementwise(times_singular, lambda ans, g, local: local, lambda ans, g, local: g,
            singular=True)


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


def _recorded_versions(node):
    """Point ``node``'s inputs at the versions it was recorded with: an input written into
    since (``x[i] = v``) holds its update now, and its earlier version is the update's
    first argument (writes.py)."""
    node.args = tuple(version_at(a, node.seq) for a in node.args)
