"""Dispatch: a NumPy function called on tracked values records one node at the highest live
level among them, and runs its rule on the values one level down."""

import inspect
import threading

import numpy as np

from .core import Tracked, _live, _state, getitem, plain

# no_grad blocks open in any thread: while there are none, the hot path skips the
# (slower) per-thread lookup
_no_grad_blocks = 0
_no_grad_lock = threading.Lock()



class no_grad:
    """Record nothing inside: every result is a plain value (per thread).

    >>> with pb.no_grad():
    ...     y = np.sin(w)          # y is a plain ndarray even if w is tracked
    """

    def __enter__(self):
        global _no_grad_blocks
        with _no_grad_lock:
            _no_grad_blocks += 1
        _state.no_grad += 1
        return self

    def __exit__(self, *exc):
        global _no_grad_blocks
        _state.no_grad -= 1
        with _no_grad_lock:
            _no_grad_blocks -= 1
        return False

    def __call__(self, fn):
        def no_grad_wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)

        no_grad_wrapper.__name__ = getattr(fn, "__name__", "no_grad_wrapper")
        no_grad_wrapper.__doc__ = getattr(fn, "__doc__", None)
        return no_grad_wrapper


def apply(func, args, kwargs):
    """Call ``func`` on arguments some of which are tracked; record one node."""
    rule = _rules.get(func)
    if kwargs or rule is None or rule.__class__ is Elementwise or (
            _no_grad_blocks and _state.no_grad):
        return _apply(rule, func, args, kwargs)
    # the hot path of a general rule on flat arguments (x @ W, np.sum(x))
    top = -1
    for a in args:
        if isinstance(a, Tracked):
            lvl = a.level
            if lvl not in _live:
                return _apply(rule, func, args, kwargs)
            if lvl > top:
                top = lvl
        elif type(a) is list or type(a) is tuple:
            return _apply(rule, func, args, kwargs)
    if top < 0:
        return _apply(rule, func, args, kwargs)
    out, pullback = rule(*[a.value if isinstance(a, Tracked) and a.level == top else a
                           for a in args])
    return _record(out, pullback, top, args)


def _unary(func, a):
    """The hot path for a one-argument table row (``np.sin(x)``, ``-x``)."""
    row = _rules.get(func)
    if row.__class__ is not Elementwise or a.level not in _live or (
            _no_grad_blocks and _state.no_grad):
        return _apply(row, func, (a,), {})
    return Tracked(row.call(a.value), a.level, (a,), row)


def _binary(func, a, b):
    """The hot path for a two-argument table row (``x * y``, ``np.add(x, 1.0)``)."""
    row = _rules.get(func)
    if row.__class__ is not Elementwise or _no_grad_blocks and _state.no_grad:
        return _apply(row, func, (a, b), {})
    la = a.level if isinstance(a, Tracked) else -1
    lb = b.level if isinstance(b, Tracked) else -1
    if (la >= 0 and la not in _live) or (lb >= 0 and lb not in _live):
        return _apply(row, func, (a, b), {})  # drops finished levels
    call = row.call
    if la > lb:
        return Tracked(call(a.value, b), la, (a, b), row)
    if lb > la:
        return Tracked(call(a, b.value), lb, (a, b), row)
    return Tracked(call(a.value, b.value), la, (a, b), row)


def _apply(rule, func, args, kwargs):
    if _no_grad_blocks and _state.no_grad:
        return _call_plain(func, args, kwargs)
    top, dead = _scan(args)
    if kwargs:
        if "out" in kwargs:
            kwargs = _without_out(func, kwargs)
        for a in kwargs.values():
            if isinstance(a, Tracked):
                args, kwargs = _bind_positional(func, args, kwargs)
                return apply(func, args, kwargs)
    if dead:
        args = tuple(_drop_dead(a) for a in args)
        return apply(func, args, kwargs)
    if top < 0:
        return _call_plain(func, args, kwargs)
    if rule is None:
        if func in _nondiff:
            return _call_plain(func, args, kwargs)
        if func in _IN_PLACE:
            raise TypeError(
                f"pullback: {_name(func)} writes into an array in place, which cannot record "
                "a gradient. Build the result out of place instead: np.where(mask, v, a), "
                "np.concatenate/np.stack, or a + index_add(v, index, a.shape)."
            )
        raise NoRuleError(
            f"pullback: no derivative rule for {_name(func)}, called on a tracked value. "
            f"Register one with @pb.rrule({_name(func)}), or call it on plain values "
            "(x.value) if no gradient should flow through it."
        )
    # unbox the top level; lower levels stay boxed and record the rule's own work
    vals = [_unbox(a, top) for a in args]
    if rule.__class__ is Elementwise:
        out = func(*vals, **kwargs)
        if not _inexact(out):
            return out
        return Tracked(out, top, args, rule)
    out, pullback = rule(*vals, **kwargs)
    return _record(out, pullback, top, args)


def _record(out, pullback, top, args):
    if isinstance(out, (tuple, list)):  # several outputs (namedtuples too)
        return _record_multi(out, pullback, top, args)
    if not _inexact(out):
        return out
    return Tracked(out, top, args, pullback)


def _without_out(func, kwargs):
    if kwargs["out"] is not None:
        raise TypeError(
            f"pullback: {_name(func)}(..., out=...) writes into an existing array, which "
            "cannot record a gradient (this includes a += t for a plain array a and a "
            "tracked t). Write it out of place: a = a + t, or drop out= and use the result."
        )
    return {k: v for k, v in kwargs.items() if k != "out"}


