"""The backward pass: the other half of the engine.

``backward_pass`` sends cotangents from roots to leaves in reverse order of creation, with
no recursion and all of its state local to the call, so a pass that raises halfway leaves
the graph as it was. Each node's cotangent goes through its record (``pull``: a table
row, a product, a pullback, records.py), then is fitted to its parent's shape in one place
(``_project``).
"""
import heapq
import math

import numpy as np

from . import refusals
from .backend import SCALAR_TYPES
from .core import plain, writes
from .lazy import is_lazy
from .records import FREED, Slots
from .refusals import library_rule, pullback_name
from .registry import dropped_batch_axes
from .writes import version_at

# ---------------------------------------------------------------------------- the backward pass

def backward_pass(roots, seeds, batch_shape=(), retain_graph=True):
    """Send ``seeds`` back from ``roots`` (values tracked at one level) through the graph.

    Returns a dict from each leaf reached to its cotangent. Nodes are visited in reverse
    creation order (a node is created after its inputs), so each node is visited once,
    after every node that uses it. ``batch_shape`` is the shape of the leading axes every
    cotangent carries. Unless ``retain_graph``, the nodes visited are released.
    """
    cts, heap = _seeded(roots, seeds)
    leaves, visited = {}, None if retain_graph else []  # visited: the nodes to release
    pop, written = heapq.heappop, writes.seen
    while heap:
        node = pop(heap)[1]
        g = cts.pop(node)
        rule = node.rule
        if rule is None:
            leaves[node] = g
            continue
        if written:
            _recorded_versions(node)
        if visited is not None:
            visited.append(node)
        _send(rule.pull(node, g), rule, cts, heap, batch_shape)
    if visited is not None:
        for node in visited:  # releases the arrays it held read-only (guard.py)
            node.rule, node.args, node.hold = FREED, None, None
    return leaves


def _seeded(roots, seeds):
    """The cotangents of the roots, and the heap of nodes to visit, latest first."""
    cts, heap = {}, []
    for root, seed in zip(roots, seeds):
        if root in cts:
            cts[root] = cts[root] + seed
        else:
            cts[root] = seed
            heap.append((-root.seq, root))
    heapq.heapify(heap)
    return cts, heap


def _send(pairs, rule, cts, heap, batch_shape):
    """Add each pair's cotangent, fitted to its input, to the input's; an input reached for
    the first time joins the heap."""
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
        elif c is not Slots and (batch_shape or c is not v.__class__ or c not in SCALAR_TYPES):
            ct = _project(ct, parent, batch_shape, rule)  # (Slots: a hub's, gathered)
        prev = cts.get(parent)
        if prev is None:
            cts[parent] = ct
            heapq.heappush(heap, (-parent.seq, parent))
        else:
            cts[parent] = prev + ct


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
    if node.args is not None:  # (None: released, and its record says so)
        node.args = tuple(version_at(a, node.seq) for a in node.args)
