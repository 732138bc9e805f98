"""The exact rewrites of a ``Program`` (program.py), before emit.py writes it out.

``share`` maps a call made again with the same arguments to its first node. The rules'
NumPy calls, recorded one level up, carry steps that eager code needs and a program for
one input structure does not: ``np.broadcast_to`` before a ufunc that broadcasts anyway,
``astype`` to the dtype the array has, a multiply by a constant one, ``np.size`` of values
whose shape the cache key fixes, the identity basis of a Jacobian multiplied in:
``simplify`` maps such nodes to what they equal or to a cheaper call. Each rewrite relies
on shapes and dtypes (fixed by the key, as far as ``_static`` proves it) and on IEEE
arithmetic (``x * 1 == x``), never on a traced value; as a check of that reasoning it is
also evaluated on the traced values and kept only if it gives the same bits.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .._engine.core import Tracked
from .._engine.interception import original_of
from .._engine.registry import getitem
from .bits import _same_bits
from .program import (
    _BY_ALL,
    _BY_FIRST,
    Program,
    _astype,
    _eye_product,
    _finite_number,
    _leaves,
)

# functions of shape and dtype alone
_SHAPE_ONLY = frozenset(original_of(f) for f in (
    np.shape, np.size, np.ndim, np.iscomplexobj, np.isrealobj))
# functions whose result is a new array (or an immutable scalar), never a view
_FRESH_FUNCS = frozenset(original_of(f) for f in (
    np.dot, np.outer, np.inner, np.where, np.sum, np.mean, np.prod, np.max, np.min, np.amax,
    np.amin, np.cumsum, np.concatenate, np.stack)) | {_astype, _eye_product}


def _arrays(x, out):
    if isinstance(x, np.ndarray):
        out.append(x)
    elif type(x) in (list, tuple):
        for a in x:
            _arrays(a, out)
    elif type(x) is dict:
        _arrays(tuple(x.values()), out)
    return out


def _ufunc_method(func):
    owner = getattr(func, "__self__", None)
    return isinstance(owner, np.ufunc) and getattr(func, "__name__", "") in (
        "reduce", "accumulate", "outer", "reduceat")


def _fresh(node):
    """Whether a node's result is always a new array (never a view of an argument)."""
    func, _, kwargs = node
    if func is _astype and kwargs.get("copy", True) is not True:
        return False
    return isinstance(func, np.ufunc) or _ufunc_method(func) or func in _FRESH_FUNCS


def _static(func, args, kwargs, static):
    """Whether a node's shape and dtype follow from the cache key: from the shapes and
    dtypes of nodes that are static themselves, never from a value (``x[x > 0]``)."""
    traced = _leaves((args, kwargs), [])
    if not all(id(a) in static for a in traced):
        return False
    if isinstance(func, np.ufunc) or func in _BY_ALL:
        return func is not original_of(np.where) or len(args) == 3  # np.where(c): nonzero
    first = args[0] if args else None
    rest = [a for a in traced if a is not first]
    if rest:
        return False
    if func is getitem:
        return not any(isinstance(p, (np.ndarray, list)) for p in (
            args[1] if type(args[1]) is tuple else (args[1],)))
    return _ufunc_method(func) or func in _BY_FIRST or func in _SHAPE_ONLY


def _private_arrays(events):
    """The ids of the constant arrays only the trace holds (made by the rules during it,
    as a Jacobian's basis): no one else can change them, so their values may be relied
    on. Arrays the user holds (attributes, default arguments) are read at each call."""
    counts: dict[int, list[Any]] = {}
    probe = np.empty(0)
    counts[id(probe)] = [probe, 0]  # held by its entry alone: the baseline count
    del probe
    for e in events:
        if isinstance(e, Tracked) and e.args is not None:
            stack = [e.args[1], tuple(e.args[2].values())]
            while stack:
                for a in stack.pop():
                    if type(a) in (list, tuple):
                        stack.append(a)
                    elif type(a) is np.ndarray:
                        counts.setdefault(id(a), [a, 0])[1] += 1
    extra = {k: sys.getrefcount(a) - n for k, (a, n) in counts.items()}
    baseline = extra.pop(next(iter(counts)))
    private = set()
    for k, (a, _) in counts.items():
        if extra.get(k) == baseline and _owned_memory(a.base, baseline):
            private.add(k)
    return private


