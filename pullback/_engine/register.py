"""Registration: the functions rule authors call (``rrule``, ``elementwise``, ``bilinear``,
``linear``, ``composite``, ``nondifferentiable``, ``ufunc_method``; and ``primitive``, from
core.py, where the engine's own primitives take it too), the checks each makes before it
writes into the tables of ``registry.py``, and the listings of what is registered.
Registration refuses what it cannot use before it registers anything: a rule registered for
np.exp replaces the library's, so a bad one would break np.exp for the whole session.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..tree import kind_of
from .core import primitive as primitive  # (pb.primitive, with the others: dispatch is core's)
from .interception import load_scipy_rules, original_of
from .records import Bilinear, Composite, Elementwise, General, Reduction
from .registry import (
    MINUS_ONE,
    ONE,
    astype,
    body_of,
    getitem,
    is_primitive,
    name_of,
    nondiff,
    origin,
    rules,
    ufunc_methods,
)

F = TypeVar("F", bound=Callable[..., Any])


# ---------------------------------------------------------------------------- registering

def _register(func, rule, *given):
    """``rules[func] = rule``, noting the module of the code the rule author ``given``
    (the rule, the transpose, the derivatives: the first with a module) as its origin."""
    func = original_of(func)
    rules[func] = rule
    origin[func] = next((m for g in given if callable(g) and isinstance(
        m := getattr(g, "__module__", None), str)), "pullback")  # (add's row: ONE, ONE)
    nondiff.discard(func)


def _interceptable(func):
    func = original_of(func)
    return (isinstance(func, np.ufunc) or hasattr(func, "_implementation")
            or is_primitive(func) or func in (getitem, astype))


# ---------------------------------------------------------------------------- validation



def _fn_name(fn: Any) -> str:
    """A user's function as messages name it: its qualified name, never its repr."""
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or (
        type(fn).__name__)


