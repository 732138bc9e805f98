"""The backward pass: cotangents sent from the outputs to the inputs, in reverse order of
creation, with no recursion and all state local to the pass."""

import heapq

import numpy as np

from .core import Tracked, plain
from .dispatch import _scan  # noqa: F401  (dispatch must load before the registry)
from .registry import Elementwise, NoRuleError, NotImplementedCotangent, Pick

FREED = object()  # the rule of a node whose graph a backward pass has released

def backward_pass(roots, seeds, batch_shape=(), retain_graph=True):
    """Send ``seeds`` back from ``roots`` (values tracked at one level) through the graph.

    Returns a dict from each leaf reached to its cotangent. Nodes are visited in reverse
    creation order (a node is created after its inputs), so each node is visited once,
    after every node that uses it; no recursion, and all state is local to this call.
    ``batch_shape`` is the shape of the leading axes every cotangent carries.
    """
    cts = {}
    heap = []
    for root, seed in zip(roots, seeds):
        if root in cts:
            cts[root] = cts[root] + seed
        else:
            cts[root] = seed
            heap.append((-root.seq, root))
    heapq.heapify(heap)
    leaves = {}
    owned = set()  # ids of accumulated cotangents this pass allocated (safe to add into)
    visited = None if retain_graph else []
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        node = pop(heap)[1]
        g = cts.pop(node)
        if owned:
            owned.discard(id(g))  # from here on it may be shared by the pullback
        rule = node.rule
        if rule is None:
            leaves[node] = g
            continue
        cls = rule.__class__
        if cls is Pick:
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
                "pullback: backward() through a graph that an earlier backward() already "
                "freed. Pass retain_graph=True to the first backward() to keep the graph "
                "for another pass, or recompute the loss."
            )
        if visited is not None:
            visited.append(node)
        if cls is Elementwise:
            args = node.args
            if len(args) == 1:
                parent = args[0]
                pairs = ((parent, rule.cotangent(0, g, node.value, (parent.value,))),)
            else:
                pairs = rule.backward(node, g)
        else:
            if type(g) is list:
                g = tuple(zeros_for(o, batch_shape) if c is None else c
                          for o, c in zip(node.value, g))
            pairs = _match(node, rule(g))
        for parent, ct in pairs:
            if ct is None:
                continue
            c, v = ct.__class__, parent.value
            if c is np.ndarray:  # fits already when shape and dtype are the input's
                if ct.dtype != v.dtype or ct.shape != (
                        batch_shape + v.shape if batch_shape else v.shape):
                    ct = _project(ct, parent, batch_shape, rule)
            elif c is not np.float64 or v.__class__ is not np.float64 or batch_shape:
                ct = _project(ct, parent, batch_shape, rule)
            prev = cts.get(parent)
            if prev is None:
                cts[parent] = ct
                push(heap, (-parent.seq, parent))
            elif id(prev) in owned and ct.__class__ is np.ndarray and (
                    ct.shape == prev.shape and ct.dtype == prev.dtype):
                prev += ct  # a sum this pass made itself: nobody else holds it
            else:
                owned.discard(id(prev))
                total = cts[parent] = prev + ct
                if total.__class__ is np.ndarray:
                    owned.add(id(total))
    if visited is not None:
        for node in visited:
            node.rule = FREED
            node.args = None
    return leaves


def zeros_for(out, batch_shape=()):
    """Zeros shaped like ``out`` with ``batch_shape`` in front: the cotangent of something
    nothing depended on."""
    v = plain(out)  # may be a Python scalar (cho_factor's ``lower`` flag)
    return np.zeros(batch_shape + np.shape(v), dtype=np.result_type(v))