_IN_PLACE = frozenset(f for f in (
    np.put, np.place, np.putmask, np.copyto, np.put_along_axis, np.fill_diagonal)
    if f is not None)


def _scan(items):
    """The highest live level among tracked values in ``items`` (looking into nested lists
    and tuples, as np.block's arguments are), and whether any has a finished level."""
    top, dead = -1, False
    stack = [items]
    while stack:
        for a in stack.pop():
            if isinstance(a, Tracked):
                lvl = a.level
                if lvl not in _live:
                    dead = True
                elif lvl > top:
                    top = lvl
            elif type(a) is list or type(a) is tuple:
                stack.append(a)
    return top, dead


def _unbox(a, top):
    if isinstance(a, Tracked):
        return a.value if a.level == top else a
    if type(a) is list or type(a) is tuple:
        return type(a)(_unbox(b, top) for b in a)
    return a


def _inexact(out):
    dtype = getattr(out, "dtype", None)
    if dtype is None:
        return isinstance(out, (float, complex))
    return dtype.kind in "fc"


def _record_multi(out, pullback, top, args):
    hub = Tracked(tuple(out), top, args, pullback)
    children = [Tracked(o, top, hub, Pick(i)) if _inexact(o) else o for i, o in enumerate(out)]
    if hasattr(type(out), "_fields"):
        return type(out)(*children)
    return type(out)(children)


def _drop_dead(a):
    if isinstance(a, Tracked):
        while isinstance(a, Tracked) and a.level not in _live:
            a = a.value
        return a
    if type(a) is list or type(a) is tuple:
        return type(a)(_drop_dead(b) for b in a)
    return a


def _call_plain(func, args, kwargs):
    args = [_plain_arg(a) for a in args]
    kwargs = {k: _plain_arg(v) for k, v in kwargs.items()}
    if getattr(func, "_pb_primitive", False):
        return func._pb_body(*args, **kwargs)
    if func is getitem:
        return args[0][args[1]]
    return func(*args, **kwargs)


def _plain_arg(a):
    if isinstance(a, Tracked):
        return plain(a)
    if type(a) is list or type(a) is tuple:
        return type(a)(_plain_arg(b) for b in a)
    return a


def _bind_positional(func, args, kwargs):
    """Move tracked keyword arguments into positional places using ``func``'s signature."""
    target = getattr(func, "_pb_body", None) or getattr(func, "_implementation", func)
    try:
        sig = inspect.signature(target)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        name = next(k for k, v in kwargs.items() if isinstance(v, Tracked))
        raise TypeError(
            f"pullback: pass the tracked argument {name!r} of {_name(func)} positionally"
        ) from None
    pos, kw = [], {}
    for p in sig.parameters.values():
        if p.name not in bound.arguments:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and _later_bound(
                    sig, bound, p):
                pos.append(p.default)
            continue
        v = bound.arguments[p.name]
        if p.kind == p.VAR_POSITIONAL:
            pos.extend(v)
        elif p.kind == p.VAR_KEYWORD:
            kw.update(v)
        elif p.kind == p.KEYWORD_ONLY:
            if isinstance(v, Tracked):
                raise TypeError(
                    f"pullback: {_name(func)} takes the tracked argument {p.name!r} only "
                    "by keyword, which its rule cannot differentiate"
                )
            kw[p.name] = v
        else:
            pos.append(v)
    stuck = [k for k, v in kw.items() if isinstance(v, Tracked)]
    if stuck:
        raise TypeError(
            f"pullback: {_name(func)} takes the tracked argument {stuck[0]!r} only by "
            "keyword, which its rule cannot differentiate; pass it positionally"
        )
    return tuple(pos), kw


def _later_bound(sig, bound, param):
    names = list(sig.parameters)
    later = names[names.index(param.name) + 1:]
    return any(n in bound.arguments and sig.parameters[n].kind in (
        param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD, param.VAR_POSITIONAL)
        for n in later)


def _ufunc_kwargs(ufunc, kwargs):
    if "out" in kwargs:
        kwargs = _without_out(ufunc, kwargs)
    if kwargs:
        raise TypeError(
            f"pullback: np.{ufunc.__name__} on a tracked value does not support the "
            f"keyword(s) {sorted(kwargs)}; apply the operation without them (cast with "
            ".astype, select with np.where)"
        )
    return kwargs


_UFUNC_METHODS = {}  # (ufunc, method) -> function implementing it with rules


def _ufunc_method(ufunc, method, inputs, kwargs):
    impl = _UFUNC_METHODS.get((ufunc, method))
    if impl is None:
        if ufunc in _nondiff:
            return getattr(ufunc, method)(*[_plain_arg(a) for a in inputs],
                                          **{k: _plain_arg(v) for k, v in kwargs.items()})
        raise NoRuleError(
            f"pullback: no derivative rule for np.{ufunc.__name__}.{method} on a tracked "
            "value; write it with the plain functions (np.sum, np.cumsum, np.outer, ...)"
        )
    if "out" in kwargs:
        kwargs = _without_out(ufunc, kwargs)
    return impl(*inputs, **kwargs)


def ufunc_method(ufunc, method):
    """Declare how ``ufunc.method`` (``reduce``, ``accumulate``, ``outer`` ...) is computed
    on tracked values, in terms of functions that have rules."""

    def register(impl):
        _UFUNC_METHODS[(ufunc, method)] = impl
        return impl

    return register


# the registry uses apply and _scan above: imported last
from .registry import Elementwise, NoRuleError, Pick, _name, _nondiff, _rules  # noqa: E402