def positional_arity(fn: Any) -> tuple[int, float] | None:
    """``(required, most)``: how many positional arguments ``fn`` takes (``most`` is
    infinite with ``*args``), or None where its signature cannot be read."""
    code = getattr(fn, "__code__", None)
    if type(fn) is types.FunctionType and code is not None and not (
            hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__")):
        # a plain function's own code says it (inspect.signature costs the import 0.1 s)
        most = math.inf if code.co_flags & inspect.CO_VARARGS else code.co_argcount
        return code.co_argcount - len(fn.__defaults__ or ()), most
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # (builtins without a signature)
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(p.default is p.empty for p in positional)
    most = math.inf if any(p.kind is p.VAR_POSITIONAL for p in params) else len(positional)
    return required, most


def takes(fn: Any, n: int) -> bool:
    """Whether ``fn`` can be called with ``n`` positional arguments, as far as its
    signature tells (True where it tells nothing)."""
    arity = positional_arity(fn)
    return arity is None or arity[0] <= n <= arity[1]


def _takes_words(fn: Any) -> str:
    """What ``fn`` takes, for a message: '(g, h)', or 'no arguments'."""
    try:
        return f"{_fn_name(fn)}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        return _fn_name(fn)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def check_function(what: str, fn: Any, n: int | None, form: str) -> None:
    """Refuse ``fn`` unless it is a function that takes ``n`` positional arguments
    (``form`` says which, for the message)."""
    if not callable(fn):
        raise TypeError(f"pullback: {what} must be a function {form}, got {kind_of(fn)}")
    if n is not None and not takes(fn, n):
        raise TypeError(f"pullback: {what} must take {_plural(n, 'positional argument')} "
                        f"{form}, but it is {_takes_words(fn)}")


def _check_batched(where: str, batched: Any) -> None:
    if batched is not True and batched is not False:
        raise TypeError(f"pullback: {where}'s batched must be True or False, got "
                        f"{batched!r}")


def _check_target(where: str, func: Any) -> None:
    """Refuse a ``func`` whose calls pullback cannot intercept (a rule for it would never
    run)."""
    if _interceptable(func):
        return
    if not callable(func):
        raise TypeError(f"pullback: {where} takes the function the rule is for first (a NumPy "
                        f"function or a pb.primitive), got {kind_of(func)}")
    name = name_of(func)
    raise TypeError(
        f"pullback: {where}: {name} is neither a NumPy function nor a pb.primitive, so calls "
        "to it cannot be intercepted; decorate it with @pb.primitive first and register the "
        "rule for the decorated function")


def arguments_of(func: Any) -> tuple[int, float] | None:
    """``(required, most)`` positional arguments of a call of ``func`` (the function a rule
    is for), or None where that is not known."""
    func = original_of(func)
    if isinstance(func, np.ufunc):
        return func.nin, func.nin
    if func is getitem or func is astype:
        return 2, 2
    return positional_arity(body_of(func))


def _arguments_words(func: Any, n: int) -> str:
    """How messages name the ``n`` arguments of ``func``: 'x' or 'x1, x2'."""
    arity = positional_arity(body_of(original_of(func)))
    try:
        names = [p for p in inspect.signature(body_of(original_of(func)))
                 .parameters][:n] if arity is not None else []
    except (TypeError, ValueError):
        names = []
    if len(names) == n:
        return ", ".join(names)
    return "x" if n == 1 else ", ".join(f"x{k + 1}" for k in range(n))


def rrule(func: Callable[..., Any], batched: bool = False) -> Callable[[F], F]:
    """Register a reverse rule for ``func`` (decorator).

    The rule takes ``func``'s arguments, with the differentiated ones one level down (plain
    arrays at the first level), and returns ``(out, pullback)``. ``pullback(g)`` returns one
    cotangent per positional argument: ``None`` where there is none, a list for an argument
    that is a list of arrays, ``pb.not_implemented(reason)`` where no derivative exists, or
    a function of no arguments (a thunk) that the engine calls only if that input needs its
    cotangent. A cotangent may be the output's shape broadcast (the engine sums it down to
    the input's shape, casts it to the input's dtype and takes the real part for a real
    input).

    The batch-axis contract: ``g`` may carry extra *leading* axes beyond the output's shape
    (Jacobians and Hessians push a stack of cotangents through one pass), and each returned
    cotangent must carry the same leading axes. Count axes from the end, or use ``...``.
    Only a rule that declares ``batched=True`` gets batched cotangents (pullback's own
    rules do, each where it is registered); by default a rule is applied once per slice
    (correct for any pullback, and slower in Jacobians): ``pb.check_batched`` tests a
    pullback before you declare it.
    Pullbacks compute with NumPy calls, so they are differentiable again.

    >>> @pb.rrule(np.cbrt)
    ... def cbrt_rule(x):
    ...     ans = np.cbrt(x)
    ...     def cbrt_pullback(g):
    ...         return (g / (3 * ans ** 2),)
    ...     return ans, cbrt_pullback
    >>> pb.grad(np.cbrt)(8.0)
    np.float64(0.08333333333333333)
    """
    if callable(func) and not _interceptable(func):  # (also a bare @pb.rrule above a rule)
        name = _fn_name(func)
        raise TypeError(
            f"pullback: pb.rrule takes the function the rule is for, and {name} is neither a "
            "NumPy function nor a pb.primitive, so calls to it cannot be intercepted. If "
            f"{name} is your rule, write @pb.rrule(f) above it, f the function it is for; if "
            f"{name} is that function, decorate it with @pb.primitive first and register the "
            "rule for the decorated function"
        )
    _check_target("pb.rrule", func)
    _check_batched("pb.rrule", batched)
    fname = name_of(func)

    def register(rule: F) -> F:
        if is_primitive(rule) or original_of(rule) is original_of(func):
            raise TypeError(f"pullback: @pb.rrule({fname}) decorates the rule of {fname} (its "
                            "arguments to (out, pullback)), not a pb.primitive")
        arity = arguments_of(func)
        check_function(f"the rule given to @pb.rrule({fname})", rule,
                       None if arity is None else arity[0],
                       f"({fname}'s arguments) returning (out, pullback)")
        if hasattr(rule, "registered_for"):  # a pb.nobacksies rule names its function
            rule.registered_for = func
        _register(func, General(rule, batched), rule)
        return rule

    return register


def replace_rule(old: Any, new: Any) -> list[Callable[..., Any]]:
    """Put ``new`` in the place of the registered rule ``old`` (as ``pb.rrule`` registered
    it, per slice or not); the functions whose rule it was."""
    found = [f for f, r in rules.items() if getattr(r, "rule", None) is old]
    for f in found:
        rules[f] = General(new, rules[f].batched)
    return found


def elementwise(func: Callable[..., Any], *derivs: Any, singular: bool = False) -> None:
    """Declare an elementwise function by its local derivatives (a table row).

    Each ``deriv(ans, *args)`` returns d ans / d arg; pass ``pb.ONE`` or ``pb.MINUS_ONE``
    for the linear cases and ``None`` for an argument with no derivative. The engine
    reduces broadcast cotangents to each input's shape. ``singular=True`` says a
    derivative can be infinite: a zero cotangent still gives zero there.

    >>> pb.elementwise(np.exp2, lambda ans, x: ans * np.log(2.0))
    >>> pb.grad(np.exp2)(1.0)
    np.float64(1.3862943611198906)
    """
    _check_target("pb.elementwise", func)
    where, form = f"pb.elementwise({name_of(func)}, ...)", "(ans, *args) -> derivative"
    arity = arguments_of(func)
    if not derivs or arity is not None and not arity[0] <= len(derivs) <= arity[1]:
        want = ("" if arity is None else f": {name_of(func)} takes " + (
            str(arity[0]) if arity[0] == arity[1] else
            f"{arity[0]} or more" if arity[1] == math.inf else f"{arity[0]} to {arity[1]}"))
        raise TypeError(
            f"pullback: {where} takes one local derivative per argument of the function"
            f"{want}, got {len(derivs)} (each a function {form}, pb.ONE, pb.MINUS_ONE or None "
            "for an argument with no derivative)")
    n = len(derivs)
    for i, d in enumerate(derivs):
        if d is None or d is ONE or d is MINUS_ONE:
            continue
        check_function(f"{where}: derivative {i}", d, n + 1,
                       f"(ans, {_arguments_words(func, n)}) -> derivative (or pb.ONE, "
                       "pb.MINUS_ONE, None)")
    if singular not in (True, False):
        raise TypeError(f"pullback: {where}'s singular must be True or False, got {singular!r}")
    _register(func, Elementwise(func, derivs, singular), *derivs)


def bilinear(func: Callable[..., Any], rule: Callable[..., Any], fits: Callable[..., bool],
             vjp_a: Callable[..., Any], vjp_b: Callable[..., Any],
             batched: bool = False) -> None:
    """Declare a product of two arguments by its two pullbacks, for the values where
    ``fits(a, b)`` holds; ``rule`` (a general rule) covers every other call. ``vjp_a(g, a,
    b)`` and ``vjp_b(g, a, b)`` map the output's cotangent ``g`` to each argument's; only
    a tracked argument's is computed. The engine records such a call with no closure: the
    cheapest node after a table row. ``batched`` is ``rrule``'s contract: unless it is
    True, the row gets batched cotangents one slice at a time, in its pullbacks and its
    rule alike.

    >>> def outer_rule(a, b):
    ...     return np.outer(a, b), lambda g: (g @ b, a @ g)
    >>> vectors = lambda a, b: a.__class__ is b.__class__ is np.ndarray and a.ndim == b.ndim == 1
    >>> pb.bilinear(np.outer, outer_rule, vectors, lambda g, a, b: g @ b,
    ...             lambda g, a, b: a @ g)
    >>> pb.grad(lambda a: np.sum(np.outer(a, np.arange(3.0))))(np.ones(2))
    array([3., 3.])
    """
    _check_target("pb.bilinear", func)
    _check_batched("pb.bilinear", batched)
    where = f"pb.bilinear({name_of(func)}, ...)"
    check_function(f"{where}: the rule", rule, 2, "(a, b) returning (out, pullback)")
    check_function(f"{where}: fits", fits, 2, "(a, b) -> bool")
    check_function(f"{where}: vjp_a", vjp_a, 3, "(g, a, b) -> the cotangent of a")
    check_function(f"{where}: vjp_b", vjp_b, 3, "(g, a, b) -> the cotangent of b")
    _register(func, Bilinear(func, fits, (vjp_a, vjp_b), rule, batched), rule)


def reduction(func: Callable[..., Any], reduce: Callable[..., Any],
              vjp: Callable[..., Any]) -> None:
    """Put a reduction's row (``Reduction``) in front of ``func``'s registered general rule:
    pullback's own reductions, for the calls the engine records with no closure."""
    rule = rules[original_of(func)]
    rule = rule.rule if isinstance(rule, Reduction) else rule  # (np.amax is np.max in 1.x)
    _register(func, Reduction(func, reduce, vjp, rule), reduce)


def linear(func: Callable[..., Any], transpose: Callable[..., Any],
           batched: bool = False) -> None:
    """Declare ``func``, linear in its first argument, by its transpose (JAX's
    ``deflinear``). ``transpose(g, ans, x, *args, **kwargs)`` maps the output's cotangent
    ``g`` to ``x``'s; ``ans`` is ``func``'s output and the other arguments are those of the
    call, constants. ``batched`` is ``pb.rrule``'s: only a transpose declared
    ``batched=True`` gets cotangents with leading batch axes (Jacobians push a stack of
    them through one pass); by default one registered outside pullback gets one slice at a
    time.

    >>> pb.linear(np.fliplr, lambda g, ans, x: np.flip(g, -1))
    >>> pb.grad(lambda x: np.fliplr(x)[0, 0] * 2.0)(np.ones((2, 2)))
    array([[0., 2.],
           [0., 0.]])
    """
    _check_target("pb.linear", func)
    _check_batched("pb.linear", batched)
    fname, arity = name_of(func), arguments_of(func)
    n = 1 if arity is None else max(arity[0], 1)
    check_function(f"pb.linear({fname}, transpose): transpose", transpose, n + 2,
                   f"(g, ans, {_arguments_words(func, n)}) -> the cotangent of "
                   f"{_arguments_words(func, 1)}")

    def linear_rule(x, *args, **kwargs):
        ans = func(x, *args, **kwargs)

        def linear_pullback(g):
            ct = transpose(g, ans, x, *args, **kwargs)
            if ct is None:  # (it would read as a zero gradient)
                raise TypeError(f"pullback: the transpose {_fn_name(transpose)} of {fname} "
                                "returned None; return the cotangent of its first argument")
            return (ct,) + (None,) * len(args)

        return ans, linear_pullback

    _register(func, General(linear_rule, batched), transpose)


def composite(func: Callable[..., Any], impl: Callable[..., Any]) -> None:
    """Declare that on tracked values ``func`` is computed by ``impl``, a function made of
    functions that have rules: ``func`` needs no rule of its own (its derivatives are
    those of ``impl``, to every order).

    >>> pb.composite(np.flipud, lambda m: np.flip(m, 0))
    >>> pb.grad(lambda x: np.flipud(x)[0] * 3.0)(np.array([1.0, 2.0]))
    array([0., 3.])
    """
    _check_target("pb.composite", func)
    fname, arity = name_of(func), arguments_of(func)
    if callable(impl) and original_of(impl) is original_of(func):
        raise TypeError(
            f"pullback: pb.composite({fname}, impl): impl is {fname} itself, which on tracked "
            f"values would call itself forever; impl computes {fname} with other functions "
            "that have rules" + (" (the undecorated function, for a pb.primitive)"
                                 if is_primitive(func) else ""))
    check_function(f"pb.composite({fname}, impl): impl", impl,
                   None if arity is None else arity[0], f"of {fname}'s arguments")
    _register(func, Composite(impl), impl)


def nondifferentiable(*funcs: Callable[..., Any]) -> None:
    """Declare functions whose outputs are constants (comparisons, rounding, argmax ...):
    on tracked values they return plain results.

    >>> pb.nondifferentiable(np.floor, np.argmax)
    >>> type(pb.param(np.array([1.0, 3.0])).argmax())
    <class 'numpy.int64'>
    """
    if not funcs:
        raise TypeError("pullback: pb.nondifferentiable takes the functions to declare, got "
                        "none")
    for func in map(original_of, funcs):
        if not callable(func):
            raise TypeError("pullback: pb.nondifferentiable takes functions (NumPy functions "
                            f"or pb.primitives), got {kind_of(func)}")
        if not _interceptable(func):
            raise TypeError(
                f"pullback: pb.nondifferentiable: {name_of(func)} is neither a NumPy function "
                "nor a pullback.primitive, so calls to it cannot be intercepted; decorate it with "
                "@pb.primitive first, or return pb.stop_gradient(...) of its result"
            )
        if func in rules and origin.get(func, "").startswith("pullback."):
            raise TypeError(
                f"pullback: pb.nondifferentiable: {name_of(func)} has a derivative rule; for a "
                "constant result in your code write pb.stop_gradient(f(x)) instead"
            )
    for func in map(original_of, funcs):  # (all checked first: nothing is half declared)
        nondiff.add(func)
        rules.pop(func, None)


# the ufunc methods one can declare, each with the positional arguments a call has at least
# (``at``'s: the array, the indices, and one more per further input of the ufunc)
_UFUNC_METHODS = {"reduce": 1, "accumulate": 1, "reduceat": 2, "at": 1}


def ufunc_method(ufunc: np.ufunc, method: str) -> Callable[[F], F]:
    """Declare how ``ufunc.method`` (``reduce``, ``accumulate``, ``reduceat``) is computed
    on tracked values, in terms of functions that have rules (decorator). ``outer`` is
    computed for every ufunc with a rule by the engine itself; ``at`` without a rule is
    refused.

    >>> @pb.ufunc_method(np.maximum, "reduce")
    ... def maximum_reduce(a, axis=0, **kwargs):
    ...     return np.max(a, axis=axis, **kwargs)
    """
    if not isinstance(ufunc, np.ufunc):
        raise TypeError("pullback: pb.ufunc_method takes a NumPy ufunc first (np.add, "
                        "np.maximum, ...), got " + (name_of(ufunc) if callable(ufunc)
                                                     else kind_of(ufunc)))
    if method not in _UFUNC_METHODS:
        raise TypeError(f"pullback: pb.ufunc_method({name_of(ufunc)}, method): method must be "
                        f"one of 'reduce', 'accumulate', 'reduceat', 'at', got {method!r}")
    where = f"@pb.ufunc_method({name_of(ufunc)}, {method!r})"

    def register(impl: F) -> F:
        check_function(f"the function given to {where}", impl,
                       _UFUNC_METHODS[method] + (ufunc.nin if method == "at" else 0),
                       f"(the arguments of {name_of(ufunc)}.{method}) computing it with "
                       "functions that have rules")
        ufunc_methods[(ufunc, method)] = impl
        return impl

    return register


def registered_rules(package: str | None = "pullback") -> list[Callable[..., Any]]:
    """The functions with a rule registered from modules of ``package`` (every rule for
    ``package=None``).

    >>> np.sin in pb.registered_rules()
    True
    """
    load_scipy_rules()
    return [f for f in rules if package is None or origin.get(f, "").split(".")[0] == package]


def registered_nondifferentiable() -> set[Callable[..., Any]]:
    """The functions declared non-differentiable.

    >>> np.argmax in pb.registered_nondifferentiable()
    True
    """
    load_scipy_rules()
    return set(nondiff)