def _match(node, cts):
    """Pair a general rule's cotangents with its tracked positional arguments."""
    args = node.args
    level = node.level
    # extra trailing entries belong to arguments given by keyword or left at defaults
    if not isinstance(cts, (tuple, list)) or len(cts) < len(args):
        got = len(cts) if isinstance(cts, (tuple, list)) else type(cts).__name__
        raise TypeError(
            f"pullback: {_pullback_name(node.rule)} returned {got} cotangents for "
            f"{len(args)} positional arguments; return a tuple with (at least) one entry "
            "per argument (None for an argument with no gradient)"
        )
    # an entry may be a thunk (a function of no arguments): it is called only for an
    # input that needs its cotangent, so rules can skip work nobody asked for
    pairs = []
    for i, (a, ct) in enumerate(zip(args, cts)):
        if ct.__class__ is NotImplementedCotangent:
            if _tracked_at(a, level):  # only an error if the argument was tracked here
                raise NoRuleError(
                    f"pullback: {_pullback_name(node.rule)} has no derivative with "
                    f"respect to argument {i} ({ct.reason}); pass it as a plain value"
                )
        elif isinstance(a, Tracked):
            if a.level == level:
                pairs.append((a, ct() if callable(ct) else ct))
        elif (type(a) is list or type(a) is tuple) and ct is not None:
            _match_nested(a, ct, level, pairs)
    return pairs


def _tracked_at(a, level):
    """Whether ``a`` (or a value in its nested lists) is tracked at ``level``; the level
    has finished by the time its backward pass runs, so ``_scan`` would not see it."""
    if isinstance(a, Tracked):
        return a.level == level
    return (type(a) is list or type(a) is tuple) and any(_tracked_at(b, level) for b in a)


def _match_nested(args, cts, level, pairs):
    if callable(cts):
        cts = cts()
    for b, c in zip(args, cts):
        if isinstance(b, Tracked):
            if b.level == level:
                pairs.append((b, c() if callable(c) else c))
        elif (type(b) is list or type(b) is tuple) and c is not None:
            _match_nested(b, c, level, pairs)


def _pullback_name(rule):
    return getattr(rule, "__qualname__", None) or repr(rule)


def _project(ct, parent, batch_shape, rule):
    """Fit a cotangent to its input: sum broadcast axes, keep the batch axes, take the
    real part for a real input, and match the input's floating dtype."""
    v = parent.value
    shape = v.shape
    dtype = v.dtype
    cv = ct
    while isinstance(cv, Tracked):
        cv = cv.value
    cshape = getattr(cv, "shape", None)
    if cshape is None:
        ct = np.asarray(ct)
        cshape = ct.shape
        cv = ct
    if batch_shape:
        target = batch_shape + shape
        if cshape != target:
            ct = _fit(ct, cshape, target, len(batch_shape), rule, parent)
    elif cshape != shape:
        ct = _fit(ct, cshape, shape, 0, rule, parent)
    cdtype = cv.dtype
    if cdtype != dtype:
        if cdtype.kind == "c" and dtype.kind != "c":
            ct = np.real(ct)
            cdtype = np.dtype(cdtype.char.lower())
        if cdtype != dtype and dtype.kind in "fc":
            ct = ct.astype(dtype)
    return ct


def _sum_kept(ct, axes):
    if ct.__class__ is np.ndarray:  # the ufunc method skips np.sum's Python layer
        return np.add.reduce(ct, axis=axes, keepdims=True)
    return np.sum(ct, axis=axes, keepdims=True)


def _fit(ct, cshape, target, nb, rule, parent):
    """Sum away the axes broadcasting added (after the ``nb`` batch axes), then broadcast
    up where the cotangent is smaller than the input."""
    n = len(target)
    lead = len(cshape) - n
    if lead > 0:
        axes = tuple(range(nb, nb + lead)) + tuple(
            i + lead for i in range(nb, n) if target[i] == 1 and cshape[i + lead] != 1)
        kept = [1 if i in axes else s for i, s in enumerate(cshape)]
        # .reshape is the ndarray method (or ArrayMethods.reshape for a tracked value)
        ct = _sum_kept(ct, axes).reshape(tuple(kept[:nb] + kept[nb + lead:]))
    else:
        axes = tuple(i + lead for i in range(n)
                     if i + lead >= 0 and target[i] == 1 and cshape[i + lead] != 1)
        if axes:
            ct = _sum_kept(ct, axes)
    if ct.shape != target:
        try:
            ct = np.broadcast_to(ct, target)
        except ValueError:
            raise ValueError(
                f"pullback: {_pullback_name(rule)} returned a cotangent of shape "
                f"{cshape} for an input of shape {target[nb:]}"
                + (f" (with batch axes {target[:nb]})" if nb else "")
            ) from None
    return ct
