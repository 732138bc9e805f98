"""Higher-order transforms, all built on the one backward pass of ``pullback.api``.

Forward mode comes from the reverse rules, with no second table: a pullback is linear in
its cotangent, so differentiating ``u -> vjp_f(u)`` (recorded at a fresh level) and
pulling a tangent ``v`` back through it gives ``J v`` (the "double vjp"). Jacobians and
Hessians push a whole stack of basis vectors through the recorded graph in one pass, as a
leading batch axis.
"""

import functools
import math

import numpy as np

from . import core, dispatch
from .api import VJP, Trace, _like, grad, make_leaf, normalize_argnums, peel, strip
from .api import _name as _fname
from .core import Frame, NestedDifferentiationError, Tracked, _live, plain, shape_of
from .registry import Elementwise, Pick
from .tree import tree_flatten, tree_map, tree_unflatten

__all__ = [
    "jvp", "jacobian", "jacfwd", "hessian", "hvp",
    "checkpoint", "hook", "stop_gradient", "nobacksies",
]


# ---------------------------------------------------------------------------- helpers

def _linearize(f, args, kwargs, nums):
    """Run ``f`` once with the arguments ``nums`` boxed at a fresh level: the trace, the
    flat outputs and their structure."""
    with Frame() as frame:
        trace = Trace(frame, args, nums)
        out = f(*trace.args, **kwargs)
    outs, out_def = tree_flatten(out)
    return trace, outs, out_def


def _dtype(x):
    v = plain(x)
    dtype = getattr(v, "dtype", None)
    return np.result_type(v) if dtype is None else dtype


def _inexact(x):
    return _dtype(x).kind in "fc"


def _basis(shapes, dtypes, start, stop):
    """Rows ``start:stop`` of the identity over the concatenated, flattened ``shapes``,
    cut back into one array per shape, each with a leading axis of ``stop - start``."""
    rows = stop - start
    if len(shapes) == 1 and start == 0 and stop == math.prod(shapes[0]):
        return [np.eye(rows, dtype=dtypes[0]).reshape((rows,) + shapes[0])]
    out, offset = [], 0
    for shape, dtype in zip(shapes, dtypes):
        size = math.prod(shape)
        block = np.zeros((rows, size), dtype)
        lo, hi = max(start, offset), min(stop, offset + size)
        if lo < hi:
            block[np.arange(lo - start, hi - start), np.arange(lo - offset, hi - offset)] = 1
        out.append(block.reshape((rows,) + shape))
        offset += size
    return out


def _chunks(total, chunk_size):
    step = total if not chunk_size else max(1, int(chunk_size))
    return [(a, min(a + step, total)) for a in range(0, total, step)] or [(0, 0)]


def _stack(parts):
    """Chunks joined along the leading (batch) axis."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def _assemble(out_def, trace, blocks, single):
    """The Jacobian's structure: the output's pytree, inside each output leaf the
    argument (a tuple for a tuple of argnums), inside it the argument's pytree."""
    per_out = []
    for row in blocks:
        it = iter(row)
        parts = [tree_unflatten(treedef, [next(it) for _ in flat])
                 for treedef, flat, _ in trace.inputs]
        per_out.append(parts[0] if single else tuple(parts))
    return tree_unflatten(out_def, per_out)


def _require_real(values, fname, what, fix):
    if any(_dtype(v).kind == "c" for v in values):
        raise TypeError(f"pullback: {fname} has complex {what}; {fix}")


# ---------------------------------------------------------------------------- forward mode

def _tangent_pullback(pull, outs, fname):
    """Record ``u -> pull(u)`` at a fresh level, at ``u`` = ones (a nonzero point, so that
    no "zero cotangent gives zero" mask fires): a VJP whose pullback maps tangents of the
    inputs to tangents of the outputs, and the indices of the outputs it covers."""
    live = [k for k, o in enumerate(outs) if _inexact(o)]
    with Frame() as frame:
        utrace = Trace(frame, ([np.ones_like(plain(outs[k])) for k in live],), (0,))
        boxes = iter(utrace.args[0])
        us = [next(boxes) if _inexact(o) else np.zeros(shape_of(o)) for o in outs]
        cts = pull(us)
    flat, _ = tree_flatten(cts)
    return VJP(utrace, flat, None, fname), live