def _owned_memory(base, baseline):
    """Whether a private array's base (the array owning its memory) is held by it alone."""
    if base is None:
        return True
    # references: the view's .base, this frame's argument, and what the baseline counts
    return type(base) is np.ndarray and base.base is None and (
        sys.getrefcount(base) == baseline)


def _value(x):
    return x.value if isinstance(x, Tracked) else x


def _constant(x, value, private=frozenset()):
    """Whether ``x`` is a constant (not a node) holding ``value`` everywhere: a number, or
    an array only the trace holds."""
    if isinstance(x, Tracked) or not isinstance(x, (int, float, np.ndarray, np.generic)):
        return False
    if isinstance(x, np.ndarray) and id(x) not in private:
        return False
    if isinstance(x, bool) or np.size(x) == 0:
        return False
    x = np.asarray(x)
    return x.dtype.kind in "biuf" and bool(np.all(x == value)) and (
        value != 0 or x.dtype.kind != "f" or not np.signbit(x).any())


def _identity_of(x, kinds, private):
    """For a ufunc node ``(func, args)``: the argument it equals, when the other is a
    constant that leaves it unchanged in IEEE arithmetic (``x * 1``, ``x / 1``,
    ``x - 0``, ``x ** 1``; ``x + 0`` for integers only, as ``-0.0 + 0.0`` is ``0.0``)."""
    func, args = x
    if len(args) != 2:
        return None
    a, b = args
    if func is np.multiply:
        if _constant(b, 1, private):
            return a
        if _constant(a, 1, private):
            return b
    if func in (np.true_divide, np.power) and _constant(b, 1, private):
        return a
    if func is np.subtract and _constant(b, 0, private):
        return a
    if func is np.add and kinds <= set("iu"):
        if _constant(b, 0, private):
            return a
        if _constant(a, 0, private):
            return b
    return None


def _eye_operand(func, args, private):
    """For ``eye @ x`` or ``x @ eye`` with a constant identity matrix: ``(x, eye, left)``."""
    if func is not np.matmul or len(args) != 2:
        return None
    for (c, x), left in ((args, True), (args[::-1], False)):
        if (isinstance(c, np.ndarray) and id(c) in private and isinstance(x, Tracked)
                and c.ndim == 2
                and c.shape[0] == c.shape[1] and c.dtype.kind == "f"
                and bool(np.array_equal(c, np.eye(c.shape[0], dtype=c.dtype)))):
            return x, c, left
    return None


def _unit_free(shape):
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


_NUMPY_2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _broadcast_source(a, canon):
    """For a node ``np.broadcast_to(x, shape)``, or a reshape of ``x`` that adds or drops
    leading ones only, ``x``: what broadcasting against other operands makes of it."""
    if not isinstance(a, Tracked) or a.args is None:
        return None
    func, args, kwargs = a.args
    if len(args) != 2 or not isinstance(args[0], Tracked):
        return None
    source = canon(args[0])
    if not isinstance(source, Tracked):
        return None
    if original_of(func) is original_of(np.broadcast_to) and not kwargs:
        pass
    elif not (original_of(func) is original_of(np.reshape) and set(kwargs) <= {"order"}
              and _unit_free(np.shape(source.value)) == _unit_free(np.shape(a.value))):
        return None
    if not _NUMPY_2 and np.ndim(source.value) == 0 and np.ndim(a.value) > 0:
        return None  # NumPy 1 casts 0-d operands by their values
    return source


