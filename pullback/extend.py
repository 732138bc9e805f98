"""For rule authors: the registration API in one place, and the tools that build nodes of
their own (checkpoint, hook, stop_gradient, nobacksies). The library's own rules import
from here, exactly as users do.

The five rule forms, in the order to choose them: a table row (``elementwise``: the local
derivatives), ``bilinear`` (a product of two arguments: its two pullbacks, for the values
it fits), ``linear`` (the function and its transpose), ``composite`` (a function of
functions that have rules: no rule of its own), and a general ``rrule`` with a named
pullback. ``rrule``'s docstring states what a pullback receives and returns.
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ._engine.arguments import fname_of, function_named
from ._engine.backend import is_foreign, on_backend, zeros_on
from ._engine.core import (
    Tracked,
    drop_finished,
    is_complex,
    live_levels,
    plain,
    shape_of,
    state,
    top_level,
    writes,
)
from ._engine.guard import Hold, is_held, release
from ._engine.methods import NO_LEVEL
from ._engine.modes import no_grad
from ._engine.records import Pullback, record
from ._engine.register import (
    bilinear,
    check_function,
    composite,
    elementwise,
    linear,
    nondifferentiable,
    primitive,
    replace_rule,
    rrule,
    ufunc_method,
)
from ._engine.registry import (
    MINUS_ONE,
    ONE,
    NestedDifferentiationError,
    NoRuleError,
    astype,
    check_rule_result,
    getitem,
    is_primitive,
    name_of,
    not_implemented,
)
from ._engine.vjp import Linearized
from ._jit.scan import LIBRARIES, global_names  # (pb.jit's scan's)
from .tree import kind_of, tree_flatten, tree_map, tree_unflatten

# a general rule: the function's arguments to ``(out, pullback)``
Rule = Callable[..., tuple[Any, Callable[[Any], Any]]]

__all__ = [
    # registration
    "rrule", "elementwise", "bilinear", "linear", "composite", "nondifferentiable", "primitive",
    "ufunc_method", "not_implemented", "ONE", "MINUS_ONE",
    # what rules compute with
    "Tracked", "plain", "shape_of", "is_complex", "getitem", "astype", "name_of",
    "NoRuleError", "is_held",
    # arrays of other libraries: constants built in NumPy, moved to the value's library
    "on_backend", "zeros_on", "is_foreign",
    # nodes of one's own
    "checkpoint", "hook", "stop_gradient", "nobacksies",
    # where _engine/writes.py installs the recording of x[i] = v, x += v and out=x
    "writes",
]


def _levels(tree):
    """The live levels anywhere in the boxes of ``tree``'s leaves."""
    found = set()
    for x in tree_flatten(tree)[0]:
        while isinstance(x, Tracked):
            if x.level in live_levels:
                found.add(x.level)
            x = x.value
    return found


# ---------------------------------------------------------------------------- checkpoint

