"""Higher-order transforms, all built on ``backward.linearize`` and its backward pass.

Forward mode comes from the reverse rules, with no second table: a pullback is linear in
its cotangent, so differentiating ``u -> vjp_f(u)`` (recorded at a fresh level) and
pulling a tangent ``v`` back through it gives ``J v`` (the "double vjp"). Jacobians and
Hessians push a whole stack of basis vectors through the recorded graph in one pass, as a
leading batch axis.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ._engine.arguments import (
    described,
    dtype_of,
    function_named,
    is_value,
    normalize_argnums,
    path_of,
    require_outputs,
)
from ._engine.backend import on_backend
from ._engine.core import Tracked, box_at, plain
from ._engine.methods import is_complex, is_inexact, shape_of
from ._engine.vjp import VJP, as_result, linearize, strip
from .api import named_grad
from .tree import StructureMismatch, leaves_by, plural, tree_flatten, tree_unflatten

__all__ = ["jvp", "jacobian", "jacfwd", "hessian", "hvp"]


# ---------------------------------------------------------------------------- helpers

def _basis(shapes, dtypes, start, stop, likes):
    """Rows ``start:stop`` of the identity over the concatenated, flattened ``shapes``,
    cut back into one array per shape, each with a leading axis of ``stop - start``, on
    the array library of its ``likes`` entry (the output or input it stands for)."""
    rows = stop - start
    if len(shapes) == 1 and start == 0 and stop == math.prod(shapes[0]):
        return [on_backend(np.eye(rows, dtype=dtypes[0]).reshape((rows,) + shapes[0]),
                           likes[0])]
    out, offset = [], 0
    for shape, dtype, like in zip(shapes, dtypes, likes):
        size = math.prod(shape)
        block = np.zeros((rows, size), dtype)
        lo, hi = max(start, offset), min(stop, offset + size)
        if lo < hi:
            block[np.arange(lo - start, hi - start), np.arange(lo - offset, hi - offset)] = 1
        out.append(on_backend(block.reshape((rows,) + shape), like))
        offset += size
    return out


def _require_chunk_size(chunk_size, transform, unit):
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(
            chunk_size, numbers.Integral) or chunk_size < 1):
        raise ValueError(f"pullback: {transform}'s chunk_size must be a positive integer "
                         f"({unit}) or None for all at once, got {chunk_size!r}")


def _chunks(total, chunk_size):
    step = (total or 1) if not chunk_size else max(1, int(chunk_size))  # (a size-0 output)
    return [(a, min(a + step, total)) for a in range(0, total, step)] or [(0, 0)]


def _stack(parts):
    """Chunks joined along the leading (batch) axis."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def _assemble(out_def, lin, blocks, single):
    """The Jacobian's structure: the output's pytree, inside each output leaf the
    argument (a tuple for a tuple of argnums), inside it the argument's pytree."""
    per_out = []
    for row in blocks:
        it = iter(row)
        parts = [tree_unflatten(treedef, [_in_dtype_of(next(it), x) for x in flat])
                 for treedef, flat, _ in lin.inputs]
        per_out.append(parts[0] if single else tuple(parts))
    return tree_unflatten(out_def, per_out)


def _in_dtype_of(block, x):
    """A Jacobian block in the dtype of its argument ``x`` (its complex counterpart for a
    complex block of a real argument), as the gradient is: reverse and forward mode, and
    the diagonal shortcut, agree (JAX's jacrev gives the argument's dtype too)."""
    dtype, want = dtype_of(block), dtype_of(x)
    if dtype.kind == "c" and want.kind != "c":
        want = np.result_type(want, np.complex64)
    return block if dtype == want else block.astype(want)


def _require_real(values, fname, what, fix):
    if any(dtype_of(v).kind == "c" for v in values):
        raise TypeError(f"pullback: {fname} has complex {what}; {fix}")


def _require_tuples(fname, transform, primals, tangents, example):
    """``primals`` and ``tangents`` must be sequences with one entry per argument: an
    array would be split into its rows by ``tuple()``."""
    for name, given in (("primals", primals), ("tangents", tangents)):
        if isinstance(given, (np.ndarray, np.generic, Tracked, numbers.Number, dict, str,
                              bytes)) or not isinstance(given, Iterable):
            raise TypeError(
                f"pullback: {transform} of {fname} takes {name} as a tuple with one entry per "
                f"argument of {fname}, got {described(given)}; write {example} for "
                "one argument"
            )