def _identity_view(func, args, kwargs, value):
    """Whether the node is ``x[:]`` or ``x.reshape(x.shape)``: a view of ``x`` as it is."""
    x = _value(args[0]) if args and isinstance(args[0], Tracked) else None
    if type(x) is not np.ndarray or type(value) is not np.ndarray or x.shape != value.shape:
        return False
    if func is getitem and not kwargs:
        index = args[1] if type(args[1]) is tuple else (args[1],)
        return len(index) <= x.ndim and all(
            type(p) is slice and all(type(v) in (int, type(None)) for v in (
                p.start, p.stop, p.step)) and p.indices(n) == (0, n, 1)
            for p, n in zip(index, x.shape))
    return original_of(func) is original_of(np.reshape) and len(args) == 2 and set(
        kwargs) <= {"order"}


_EXTREMA = frozenset(original_of(f) for f in (np.max, np.amax, np.min, np.amin))
_SUMS = frozenset({original_of(np.sum)})


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if type(axis) is tuple else (axis,)
    if not all(type(a) is int for a in axes):
        return None
    return tuple(sorted(a % ndim for a in axes)) if ndim else ()


def _reduction(x, kinds, canon):
    """For a node reducing an array over some axes (``np.max(x, axis=1)``, its ufunc's
    ``reduce``, no ``initial`` nor ``where``): ``(x, axes, keepdims)``."""
    if not isinstance(x, Tracked) or x.args is None:
        return None
    func, args, kwargs = x.args
    owner = getattr(func, "__self__", None)
    if original_of(func) in kinds or (isinstance(owner, np.ufunc) and func.__name__ == "reduce"
                                    and owner in kinds):
        if len(args) != 1 or not isinstance(args[0], Tracked) or set(kwargs) - {
                "axis", "keepdims"}:
            return None
        source = canon(args[0])
        if not isinstance(source, Tracked):
            return None
        axis = kwargs.get("axis", None if original_of(func) in kinds else 0)
        axes = _axes(axis, np.ndim(source.value))
        return None if axes is None else (source, axes, bool(kwargs.get("keepdims", False)))
    return None