def jvp(f, primals, tangents):
    """``(out, tangent_out)``: ``f(*primals)`` and the Jacobian-vector product
    ``J @ tangents`` (forward mode), from the same reverse rules (differentiating the
    pullback with respect to its cotangent). ``primals`` and ``tangents`` are tuples of
    pytrees of the same structure; ``tangent_out`` has the structure of ``out``.

    >>> out, t = pb.jvp(lambda x, y: np.sin(x) * y, (0.0, 2.0), (1.0, 0.0))
    >>> out, t
    (np.float64(0.0), np.float64(2.0))
    """
    fname = _fname(f)
    primals, tangents = tuple(primals), tuple(tangents)
    flat_p, pdef = tree_flatten(primals)
    flat_t, tdef = tree_flatten(tangents)
    if tdef != pdef or any(shape_of(p) != shape_of(t) for p, t in zip(flat_p, flat_t)):
        raise ValueError(
            f"pullback: the tangents for {fname} must match the primals in structure and "
            f"shape: primals {[shape_of(p) for p in flat_p]}, tangents "
            f"{[shape_of(t) for t in flat_t]}"
        )
    trace, outs, out_def = _linearize(f, primals, {}, range(len(primals)))
    pull = VJP(trace, outs, out_def, fname)
    value = tree_unflatten(out_def, [strip(o) for o in outs])
    upull, live = _tangent_pullback(pull, outs, fname)
    (dus,) = upull(flat_t)
    it = iter(dus)
    tangent_out = [_like(next(it), v) if k in live else np.zeros(shape_of(o))
                   for k, (o, v) in enumerate(zip(outs, tree_flatten(value)[0]))]
    return value, tree_unflatten(out_def, tangent_out)


# ---------------------------------------------------------------------------- Jacobians

def jacobian(f, argnums=0, chunk_size=None):
    """The Jacobian of ``f`` with respect to argument(s) ``argnums``, in reverse mode: one
    backward pass pushes every row's cotangent through the graph at once (at most
    ``chunk_size`` per pass, to cap memory).

    Each block has shape ``out.shape + x.shape``. For a tuple of argnums each output leaf
    gets a tuple of blocks; pytrees of arguments and outputs nest as in ``grad``. ``f``
    must have real outputs. Cheapest when the output is smaller than the input.

    >>> J = pb.jacobian(lambda x, A: np.tanh(A @ x), argnums=0)(np.ones(3), np.eye(2, 3))
    >>> J.shape
    (2, 3)
    """
    fname = _fname(f)

    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        single, nums = normalize_argnums(argnums, len(args), fname)
        trace, outs, out_def = _linearize(f, args, kwargs, nums)
        _require_real(outs, fname, "outputs", "take np.real/np.imag of them, or use pb.vjp")
        pull = VJP(trace, outs, out_def, fname)
        if single and out_def is None and not chunk_size and len(trace.inputs[0][2]) == 1 \
                and trace.inputs[0][0] is None and shape_of(outs[0]) != shape_of(args[nums[0]]):
            # one array in, one array out of another shape (so not a diagonal), one pass:
            # no blocks to split and reassemble
            shape = shape_of(outs[0])
            n = math.prod(shape)
            seed = np.zeros((n, n), _dtype(outs[0]))
            seed.flat[::n + 1] = 1
            (rows,) = pull.batched(seed.reshape((n,) + shape), (n,))
            return rows.reshape(shape + shape_of(rows)[1:])
        diagonal = _diagonal(trace, outs)
        if diagonal is not None:
            return _assemble(out_def, trace, _diagonal_blocks(pull, outs, diagonal), single)
        shapes = [shape_of(o) for o in outs]
        dtypes = [_dtype(o) for o in outs]
        sizes = [math.prod(s) for s in shapes]
        parts = []
        for a, b in _chunks(sum(sizes), chunk_size):
            seeds = _basis(shapes, dtypes, a, b)
            cts = pull.batched(seeds, (b - a,))
            parts.append(tree_flatten(cts)[0])
        rows = [_stack(p) for p in zip(*parts)]  # per input leaf: (outputs,) + x.shape
        blocks, offset = [], 0
        for shape, size in zip(shapes, sizes):
            blocks.append([r[offset:offset + size].reshape(shape + shape_of(r)[1:])
                           for r in rows])
            offset += size
        return _assemble(out_def, trace, blocks, single)

    return jacobian_f