def _tangent_leaves(fname, transform, primals, tangents, nums, argnums=None):
    """The leaves of ``tangents``, one pytree per differentiated primal (``nums``), in the
    order of their primals' leaves (a dict's by key), each checked against its primal
    where it comes in: its structure, and per leaf None or a str, the shape, a complex
    tangent of a real primal."""
    if len(tangents) != len(nums):
        per = ("primal" if argnums is None else
               f"differentiated primal (argnums={argnums!r})")
        raise TypeError(
            f"pullback: {transform} of {fname} takes one tangent per {per}: "
            f"{plural(len(nums), 'primal')}, got {plural(len(tangents), 'tangent')}"
        )
    leaves = []
    for j, (i, t) in enumerate(zip(nums, tangents)):
        p = primals[i]
        flat_p, pdef = tree_flatten(p)
        try:
            flat_t = leaves_by(pdef, t)
        except StructureMismatch as m:
            raise TypeError(
                f"pullback: tangent {j} for {transform} of {fname} must have primal {i}'s "
                f"structure: at primal {i}{m.path} it has {m.want}, the tangent {m.got}"
            ) from None
        for k, (x, v) in enumerate(zip(flat_p, flat_t)):
            at = "" if pdef is None else path_of(p, k)
            tangent, primal = f"tangent {j}{at} for {transform} of {fname}", f"primal {i}{at}"
            if not is_value(v) or dtype_of(v).kind not in "biufc":
                raise TypeError(f"pullback: {tangent} is {described(v)}; pass an array of "
                                f"{primal}'s shape {shape_of(x)}" + (
                                    " holding numbers" if is_value(v) else ""))
            if shape_of(v) != shape_of(x):
                raise ValueError(f"pullback: {tangent} has shape {shape_of(v)}, but {primal} "
                                 f"has shape {shape_of(x)}")
            if is_complex(v) and not is_complex(x):
                raise TypeError(
                    f"pullback: {tangent} is complex but {primal} is real: the imaginary "
                    "part would be dropped. Pass a real tangent (np.real(v)), or a complex "
                    "primal (x * (1 + 0j))."
                )
        leaves.extend(flat_t)
    return leaves


# ---------------------------------------------------------------------------- forward mode

def _tangent_pullback(pull, outs, fname):
    """Record ``u -> pull(u)`` at a fresh level, at ``u`` = ones (a nonzero point, so that
    no "zero cotangent gives zero" mask fires): a VJP whose pullback maps tangents of the
    inputs to tangents of the outputs, and the indices of the outputs it covers."""
    live = [k for k, o in enumerate(outs) if is_inexact(o)]

    def pull_live(u_live):
        boxes = iter(u_live)
        return pull([next(boxes) if is_inexact(o) else on_backend(np.zeros(shape_of(o)), o)
                     for o in outs])

    ulin, flat, _ = linearize(pull_live, ([np.ones_like(plain(outs[k])) for k in live],),
                              {}, (0,))
    return VJP(ulin, flat, fname), live


def jvp(f: Callable[..., Any], primals: Iterable[Any],
        tangents: Iterable[Any]) -> tuple[Any, Any]:
    """``(out, tangent_out)``: ``f(*primals)`` and the Jacobian-vector product
    ``J @ tangents`` (forward mode), from the same reverse rules (differentiating the
    pullback with respect to its cotangent). ``primals`` and ``tangents`` are tuples of
    pytrees of the same structure; ``tangent_out`` has the structure of ``out``.

    >>> out, t = pb.jvp(lambda x, y: np.sin(x) * y, (0.0, 2.0), (1.0, 0.0))
    >>> out, t
    (np.float64(0.0), np.float64(2.0))
    """
    fname = function_named(f, "pb.jvp")
    _require_tuples(fname, "jvp", primals, tangents, "pb.jvp(f, (x,), (v,))")
    primals, tangents = tuple(primals), tuple(tangents)
    flat_t = _tangent_leaves(fname, "jvp", primals, tangents, range(len(primals)))
    lin, outs, out_def = linearize(f, primals, {}, range(len(primals)))
    require_outputs(outs, fname, integers=True, out_def=out_def)
    pull = VJP(lin, outs, fname)
    value = tree_unflatten(out_def, [strip(o) for o in outs])
    upull, live = _tangent_pullback(pull, outs, fname)
    (dus,) = upull(flat_t)
    it = iter(dus)
    tangent_out = [as_result(next(it), v) if k in live else on_backend(np.zeros(shape_of(o)), o)
                   for k, (o, v) in enumerate(zip(outs, tree_flatten(value)[0]))]
    return value, tree_unflatten(out_def, tangent_out)


# ---------------------------------------------------------------------------- Jacobians