def _kept(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _extremum_of(m, canon):
    """For ``m`` the max or min of ``x`` over ``axes``, with those axes kept as ones (by
    ``keepdims`` or a reshape): ``(x, axes)``."""
    if isinstance(m, Tracked) and m.args is not None and original_of(m.args[0]) is original_of(
            np.reshape) and len(m.args[1]) == 2 and isinstance(m.args[1][0], Tracked):
        inner = canon(m.args[1][0])
    else:
        inner = m
    found = _reduction(inner, _EXTREMA | {np.maximum, np.minimum}, canon)
    if found is None:
        return None
    x, axes, _ = found
    if np.shape(m.value) != _kept(np.shape(x.value), axes):
        return None
    return x, axes


def _of(x, func, canon):
    """The arguments of node ``x`` when it is a plain call of ufunc ``func``."""
    if isinstance(x, Tracked) and x.args is not None and x.args[0] is func and not x.args[2]:
        return tuple(canon(a) for a in x.args[1])
    return None


def _nan_of_extremum(p, q, canon):
    """Whether ``(p, q)`` is ``(isnan(x), isnan(m))`` with ``m`` an extremum of ``x``: a
    NaN in ``x`` makes its slice's extremum NaN, so ``p & q`` is ``p``."""
    (x,), (m,) = _of(p, np.isnan, canon) or (None,), _of(q, np.isnan, canon) or (None,)
    found = _extremum_of(m, canon) if m is not None else None
    return found is not None and x is found[0]


def _hits_every_slice(mask, axes, canon):
    """Whether ``mask`` is ``(x == m) | (isnan(x) [& isnan(m)])`` for ``m`` the extremum of
    ``x`` over ``axes``: true somewhere in every slice (the extremum is an element of it,
    or it is NaN and so is an element)."""
    parts = _of(mask, np.bitwise_or, canon) or _of(mask, np.logical_or, canon)
    if parts is None or len(parts) != 2:
        return False
    for eq, nan in (parts, parts[::-1]):
        pair = _of(eq, np.equal, canon)
        if pair is None or len(pair) != 2:
            continue
        for x, m in (pair, pair[::-1]):
            found = _extremum_of(m, canon)
            if found is None or found[0] is not x or found[1] != axes:
                continue
            nan_args = _of(nan, np.isnan, canon)
            if nan_args is not None and nan_args[0] is x:
                return True
            both = _of(nan, np.bitwise_and, canon) or _of(nan, np.logical_and, canon)
            if both is not None and len(both) == 2 and _nan_of_extremum(*both, canon):
                return True
    return False


def share(program: Program) -> None:
    """Map each node whose call repeats an earlier node's (the same function of the same
    nodes and constants) to that node: ``program.same``."""
    seen: dict[Any, Any] = {}
    for e in program.events:
        if isinstance(e, Tracked):
            first = seen.setdefault(_key_of(e.args, program.same), e)
            if first is not e:
                program.same[id(e)] = first


def _key_of(call, same):
    func, args, kwargs = call

    def k(x):
        if isinstance(x, Tracked):
            return ("n", id(same.get(id(x), x)))
        if type(x) is list or type(x) is tuple:
            return (type(x), tuple(k(a) for a in x))
        if type(x) is slice:
            return ("s", k(x.start), k(x.stop), k(x.step))
        if type(x) in (bool, int, float, complex, str) or x is None:
            return ("v", type(x), repr(x))
        return ("c", id(x))

    return (id(func), k(args), tuple((n, k(v)) for n, v in kwargs.items()))


def simplify(program: Program) -> None:
    """After ``share``: map a node to what it equals (another node or a constant:
    ``program.subst``) or to a cheaper call that gives the same result
    (``program.calls``)."""
    subst, nodes = program.subst, program.calls
    canon, mapped = program.canon, program.mapped
    boxes = [e for e in program.events if isinstance(e, Tracked) and canon(e) is e]
    private = _private_arrays(program.events)
    static = {id(b) for _, b in program.params}
    output_ids = {id(canon(o)) for o in program.outs if isinstance(o, Tracked)}
    users: dict[int, list[Any]] = {}
    for e in boxes:
        for a in _leaves(e.args[1:], []):
            users.setdefault(id(canon(a)), []).append(e)

    memo: dict[int, bool] = {}

    def escapes(e, depth=0):
        """Whether ``e``'s array may be seen outside the call: returned, or viewed by a
        node that is not a fresh computation and escapes itself."""
        if not isinstance(e.value, np.ndarray):
            return False  # a number: no one can write into it
        if id(e) not in memo:
            memo[id(e)] = depth > 20 or id(e) in output_ids or any(
                not _fresh(u.args) and escapes(u, depth + 1) for u in users.get(id(e), ()))
        return memo[id(e)]

    def accept(e, replacement):
        if _same_bits(_value(replacement), e.value):
            subst[id(e)] = replacement
            return True
        return False

    for e in boxes:
        func, args, kwargs = e.args
        args = mapped(args)
        kwargs = {k: mapped(v) for k, v in kwargs.items()}
        if _static(func, args, kwargs, static):
            static.add(id(e))
        traced = _leaves((args, kwargs), [])
        arrays = [a for a in _arrays((args, kwargs), []) if id(a) not in private]
        if not traced and not arrays and (
                isinstance(func, np.ufunc) or _ufunc_method(func) or func is getitem
                or func in _BY_FIRST | _BY_ALL | _SHAPE_ONLY):
            if not isinstance(e.value, np.ndarray) or not escapes(e):
                if accept(e, e.value):  # a function of constants: its value
                    private.add(id(e.value))
            continue
        if func in _SHAPE_ONLY and id(e) in static:
            accept(e, e.value)  # of the shape and dtype, which the key fixes
            continue
        if id(e) in static and _identity_view(func, args, kwargs, e.value):
            accept(e, args[0])  # x[:], x.reshape(x.shape): x
            continue
        if (id(e) in static and original_of(func) is original_of(np.reshape) and len(args) == 2
                and set(kwargs) <= {"order"}):
            # np.sum(x, axis, keepdims=True).reshape(without those axes): keepdims=False
            found = _reduction(args[0], _EXTREMA | _SUMS | {np.add, np.maximum, np.minimum},
                               canon)
            if found is not None and found[2] and len(users.get(id(args[0]), ())) == 1:
                x, axes, _ = found
                shape = tuple(n for i, n in enumerate(np.shape(x.value)) if i not in axes)
                r_func, r_args, r_kwargs = args[0].args
                call = (r_func, (x,), {**r_kwargs, "keepdims": False})
                if np.shape(e.value) == shape and id(args[0]) not in output_ids and _same_bits(
                        r_func(x.value, **call[2]), e.value):
                    nodes[id(e)] = call
            continue
        if (original_of(func) is original_of(np.where) and len(args) == 3 and not kwargs
                and id(e) in static and not escapes(e)):
            for flag, chosen in ((True, args[1]), (False, args[2])):
                if _constant(args[0], flag, private) and accept(e, chosen):
                    break  # np.where with a constant condition: the side it takes
            continue
        if not isinstance(func, np.ufunc) or kwargs or id(e) not in static:
            continue
        if (func is np.isfinite and len(args) == 1 and isinstance(args[0], Tracked)
                and type(args[0].value) in (np.float16, np.float32, np.float64)
                and id(e) not in users and id(e) not in output_ids):
            nodes[id(e)] = (_finite_number, args, {})  # read by guards alone
            continue
        # (np.result_type of a list reads it as a structured dtype: its array's dtype)
        kinds = {np.result_type(np.asarray(v) if type(v := _value(a)) in (list, tuple)
                                else v).kind for a in args}
        if func in (np.bitwise_and, np.logical_and) and len(args) == 2 and any(
                _nan_of_extremum(p, q, canon) and accept(e, p)
                for p, q in (args, args[::-1])):
            continue  # isnan(x) & isnan(max(x)): isnan(x)
        if (func is np.maximum and len(args) == 2 and _constant(args[1], 1)
                and type(args[1]) is int):
            # np.maximum(count, 1) of a count that is at least one: the count
            found = _reduction(args[0], _SUMS | {np.add}, canon)
            if (found is not None and found[2]
                    and _hits_every_slice(found[0], found[1], canon) and accept(e, args[0])):
                continue
        if func is np.add and len(args) == 2 and kinds <= set("fiuc"):  # a + (-b): a - b
            for a, b in (args, args[::-1]):
                negated = _of(b, np.negative, canon)
                if negated is not None and len(negated) == 1 and _same_bits(
                        np.subtract(_value(a), _value(negated[0])), e.value):
                    nodes[id(e)] = (np.subtract, (a, negated[0]), {})
                    break
            if id(e) in nodes:
                continue
        same = _identity_of((func, args), kinds, private)
        if (same is not None and isinstance(same, Tracked) and id(same) in static
                and kinds <= set("fiu") and not escapes(e) and accept(e, same)):
            continue
        if (func is np.power and len(args) == 2 and _constant(args[1], 0, private)
                and isinstance(args[0], Tracked) and kinds <= set("fiu")
                and not isinstance(e.value, np.ndarray)):
            accept(e, e.value)  # x ** 0 is 1 for every x, NaN included
            continue
        eye = _eye_operand(func, args, private)
        if eye is not None and id(eye[0]) in static and eye[0].value.dtype == e.value.dtype \
                and eye[0].value.shape == e.value.shape:
            if _same_bits(_eye_product(eye[0].value, eye[1], eye[2]), e.value):
                nodes[id(e)] = (_eye_product, eye, {})
            continue
        # a broadcast_to (or a reshape adding leading ones) that the ufunc's own
        # broadcasting makes anyway
        if func.signature is not None:
            continue  # matmul: its core dimensions do not broadcast
        new = list(args)
        for i, a in enumerate(args):
            source = _broadcast_source(a, canon)
            while source is not None:
                trial = new[:i] + [source] + new[i + 1:]
                shapes = [np.shape(_value(t)) for t in trial]
                if np.broadcast_shapes(*shapes) != np.shape(e.value):
                    break
                new = trial
                source = _broadcast_source(source, canon)
        if any(a is not b for a, b in zip(new, args)) and _same_bits(
                func(*[_value(a) for a in new]), e.value):
            nodes[id(e)] = (func, tuple(new), {})