def jacfwd(f, argnums=0, chunk_size=None):
    """The Jacobian of ``f`` with respect to argument(s) ``argnums``, in forward mode: the
    double vjp pushes every input direction through at once (at most ``chunk_size`` per
    pass). Same result and structure as ``jacobian``; cheapest when the input is smaller
    than the output. The differentiated arguments must be real.

    >>> J = pb.jacfwd(lambda x: np.stack([x[0] * x[1], np.sin(x[1])]))(np.array([2.0, 0.0]))
    >>> J
    array([[0., 2.],
           [0., 1.]])
    """
    fname = _fname(f)

    @functools.wraps(f)
    def jacfwd_f(*args, **kwargs):
        single, nums = normalize_argnums(argnums, len(args), fname)
        trace, outs, out_def = _linearize(f, args, kwargs, nums)
        leaves = [x for _, flat, _ in trace.inputs for x in flat]
        _require_real(leaves, fname, "arguments", "use pb.jacobian or pb.vjp")
        pull = VJP(trace, outs, out_def, fname)
        diagonal = _diagonal(trace, outs)
        if diagonal is not None:
            return _assemble(out_def, trace, _diagonal_blocks(pull, outs, diagonal), single)
        upull, live = _tangent_pullback(pull, outs, fname)
        shapes = [shape_of(x) for x in leaves]
        dtypes = [_dtype(x) for x in leaves]
        sizes = [math.prod(s) for s in shapes]
        parts = []
        for a, b in _chunks(sum(sizes), chunk_size):
            (dus,) = upull.batched(_basis(shapes, dtypes, a, b), (b - a,))
            parts.append(dus)
        cols = iter([_stack(p) for p in zip(*parts)])  # per live output: (inputs,) + shape
        blocks = []
        for k, o in enumerate(outs):
            shape = shape_of(o)
            if k not in live:
                blocks.append([np.zeros(shape + s) for s in shapes])
                continue
            col = np.moveaxis(next(cols), 0, -1)
            row, offset = [], 0
            for s, size in zip(shapes, sizes):
                row.append(np.reshape(col[..., offset:offset + size], shape + s))
                offset += size
            blocks.append(row)
        return _assemble(out_def, trace, blocks, single)

    return jacfwd_f


def _diagonal(trace, outs):
    """The shape ``S`` when every differentiated input and every output has shape ``S`` and
    every operation recorded between them is an elementwise table row on arrays of shape
    ``S``: then output element ``i`` depends on element ``i`` of the inputs only, so each
    Jacobian block is diagonal. Else None."""
    level = trace.frame.level
    boxes = [b for _, _, bs in trace.inputs for b in bs]
    if not boxes:
        return None
    shape = shape_of(boxes[0])
    stack = [peel(o, level) for o in outs]
    if any(shape_of(b) != shape for b in boxes) or any(
            n is None or shape_of(n) != shape for n in stack):
        return None
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen or node.rule is None:
            continue
        seen.add(id(node))
        if node.rule.__class__ is not Elementwise:
            return None
        for a in node.args:
            if isinstance(a, Tracked) and a.level == level:
                if shape_of(a) != shape:
                    return None
                stack.append(a)
    return shape


def _diagonal_blocks(pull, outs, shape):
    """Diagonal Jacobian blocks from one pass: a stack of one all-ones cotangent per
    output leaf gives every block's diagonal."""
    k = len(outs)
    seeds = []
    for i, o in enumerate(outs):
        seed = np.zeros((k,) + shape, np.result_type(plain(o)))
        seed[i] = 1
        seeds.append(seed)
    diagonals = tree_flatten(pull.batched(seeds, (k,)))[0]
    n = math.prod(shape)
    blocks = []
    for i in range(k):
        row = []
        for d in diagonals:
            d = np.reshape(d[i], (n,))
            full = np.eye(n, dtype=np.result_type(plain(d))) * d if isinstance(
                d, Tracked) else np.diagflat(d)
            row.append(np.reshape(full, shape + shape))
        blocks.append(row)
    return blocks


def hessian(f, argnums=0, chunk_size=None):
    """The Hessian of scalar-valued ``f`` with respect to argument(s) ``argnums``: the
    Jacobian of its gradient, reverse over reverse, all rows in one batched pass (at most
    ``chunk_size`` per pass). For one argument ``H.shape == x.shape + x.shape``; for a
    tuple of argnums ``H[i][j]`` is the block of arguments ``i`` and ``j``.

    >>> pb.hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 3.0]))
    array([[6., 2.],
           [2., 0.]])
    """
    return jacobian(grad(f, argnums), argnums, chunk_size)