def jacobian(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
             chunk_size: int | None = None) -> Callable[..., Any]:
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
    fname = function_named(f, "pb.jacobian")
    _require_chunk_size(chunk_size, "jacobian", "rows per backward pass")

    @functools.wraps(f)
    def jacobian_f(*args: Any, **kwargs: Any) -> Any:
        single, nums = normalize_argnums(argnums, len(args), fname)
        lin, outs, out_def = linearize(f, args, kwargs, nums)
        require_outputs(outs, fname, complex_fix="take np.real/np.imag of them, or use pb.vjp",
                        out_def=out_def)
        pull = VJP(lin, outs, fname)
        if single and out_def is None and not chunk_size and len(lin.inputs[0][2]) == 1 \
                and lin.inputs[0][0] is None and shape_of(outs[0]) != shape_of(args[nums[0]]):
            # one array in, one array out of another shape (so not a diagonal), one pass:
            # no blocks to split and reassemble
            shape = shape_of(outs[0])
            n = math.prod(shape)
            seed = np.zeros((n, n), dtype_of(outs[0]))
            seed.flat[::n + 1] = 1
            (rows,) = pull.batched(on_backend(seed.reshape((n,) + shape), outs[0]), (n,))
            return _in_dtype_of(rows.reshape(shape + shape_of(rows)[1:]), args[nums[0]])
        diagonal = _diagonal(lin, outs)
        if diagonal is not None:
            return _assemble(out_def, lin, _diagonal_blocks(pull, outs, diagonal), single)
        shapes = [shape_of(o) for o in outs]
        dtypes = [dtype_of(o) for o in outs]
        sizes = [math.prod(s) for s in shapes]
        parts = []
        for a, b in _chunks(sum(sizes), chunk_size):
            seeds = _basis(shapes, dtypes, a, b, outs)
            cts = pull.batched(seeds, (b - a,))
            parts.append(tree_flatten(cts)[0])
        rows = [_stack(p) for p in zip(*parts)]  # per input leaf: (outputs,) + x.shape
        blocks, offset = [], 0
        for shape, size in zip(shapes, sizes):
            blocks.append([r[offset:offset + size].reshape(shape + shape_of(r)[1:])
                           for r in rows])
            offset += size
        return _assemble(out_def, lin, blocks, single)

    return jacobian_f


def jacfwd(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
           chunk_size: int | None = None) -> Callable[..., Any]:
    """The Jacobian of ``f`` with respect to argument(s) ``argnums``, in forward mode: the
    double vjp pushes every input direction through at once (at most ``chunk_size`` per
    pass). Same result and structure as ``jacobian``; cheapest when the input is smaller
    than the output. The differentiated arguments must be real.

    >>> J = pb.jacfwd(lambda x: np.stack([x[0] * x[1], np.sin(x[1])]))(np.array([2.0, 0.0]))
    >>> J
    array([[0., 2.],
           [0., 1.]])
    """
    fname = function_named(f, "pb.jacfwd")
    _require_chunk_size(chunk_size, "jacfwd", "columns per forward pass")

    @functools.wraps(f)
    def jacfwd_f(*args: Any, **kwargs: Any) -> Any:
        single, nums = normalize_argnums(argnums, len(args), fname)
        lin, outs, out_def = linearize(f, args, kwargs, nums)
        require_outputs(outs, fname, out_def=out_def)
        leaves = [x for _, flat, _ in lin.inputs for x in flat]
        _require_real(leaves, fname, "arguments", "use pb.jacobian or pb.vjp")
        pull = VJP(lin, outs, fname)
        # the diagonal shortcut pulls back in reverse mode, which keeps only the real part
        # of a cotangent for a real argument: a complex output takes the double vjp
        diagonal = None if any(is_complex(o) for o in outs) else _diagonal(lin, outs)
        if diagonal is not None:
            return _assemble(out_def, lin, _diagonal_blocks(pull, outs, diagonal), single)
        upull, live = _tangent_pullback(pull, outs, fname)
        shapes = [shape_of(x) for x in leaves]
        dtypes = [dtype_of(x) for x in leaves]
        sizes = [math.prod(s) for s in shapes]
        parts = []
        for a, b in _chunks(sum(sizes), chunk_size):
            (dus,) = upull.batched(_basis(shapes, dtypes, a, b, leaves), (b - a,))
            parts.append(dus)
        cols = iter([_stack(p) for p in zip(*parts)])  # per live output: (inputs,) + shape
        blocks = []
        for k, o in enumerate(outs):
            shape = shape_of(o)
            if k not in live:
                blocks.append([on_backend(np.zeros(shape + s), o) for s in shapes])
                continue
            col = np.moveaxis(next(cols), 0, -1)
            row, offset = [], 0
            for s, size in zip(shapes, sizes):
                row.append(np.reshape(col[..., offset:offset + size], shape + s))
                offset += size
            blocks.append(row)
        return _assemble(out_def, lin, blocks, single)

    return jacfwd_f