def checkpoint(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` with the same values and gradients, whose intermediates are not kept: the
    graph records one node per call, and the backward pass runs ``f`` again (with NumPy's
    global random state as it was) to pull back through it. Over a chain of ``n`` layers,
    checkpointing segments of about ``sqrt(n)`` layers holds about ``sqrt(n)`` layers'
    intermediates instead of ``n``.

    Every tracked value ``f`` uses must reach it as an argument (pytrees are fine): a
    tracked value it closes over raises TypeError. The plain arrays it reads through
    closures and module globals stay read-only while the node lives, as a graph's other
    constants do, so a write into one between the forward and the backward pass raises at
    the write instead of changing the gradient.

    >>> block = pb.checkpoint(lambda h, W: np.tanh(h @ W))
    >>> x, W = np.ones((2, 3)), np.full((3, 3), 0.1)
    >>> g = pb.grad(lambda W: np.sum(block(block(x, W), W)))(W)
    >>> g.shape
    (3, 3)
    """
    fname = function_named(f, "pb.checkpoint")

    @functools.wraps(f)
    def checkpointed(*args: Any, **kwargs: Any) -> Any:
        if state.no_grad:
            return f(*args, **kwargs)
        leaves, treedef = tree_flatten((args, kwargs))
        leaves = [drop_finished(x) for x in leaves]
        top = top_level(leaves)[0]
        if top == NO_LEVEL:  # no tracked argument: f runs as it is, unless it closes over one
            out = f(*args, **kwargs)
            if top_level(tree_flatten(out)[0])[0] != NO_LEVEL:
                raise TypeError(_closure_message(fname))
            return out
        mine = [k for k, x in enumerate(leaves) if isinstance(x, Tracked) and x.level == top]
        vals = [x.value if k in mine else x for k, x in enumerate(leaves)]

        def run(*flat):
            a, kw = tree_unflatten(treedef, list(flat))
            return f(*a, **kw)

        random_state = np.random.get_state()
        # the backward pass runs f again on these values: f may not write into them
        held = [vals[k] for k in mine if type(vals[k]) is np.ndarray and vals[k].flags.writeable]
        for v in held:
            v.setflags(write=False)
        try:
            out = run(*vals)
        except ValueError as error:
            if "read-only" not in str(error):
                raise
            raise ValueError(
                f"pullback: checkpoint({fname}): {fname} writes into a tracked argument, "
                f"which a checkpoint cannot record (the backward pass runs {fname} again on "
                "the same values). Write into a copy inside it (h = h.copy()), or do not "
                "checkpoint it."
            ) from error
        finally:
            for v in held:
                with contextlib.suppress(ValueError):  # (a view whose base is held now)
                    v.setflags(write=True)
        outs, out_def = tree_flatten(out)
        if any(lvl >= top for lvl in _levels(outs)):
            raise TypeError(_closure_message(fname))
        several = not (len(outs) == 1 and out_def is None)
        # the arrays f reads through closures and globals, read-only while the node lives
        # (the run again must see the values the forward pass saw)
        reached = [Hold(_reached_arrays(f), f"an array {fname} reads (pb.checkpoint)")]

        def checkpoint_pullback(g):
            gs = list(g) if several else [g]
            now = np.random.get_state()
            np.random.set_state(random_state)
            release(reached[0].arrays)  # (f may write into its own buffers as it runs)
            try:
                lin = Linearized(run, vals, {}, mine)
            finally:
                np.random.set_state(now)
                reached[0] = Hold(_reached_arrays(f), f"an array {fname} reads (pb.checkpoint)")
            again = tree_flatten(lin.out)[0]
            if not all(_same_output(a, o) for a, o in zip(again, outs)):
                raise RuntimeError(
                    f"pullback: checkpoint({fname}) ran {fname} again for the backward pass "
                    "and got another output than the forward pass did: it reads state that "
                    "changed in between (an array written in place, a random Generator, a "
                    "Python counter). Pass such values to it as arguments."
                )
            batch = next((shape_of(s)[:len(shape_of(s)) - len(shape_of(o))]
                          for o, s in zip(again, gs) if s is not None), ())
            found = lin.pull_leaves(again, gs, batch, retain_graph=False)
            cts = [None] * len(leaves)
            for k, (ct,) in zip(mine, found):
                cts[k] = ct
            return tuple(cts)

        if not several:
            return record(out, Pullback(checkpoint_pullback), top, tuple(leaves))
        return tree_unflatten(out_def, list(record(tuple(outs), Pullback(checkpoint_pullback), top,
                                                   tuple(leaves))))

    return checkpointed


def _closure_message(fname):
    return (f"pullback: checkpoint({fname}): the function uses a tracked value that is not "
            "one of its arguments (a closure or a global); pass it as an argument")


def _reached_arrays(f, depth=0, seen=None):
    """The plain arrays ``f`` reads through its closure cells and its module's globals, and
    through the functions it reaches that way (not attributes or containers)."""
    seen = set() if seen is None else seen
    f = getattr(f, "__func__", f)  # (a bound method: its function)
    if depth > 4 or id(f) in seen or not isinstance(f, types.FunctionType):
        return []
    seen.add(id(f))
    scope = f.__globals__
    if str(scope.get("__name__", "")).partition(".")[0] in LIBRARIES:
        return []
    values = []
    for cell in f.__closure__ or ():
        with contextlib.suppress(ValueError):  # (an empty cell)
            values.append(cell.cell_contents)
    values += [scope[name] for name in global_names(f.__code__, set()) if name in scope]
    found = []
    for v in values:
        if type(v) is np.ndarray:
            found.append(v)
        elif isinstance(v, (types.FunctionType, types.MethodType)):
            found += _reached_arrays(v, depth + 1, seen)
    return found


def _same_output(a, b):
    """Whether a checkpointed function's output ``a``, run again, is its first ``b``."""
    a, b = plain(a), plain(b)
    if is_foreign(a) or is_foreign(b):  # another library's (Dask's: not computed here)
        return True
    try:
        return np.array_equal(a, b, equal_nan=True)
    except TypeError:  # values NaN means nothing for (strings, objects)
        return a is b or np.array_equal(a, b)


# ------------------------------------------------------------- hook, stop_gradient, nobacksies

def hook(fn: Callable[[Any], Any], x: Any) -> Any:
    """``x`` itself, except that on the way back the cotangent of ``x`` is ``fn`` of the
    cotangent of the result (at every level of nested differentiation). ``fn`` gets a
    cotangent that may carry leading batch axes (Jacobians), so write it elementwise or
    with ``...``; it must use NumPy calls for its result to be differentiable again. It
    returns an array of the cotangent's shape, or None to leave the cotangent as it is (a
    logging hook). ``fn`` gets a cotangent of its own: writing into it (``g *= 0.5``,
    ``out=g``) changes the cotangent of ``x`` and of nothing else. On a pytree (a dict,
    list or tuple of arrays), ``fn`` is hooked on each leaf.

    >>> clipped = lambda x: pb.hook(lambda g: np.clip(g, -1.0, 1.0), x)
    >>> pb.grad(lambda x: np.sum(5.0 * clipped(x)))(np.zeros(2))
    array([1., 1.])
    """
    if not callable(fn):
        raise TypeError(f"pullback: pb.hook(fn, x) takes the function first; got "
                        f"{kind_of(fn)}" + (" (the arguments look swapped)" if callable(x) else ""))
    check_function(f"the hook {fname_of(fn)} given to pb.hook", fn, 1,
                   "(the cotangent), returning a cotangent of the same shape or None")
    if isinstance(x, (tuple, list, dict)):  # a pytree: the hook on each leaf
        return tree_map(lambda leaf: _hook_leaf(fn, leaf), x)
    return _hook_leaf(fn, x)


def _hook_leaf(fn, x):
    if state.no_grad:
        return plain(x)
    x = drop_finished(x)
    if not isinstance(x, Tracked) or x.traced:  # (a pb.jit trace's box is no level)
        return x
    real = not is_complex(plain(x))

    def hook_pullback(g):
        own = g.copy() if g.__class__ is np.ndarray else g  # (g may be a sibling's too)
        out = fn(own)
        if out is None:  # a hook returning None only looks (or wrote into its own copy)
            return (own,)
        _check_hook_result(fn, out, g, real)
        return (out,)

    return record(_hook_leaf(fn, x.value), Pullback(hook_pullback), x.level, (x,))


def _check_hook_result(fn, out, g, real):
    """Refuse what a hook returned unless it is a cotangent of ``g``'s shape."""
    value = plain(out)
    dtype = getattr(value, "dtype", None)
    if (dtype.kind not in "iufc" if dtype is not None
            else value.__class__ not in (int, float, complex)):
        got = (f"an array of dtype {dtype}" if dtype is not None else kind_of(value)
               ) + (f" of {len(value)}" if type(value) in (tuple, list, dict) else "")
        raise TypeError(f"pullback: the hook {fname_of(fn)} returned {got}; a hook returns "
                        f"one array, the cotangent, of the shape of the one it got "
                        f"{shape_of(g)}, or None to leave it as it is")
    if shape_of(out) != shape_of(g):  # (a smaller one would be broadcast up, silently)
        raise ValueError(f"pullback: the hook {fname_of(fn)} returned a cotangent of "
                         f"shape {shape_of(out)} for one of shape {shape_of(g)}; return "
                         "one of the same shape")
    if real and is_complex(value):
        raise TypeError(f"pullback: the hook {fname_of(fn)} returned a complex cotangent for "
                        "a real value: its imaginary part would be dropped. Return a real "
                        "cotangent (np.real(...)), or make the value complex (x * (1 + 0j)) "
                        "before hooking it")


def stop_gradient(x: Any) -> Any:
    """``x`` as a constant: the plain value under every box, so no gradient flows through
    it at any level (Tracker's ``data(x)``). Works on pytrees.

    The array of a tracked value comes back read-only (a view of it): a write into it
    would change the value the graph recorded. Copy it to write into it.

    >>> pb.grad(lambda x: x * pb.stop_gradient(x))(3.0)
    np.float64(3.0)
    """
    return tree_map(_constant, x)


def _constant(x: Any) -> Any:
    if not isinstance(x, Tracked):
        return x
    value = plain(x)
    if type(value) is np.ndarray and value.flags.writeable:
        value = value.view()
        value.setflags(write=False)
    return value


def nobacksies(rule: Rule) -> Rule:
    """Mark a rule whose pullback must not be differentiated again (decorator, under
    ``@pb.rrule(f)``; above it works too): first derivatives work, and the pullback runs
    on plain values (so it may call anything); differentiating its result (a second
    derivative of ``f``, or forward mode, which differentiates pullbacks) raises
    NestedDifferentiationError naming ``f``.

    >>> @pb.primitive
    ... def softplus(x):
    ...     return np.logaddexp(0.0, x)
    >>> @pb.rrule(softplus)
    ... @pb.nobacksies
    ... def softplus_rule(x):
    ...     def softplus_pullback(g):
    ...         return (g / (1.0 + np.exp(-x)),)
    ...     return softplus(x), softplus_pullback
    >>> pb.grad(softplus)(0.0)
    np.float64(0.5)
    >>> pb.grad(pb.grad(softplus))(0.0)
    Traceback (most recent call last):
    ...
    pullback.NestedDifferentiationError: pullback: the rule for ...softplus is marked ...
    """
    if is_primitive(rule):
        raise TypeError(f"pullback: pb.nobacksies decorates a rule (returning (out, "
                        f"pullback)), and {fname_of(rule)} is a pb.primitive; decorate its "
                        "rule, under @pb.rrule(...)")
    check_function("the rule given to pb.nobacksies", rule, None,
                   "returning (out, pullback), under @pb.rrule(f)")

    @functools.wraps(rule)
    def nobacksies_rule(*args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], Any]]:
        result = rule(*args, **kwargs)
        if result.__class__ is not tuple or len(result) != 2 or not callable(result[1]):
            check_rule_result(nobacksies_rule.registered_for,  # type: ignore[attr-defined]
                              rule, result)
            return result  # (an integer output with no pullback)
        out, pullback = result
        below = _levels((args, kwargs))

        def nobacksies_pullback(g):
            levels = sorted(lvl for lvl in below | _levels(g) if lvl in live_levels)
            with no_grad():
                cts = pullback(tree_map(plain, g))
            name = name_of(nobacksies_rule.registered_for)
            return tuple(_poison(c, levels, name) for c in cts)

        return out, nobacksies_pullback

    # the function the rule is registered for: rrule fills it in, for the error message
    nobacksies_rule.registered_for = rule  # type: ignore[attr-defined]
    # above @pb.rrule(f) (the other order): the rule is registered already, so the mark
    # takes its place there
    for func in replace_rule(rule, nobacksies_rule):
        nobacksies_rule.registered_for = func  # type: ignore[attr-defined]
    return nobacksies_rule


def _poison(ct, levels, name):
    """``ct`` boxed at ``levels`` by nodes whose pullback raises (a thunk stays a thunk,
    run without recording)."""
    if ct is None:
        return None
    if callable(ct):
        def nobacksies_thunk():
            with no_grad():
                value = ct()
            return _poison(value, levels, name)

        return nobacksies_thunk
    if type(ct) in (list, tuple):
        return type(ct)(_poison(c, levels, name) for c in ct)

    def nobacksies_raise(g):
        raise NestedDifferentiationError(
            f"pullback: the rule for {name} is marked nobacksies, so its pullback cannot be "
            "differentiated again (a second derivative, or forward mode, of it was asked for)"
        )

    if levels:
        ct = np.asarray(ct)
    for level in levels:
        ct = Tracked(ct, level, (), Pullback(nobacksies_raise))
    return ct