def hvp(f, primals, tangents, argnums=None):
    """The Hessian-vector products ``H @ v`` of scalar-valued ``f`` at ``primals``, one per
    differentiated primal (all of them unless ``argnums`` says otherwise; ``tangents`` has
    one entry per differentiated primal), without forming ``H``: the pullback of the
    gradient (reverse over reverse; the Hessian is symmetric).

    >>> (Hv,) = pb.hvp(lambda x: np.sum(x ** 3), (np.array([1.0, 2.0]),), (np.ones(2),))
    >>> Hv
    array([ 6., 12.])
    """
    fname = _fname(f)
    primals = tuple(primals)
    if argnums is None:
        argnums = tuple(range(len(primals)))
    single, nums = normalize_argnums(argnums, len(primals), fname)
    gf = grad(f, nums)
    trace, outs, out_def = _linearize(gf, primals, {}, nums)
    cts = VJP(trace, outs, out_def, fname)(tuple(tangents))
    return cts[0] if single else cts


# ---------------------------------------------------------------------------- checkpoint

def _live_box(x):
    while isinstance(x, Tracked) and x.level not in _live:
        x = x.value
    return x


def _levels(tree):
    """The live levels anywhere in the boxes of ``tree``'s leaves."""
    found = set()
    for x in tree_flatten(tree)[0]:
        while isinstance(x, Tracked):
            if x.level in _live:
                found.add(x.level)
            x = x.value
    return found


def checkpoint(f):
    """``f`` with the same values and gradients, whose intermediates are not kept: the
    graph records one node per call, and the backward pass runs ``f`` again (with NumPy's
    global random state as it was) to pull back through it. Over a chain of ``n`` layers,
    checkpointing segments of about ``sqrt(n)`` layers holds about ``sqrt(n)`` layers'
    intermediates instead of ``n``.

    Every tracked value ``f`` uses must reach it as an argument (pytrees are fine): a
    tracked value it closes over raises TypeError.

    >>> block = pb.checkpoint(lambda h, W: np.tanh(h @ W))
    >>> g = pb.grad(lambda W: np.sum(block(block(x, W), W)))(W)
    """
    fname = _fname(f)

    @functools.wraps(f)
    def checkpointed(*args, **kwargs):
        if dispatch._no_grad_blocks and core._state.no_grad:
            return f(*args, **kwargs)
        leaves, treedef = tree_flatten((args, kwargs))
        leaves = [_live_box(x) for x in leaves]
        top = max((x.level for x in leaves if isinstance(x, Tracked)), default=None)
        if top is None:
            return f(*args, **kwargs)
        mine = [k for k, x in enumerate(leaves) if isinstance(x, Tracked) and x.level == top]
        vals = list(leaves)
        for k in mine:
            vals[k] = leaves[k].value
        state = np.random.get_state()
        a, kw = tree_unflatten(treedef, vals)
        out = f(*a, **kw)
        outs, out_def = tree_flatten(out)
        if any(lvl >= top for lvl in _levels(outs)):
            raise TypeError(
                f"pullback: checkpoint({fname}): the function uses a tracked value that is "
                "not one of its arguments (a closure or a global); pass it as an argument"
            )

        def checkpoint_pullback(g):
            gs = list(g) if hub else [g]
            now = np.random.get_state()
            np.random.set_state(state)
            try:
                with Frame() as frame:
                    boxed = list(vals)
                    for k in mine:
                        boxed[k] = make_leaf(vals[k], frame.level, f"argument of {fname}")
                    a, kw = tree_unflatten(treedef, boxed)
                    again = tree_flatten(f(*a, **kw))[0]
            finally:
                np.random.set_state(now)
            roots, seeds, batch = [], [], ()
            for o, s in zip(again, gs):
                node = peel(o, frame.level)
                if node is not None:
                    roots.append(node)
                    seeds.append(s)
                    batch = shape_of(s)[:len(shape_of(s)) - len(shape_of(o))]
            found = core.backward_pass(roots, seeds, batch, False) if roots else {}
            cts = [None] * len(leaves)
            for k in mine:
                ct = found.get(boxed[k])
                cts[k] = None if ct is None else strip(ct)
            return tuple(cts)

        checkpoint_pullback.__qualname__ = f"checkpoint_pullback({fname})"
        hub = not (len(outs) == 1 and out_def is None)
        if not hub:
            return Tracked(out, top, tuple(leaves), checkpoint_pullback) if _inexact(out) else out
        node = Tracked(tuple(outs), top, tuple(leaves), checkpoint_pullback)
        picks = [Tracked(o, top, node, Pick(i)) if _inexact(o) else o for i, o in enumerate(outs)]
        return tree_unflatten(out_def, picks)

    return checkpointed