def _diagonal(lin, outs):
    """The shape ``S`` when every differentiated input and every output has shape ``S`` and
    every operation recorded between them is an elementwise table row on arrays of shape
    ``S``: then output element ``i`` depends on element ``i`` of the inputs only, so each
    Jacobian block is diagonal. Else None."""
    level = lin.level
    boxes = [b for _, _, bs in lin.inputs for b in bs]
    if not boxes:
        return None
    shape = shape_of(boxes[0])
    stack = [box_at(o, level) for o in outs]
    if any(shape_of(b) != shape for b in boxes) or any(
            n is None or shape_of(n) != shape for n in stack):
        return None
    seen = set()
    while stack:
        node = stack.pop()
        if id(node) in seen or node.rule is None:
            continue
        seen.add(id(node))
        if not node.rule.elementwise:
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
        seeds.append(on_backend(seed, o))
    diagonals = tree_flatten(pull.batched(seeds, (k,)))[0]
    n = math.prod(shape)
    blocks = []
    for i in range(k):
        row = []
        for d in diagonals:
            d = np.reshape(d[i], (n,))
            # zeros off the diagonal even where d is not finite (np.sqrt's derivative at 0)
            full = np.where(np.eye(n, dtype=bool), d, np.zeros((), np.result_type(plain(
                d)))) if isinstance(d, Tracked) else np.diagflat(d)
            row.append(np.reshape(full, shape + shape))
        blocks.append(row)
    return blocks


def hessian(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
            chunk_size: int | None = None) -> Callable[..., Any]:
    """The Hessian of scalar-valued ``f`` with respect to argument(s) ``argnums``: the
    Jacobian of its gradient, reverse over reverse, all rows in one batched pass (at most
    ``chunk_size`` per pass). For one argument ``H.shape == x.shape + x.shape``; for a
    tuple of argnums ``H[i][j]`` is the block of arguments ``i`` and ``j``.

    >>> pb.hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 3.0]))
    array([[6., 2.],
           [2., 0.]])
    """
    fname = function_named(f, "pb.hessian")
    _require_chunk_size(chunk_size, "hessian", "rows per backward pass")
    hessian_of = jacobian(named_grad(f, argnums, False, True, "hessian"), argnums, chunk_size)

    @functools.wraps(f)
    def hessian_f(*args: Any, **kwargs: Any) -> Any:
        for i in normalize_argnums(argnums, len(args), fname)[1]:
            if any(is_complex(leaf) for leaf in tree_flatten(args[i])[0]):
                raise TypeError(
                    f"pullback: pb.hessian of {fname} needs real arguments, and argument {i} "
                    "is complex (the gradient of a real function of it is complex, whose "
                    "Jacobian is no Hessian). Use pb.hvp for Hessian-vector products, or "
                    "differentiate with respect to the real and imaginary parts: "
                    "f(x + 1j * y) of real x and y")
        return hessian_of(*args, **kwargs)

    return hessian_f


def hvp(f: Callable[..., Any], primals: Iterable[Any], tangents: Iterable[Any],
        argnums: int | Sequence[int] | None = None) -> Any:
    """The Hessian-vector products ``H @ v`` of scalar-valued ``f`` at ``primals``, one per
    differentiated primal (all of them unless ``argnums`` says otherwise; ``tangents`` has
    one entry per differentiated primal), without forming ``H``: the pullback of the
    gradient (reverse over reverse; the Hessian is symmetric).

    >>> (Hv,) = pb.hvp(lambda x: np.sum(x ** 3), (np.array([1.0, 2.0]),), (np.ones(2),))
    >>> Hv
    array([ 6., 12.])
    """
    fname = function_named(f, "pb.hvp")
    _require_tuples(fname, "hvp", primals, tangents, "pb.hvp(f, (x,), (v,))")
    primals = tuple(primals)
    if argnums is None:
        argnums = tuple(range(len(primals)))
    single, nums = normalize_argnums(argnums, len(primals), fname)
    # hvp is the pullback of the gradient: a tangent is checked against its primal here,
    # where its mistakes are the tangent's, not a cotangent's of the gradient
    tangents = tuple(tangents)
    _tangent_leaves(fname, "hvp", primals, tangents, nums,
                    None if argnums == tuple(range(len(primals))) else argnums)
    gf = named_grad(f, nums, False, True, "hvp")
    lin, outs, out_def = linearize(gf, primals, {}, nums)
    cts = VJP(lin, outs, fname, out_def)(tangents[0] if single else tangents)
    return cts[0] if single else cts