# ------------------------------------------------------------- hook, stop_gradient, nobacksies

def hook(fn, x):
    """``x`` itself, except that on the way back the cotangent of ``x`` is ``fn`` of the
    cotangent of the result (at every level of nested differentiation). ``fn`` gets a
    cotangent that may carry leading batch axes (Jacobians), so write it elementwise or
    with ``...``; it must use NumPy calls for its result to be differentiable again.

    >>> clipped = lambda x: pb.hook(lambda g: np.clip(g, -1.0, 1.0), x)
    >>> pb.grad(lambda x: np.sum(5.0 * clipped(x)))(np.zeros(2))
    array([1., 1.])
    """
    if dispatch._no_grad_blocks and core._state.no_grad:
        return plain(x)
    x = _live_box(x)
    if not isinstance(x, Tracked):
        return x

    def hook_pullback(g):
        return (fn(g),)

    hook_pullback.__qualname__ = f"hook_pullback({_fname(fn)})"
    return Tracked(hook(fn, x.value), x.level, (x,), hook_pullback)


def stop_gradient(x):
    """``x`` as a constant: the plain value under every box, so no gradient flows through
    it at any level (Tracker's ``data(x)``). Works on pytrees.

    >>> pb.grad(lambda x: x * pb.stop_gradient(x))(3.0)
    3.0
    """
    return tree_map(plain, x)


def nobacksies(rule):
    """Mark a rule whose pullback must not be differentiated again (decorator, under
    ``@pb.rrule(f)``): first derivatives work, and the pullback runs on plain values (so
    it may call anything); differentiating its result (a second derivative of ``f``, or
    forward mode, which differentiates pullbacks) raises NestedDifferentiationError.

    >>> @pb.rrule(softplus)
    ... @pb.nobacksies
    ... def softplus_rule(x):
    ...     def softplus_pullback(g):
    ...         return (g * scipy.special.expit(x),)
    ...     return softplus(x), softplus_pullback
    """

    @functools.wraps(rule)
    def nobacksies_rule(*args, **kwargs):
        out, pullback = rule(*args, **kwargs)
        below = _levels((args, kwargs))

        def nobacksies_pullback(g):
            levels = sorted(lvl for lvl in below | _levels(g) if lvl in _live)
            with core.no_grad():
                cts = pullback(tree_map(plain, g))
            return tuple(_poison(c, levels, nobacksies_rule) for c in cts)

        nobacksies_pullback.__qualname__ = getattr(pullback, "__qualname__", "pullback")
        return out, nobacksies_pullback

    return nobacksies_rule


def _poison(ct, levels, rule):
    """``ct`` boxed at ``levels`` by nodes whose pullback raises (a thunk stays a thunk,
    run without recording)."""
    if ct is None:
        return None
    if callable(ct):
        def nobacksies_thunk():
            with core.no_grad():
                value = ct()
            return _poison(value, levels, rule)

        return nobacksies_thunk
    if type(ct) in (list, tuple):
        return type(ct)(_poison(c, levels, rule) for c in ct)

    def nobacksies_raise(g):
        raise NestedDifferentiationError(
            f"pullback: the rule for {_owner(rule)} is marked nobacksies, so its pullback "
            "cannot be differentiated again (a second derivative, or forward mode, of it "
            "was asked for)"
        )

    if levels:
        ct = np.asarray(ct)
    for level in levels:
        ct = Tracked(ct, level, (), nobacksies_raise)
    return ct


def _owner(rule):
    """The name of the function ``rule`` is registered for (directly or per slice)."""
    for func, r in core._rules.items():
        try:
            cells = [c.cell_contents for c in getattr(r, "__closure__", None) or ()]
        except ValueError:  # an empty cell
            cells = []
        if r is rule or any(c is rule for c in cells):
            return core._name(func)
    return getattr(rule, "__qualname__", "a function")
