"""The rule table, as data: the bottom layer of pullback, importing NumPy only.

It holds the tables (``rules``, the non-differentiable set, the ufunc methods), the
records a rule can be (an ``Elementwise`` row, an unbatched rule, a composite), the errors,
``getitem``/``astype`` (indexing and casting as functions, so that they have rules like any
other), and the registration functions rule authors call: ``rrule``, ``elementwise``,
``linear``, ``composite``, ``nondifferentiable``, ``not_implemented``. Nothing here runs a
rule; the engine above reads these tables.
"""

from __future__ import annotations

import inspect
import math
import operator
import sys
import types
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from numpy.typing import DTypeLike

from .interception import load_scipy_rules

F = TypeVar("F", bound=Callable[..., Any])

# ---------------------------------------------------------------------------- errors


class NoRuleError(NotImplementedError):
    """A function met a tracked value and no derivative rule is registered for it.

    >>> pb.grad(lambda x: np.sum(np.multiply.reduceat(x, [0, 2])))(np.ones(3))
    Traceback (most recent call last):
    ...
    pullback.NoRuleError: pullback: no derivative rule for np.multiply.reduceat on ...
    """

    __module__ = "pullback"  # shown as pb.NoRuleError


class LossError(ValueError):
    """A loss is NaN or infinite (Tracker's losscheck; ``losscheck=False`` turns it off).

    >>> pb.grad(lambda x: np.sum(np.log(x)))(np.array([-1.0]))
    Traceback (most recent call last):
    ...
    pullback.LossError: pullback: the loss of <lambda> is nan; ...
    """

    __module__ = "pullback"  # shown as pb.LossError


class NestedDifferentiationError(RuntimeError):
    """A rule marked ``nobacksies`` was differentiated a second time (see
    ``pb.nobacksies``)."""

    __module__ = "pullback"  # shown as pb.NestedDifferentiationError


# ---------------------------------------------------------------------------- the tables

# function -> a general rrule, or an Elementwise / Unbatched / Composite
rules: dict[Callable[..., Any], Any] = {}
origin: dict[Callable[..., Any], str] = {}  # function -> the module that registered its rule
nondiff: set[Callable[..., Any]] = set()  # functions whose outputs are constants
# (ufunc, method) -> a function computing it with functions that have rules
ufunc_methods: dict[tuple[np.ufunc, str], Callable[..., Any]] = {}


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` as a function, so that indexing has a rule like any other."""
    return x[index]


def astype(x: Any, dtype: DTypeLike) -> Any:
    """``x.astype(dtype)`` as a function, so that casting has a rule."""
    return x.astype(dtype)


# ---------------------------------------------------------------------------- records

ONE = object()        # a local derivative of 1 (``add``'s), so the cotangent passes as it is
MINUS_ONE = object()  # a local derivative of -1 (``subtract``'s second argument)

# the arithmetic ufuncs run through Python's operators: the same result, and for NumPy
# scalars many times faster than a ufunc call (bench/NOTES.md)
_OPERATOR_FORMS = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.true_divide: operator.truediv, np.power: operator.pow, np.negative: operator.neg,
    np.positive: operator.pos,
}


class Elementwise:
    """A table row: an elementwise function and its local derivative for each argument.

    ``derivs[i](ans, *args)`` gives d ans / d args[i], or is ``ONE``, ``MINUS_ONE`` or
    ``None`` (no derivative). Rows marked ``singular`` have derivatives that can be
    infinite: there a zero cotangent still gives zero. ``call`` is how the engine calls
    the function (an operator where one exists).
    """

    __slots__ = ("func", "derivs", "singular", "call")

    def __init__(self, func, derivs, singular):
        self.func = func
        self.derivs = derivs
        self.singular = singular
        self.call = _OPERATOR_FORMS.get(func, func)

    def __repr__(self):
        return f"Elementwise({name_of(self.func)})"


class Bilinear:
    """A table row of a product of two arguments (``a @ b``): when ``fits(a, b)`` holds for
    the values (real matrices), the engine records the call itself, and the cotangent of
    argument ``i`` is ``vjps[i](g, a, b)``; other values take ``rule``, the general rule
    (``Unbatched`` for a user's row that is not ``batched``: its pullbacks then get one
    slice of a batched cotangent at a time)."""

    __slots__ = ("func", "fits", "vjps", "rule", "batched")

    def __init__(self, func, fits, vjps, rule, batched):
        self.func, self.fits, self.vjps, self.batched = func, fits, vjps, batched
        self.rule = rule if batched else Unbatched(rule)

    def __repr__(self):
        return f"Bilinear({name_of(self.func)})"


class Reduction:
    """A table row of a reduction along axes (np.sum, np.mean, np.max, np.min): for the
    calls ``reduce(values, kwargs)`` takes (a real ndarray, ``axis`` and ``keepdims``, and
    nothing else), it returns ``(value, axis, keepdims)`` and the engine records the node
    with those as its arguments, with no closure; the array's cotangent is then
    ``vjp(g, value, array, axis, keepdims)``. For any other call it returns None, and
    ``rule``, the general rule, takes the call."""

    __slots__ = ("func", "reduce", "vjp", "rule")

    def __init__(self, func, reduce, vjp, rule):
        self.func, self.reduce, self.vjp, self.rule = func, reduce, vjp, rule

    def pull(self, node, g):
        """The pair (array, cotangent) of ``node``, recorded by this row."""
        a, axis, keepdims = node.args
        return ((a, self.vjp(g, node.value, a.value, axis, keepdims)),)

    def __repr__(self):
        return f"Reduction({name_of(self.func)})"


class Unbatched:
    """A general rule whose pullback takes no leading batch axes: the backward pass applies
    its pullback once per slice of a batched cotangent."""

    __slots__ = ("rule",)

    def __init__(self, rule):
        self.rule = rule


class Composite:
    """A function computed, on tracked values, by ``impl``: a function of functions that
    have rules, so it needs no rule of its own."""

    __slots__ = ("impl",)

    def __init__(self, impl):
        self.impl = impl


class Pick:
    """The rule of output ``index`` of a function with several outputs."""

    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


class NotImplementedCotangent:
    """What a pullback returns for an argument it has no derivative for; it is an error
    only if that argument was tracked (ChainRules' ``@not_implemented``)."""

    __slots__ = ("reason",)

    def __init__(self, reason):
        self.reason = reason


def not_implemented(reason: str) -> NotImplementedCotangent:
    """A cotangent entry saying the rule has no derivative for this argument; it raises
    ``NoRuleError`` with ``reason`` only if that argument is tracked.

    >>> ct = pb.not_implemented("the probabilities q")     # in a pullback: (g * w, ct)
    """
    return NotImplementedCotangent(reason)


def check_rule_result(func: Callable[..., Any], rule: Any, result: Any) -> None:
    """Refuse what a rule returned unless it is ``(out, pullback)`` (``(out, None)`` only
    for an integer or boolean ``out``, which carries no gradient)."""
    if result.__class__ is tuple and len(result) == 2 and result[1] is None:
        outs = result[0] if isinstance(result[0], (tuple, list)) else (result[0],)
        if not any(np.result_type(o).kind in "fc" for o in outs if o is not None):
            return
    got = (f"a pair whose pullback is {type(result[1]).__name__}"
           if result.__class__ is tuple and len(result) == 2 else type(result).__name__)
    raise TypeError(
        f"pullback: the rule {getattr(rule, '__qualname__', rule)} for {name_of(func)} "
        f"returned {got}; a rule returns (out, pullback), pullback a function of the "
        "cotangent (declare pb.nondifferentiable or use pb.stop_gradient for no gradient)"
    )


def dropped_batch_axes(rule_name: str, shape: tuple, target: tuple, nb: int) -> ValueError:
    """The error for a pullback whose cotangent lost the leading batch axes."""
    return ValueError(
        f"pullback: {rule_name} returned a cotangent of shape {shape} for an input of "
        f"shape {target[nb:]} under batch axes {target[:nb]}: it dropped the leading batch "
        "axes of its cotangent. Register its rule without batched=True (it is then applied "
        "per slice), or keep the leading axes (count axes from the end, or use ...)."
    )


# ---------------------------------------------------------------------------- registration

# the NumPy functions that read a list as a sequence of arrays, not as one array
_SEQUENCES = frozenset(f for f in (
    np.stack, np.concatenate, np.block, np.hstack, np.vstack, np.dstack, np.column_stack,
    getattr(np, "row_stack", None), np.choose, np.select, np.piecewise, np.linalg.multi_dot,
    np.broadcast_arrays, np.meshgrid, np.histogramdd, np.histogram2d) if f is not None)


def reads_lists_as_arrays(func: Any) -> bool:
    """Whether ``func`` is a NumPy function that reads a list argument as one array."""
    return (isinstance(func, np.ufunc) or hasattr(func, "_implementation")) and (
        func not in _SEQUENCES)


def _original(func):
    return getattr(func, "_pb_original", func)


# pb.primitive's wrappers and the SciPy functions whose calls go to a rule
# (``_interception.swap_code``), each with the body that computes it on plain values
primitive_bodies: dict = {}


# how messages name a function whose own names say little (a SciPy helper deep in scipy._lib):
# never written onto the function itself, which is SciPy's
display_names: dict = {}


def body_of(func: Any) -> Any:
    """The body of a primitive (``func`` itself for any other function)."""
    try:
        return primitive_bodies.get(func, func)
    except TypeError:  # (an unhashable callable)
        return func


def is_primitive(func: Any) -> bool:
    try:
        return func in primitive_bodies
    except TypeError:
        return False


def _register(func, rule, depth=2):
    func = _original(func)
    rules[func] = rule
    origin[func] = sys._getframe(depth).f_globals.get("__name__", "")
    nondiff.discard(func)


def _interceptable(func):
    func = _original(func)
    return (isinstance(func, np.ufunc) or hasattr(func, "_implementation")
            or is_primitive(func) or func in (getitem, astype))


def _batch_aware(batched: bool | None, caller: Any) -> bool:
    """Whether a rule registered from the frame ``caller`` takes batched cotangents: as
    declared, else the library's own rules do, and a user's must say so."""
    if batched is not None:
        return batched
    return caller.f_globals.get("__name__", "").startswith("pullback.")


# ---------------------------------------------------------------------------- validation
# Registration refuses what it cannot use before it registers anything: a rule registered
# for np.exp replaces the library's, so a bad one would break np.exp for the whole session.


def kind_of(x: Any) -> str:
    """``x``'s type, for a message: 'None', 'a str', 'an int' (tree.kind_of's twin: the
    rule table sits below every other module)."""
    if x is None:
        return "None"
    kind = type(x).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


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
    if batched not in (None, True, False):
        raise TypeError(f"pullback: {where}'s batched must be True, False or None, got "
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
    func = _original(func)
    if isinstance(func, np.ufunc):
        return func.nin, func.nin
    if func is getitem or func is astype:
        return 2, 2
    return positional_arity(body_of(func))


def _arguments_words(func: Any, n: int) -> str:
    """How messages name the ``n`` arguments of ``func``: 'x' or 'x1, x2'."""
    arity = positional_arity(body_of(_original(func)))
    try:
        names = [p for p in inspect.signature(body_of(_original(func)))
                 .parameters][:n] if arity is not None else []
    except (TypeError, ValueError):
        names = []
    if len(names) == n:
        return ", ".join(names)
    return "x" if n == 1 else ", ".join(f"x{k + 1}" for k in range(n))


def rrule(func: Callable[..., Any], batched: bool | None = None) -> Callable[[F], F]:
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
    Only a rule that declares ``batched=True`` gets batched cotangents; by default a rule
    registered from outside pullback is applied once per slice (correct for any pullback,
    and slower in Jacobians): ``pb.check_batched`` tests a pullback before you declare it.
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
        if is_primitive(rule) or _original(rule) is _original(func):
            raise TypeError(f"pullback: @pb.rrule({fname}) decorates the rule of {fname} (its "
                            "arguments to (out, pullback)), not a pb.primitive")
        arity = arguments_of(func)
        check_function(f"the rule given to @pb.rrule({fname})", rule,
                       None if arity is None else arity[0],
                       f"({fname}'s arguments) returning (out, pullback)")
        if hasattr(rule, "registered_for"):  # a pb.nobacksies rule names its function
            rule.registered_for = func
        _register(func, rule if _batch_aware(batched, sys._getframe(1)) else Unbatched(rule))
        return rule

    return register


def replace_rule(old: Any, new: Any) -> list[Callable[..., Any]]:
    """Put ``new`` in the place of the registered rule ``old`` (as ``pb.rrule`` registered
    it, per slice or not); the functions whose rule it was."""
    found = [f for f, r in rules.items() if r is old or r.__class__ is Unbatched and r.rule is old]
    for f in found:
        rules[f] = new if rules[f] is old else Unbatched(new)
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
    _register(func, Elementwise(func, derivs, singular))


def bilinear(func: Callable[..., Any], rule: Callable[..., Any], fits: Callable[..., bool],
             vjp_a: Callable[..., Any], vjp_b: Callable[..., Any],
             batched: bool | None = None) -> None:
    """Declare a product of two arguments by its two pullbacks, for the values where
    ``fits(a, b)`` holds; ``rule`` (a general rule) covers every other call. ``vjp_a(g, a,
    b)`` and ``vjp_b(g, a, b)`` map the output's cotangent ``g`` to each argument's; only
    a tracked argument's is computed. The engine records such a call with no closure: the
    cheapest node after a table row. ``batched`` is ``rrule``'s contract: unless it is
    True, a row registered from outside pullback gets batched cotangents one slice at a
    time, in its pullbacks and its rule alike.

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
    mine = batched if batched is not None else sys._getframe(1).f_globals.get(
        "__name__", "").startswith("pullback.")
    _register(func, Bilinear(func, fits, (vjp_a, vjp_b), rule, mine))


def reduction(func: Callable[..., Any], reduce: Callable[..., Any],
              vjp: Callable[..., Any]) -> None:
    """Put a reduction's row (``Reduction``) in front of ``func``'s registered general rule:
    pullback's own reductions, for the calls the engine records with no closure."""
    rule = rules[_original(func)]
    rule = rule.rule if rule.__class__ is Reduction else rule  # (np.amax is np.max in 1.x)
    _register(func, Reduction(func, reduce, vjp, rule))


def linear(func: Callable[..., Any], transpose: Callable[..., Any],
           batched: bool | None = None) -> None:
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

    batch_aware = _batch_aware(batched, sys._getframe(1))
    _register(func, linear_rule if batch_aware else Unbatched(linear_rule))


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
    if callable(impl) and _original(impl) is _original(func):
        raise TypeError(
            f"pullback: pb.composite({fname}, impl): impl is {fname} itself, which on tracked "
            f"values would call itself forever; impl computes {fname} with other functions "
            "that have rules" + (" (the undecorated function, for a pb.primitive)"
                                 if is_primitive(func) else ""))
    check_function(f"pb.composite({fname}, impl): impl", impl,
                   None if arity is None else arity[0], f"of {fname}'s arguments")
    _register(func, Composite(impl))


def nondifferentiable(*funcs: Callable[..., Any]) -> None:
    """Declare functions whose outputs are constants (comparisons, rounding, argmax ...):
    on tracked values they return plain results.

    >>> pb.nondifferentiable(np.floor, np.argmax)
    >>> type(pb.param(np.array([1.0, 3.0])).argmax())
    <class 'numpy.int64'>
    """
    mine = sys._getframe(1).f_globals.get("__name__", "").startswith("pullback.")
    if not funcs:
        raise TypeError("pullback: pb.nondifferentiable takes the functions to declare, got "
                        "none")
    for func in map(_original, funcs):
        if not callable(func):
            raise TypeError("pullback: pb.nondifferentiable takes functions (NumPy functions "
                            f"or pb.primitives), got {kind_of(func)}")
        if not _interceptable(func):
            raise TypeError(
                f"pullback: pb.nondifferentiable: {name_of(func)} is neither a NumPy function "
                "nor a pullback.primitive, so calls to it cannot be intercepted; decorate it with "
                "@pb.primitive first, or return pb.stop_gradient(...) of its result"
            )
        if func in rules and not mine and origin.get(func, "").startswith("pullback."):
            raise TypeError(
                f"pullback: pb.nondifferentiable: {name_of(func)} has a derivative rule; for a "
                "constant result in your code write pb.stop_gradient(f(x)) instead"
            )
    for func in map(_original, funcs):  # (all checked first: nothing is half declared)
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


def name_of(func: Any) -> str:
    """How messages name ``func``: ``np.linalg.solve``, ``scipy.special.gamma``, ...

    >>> pb.name_of(np.linalg.solve), pb.name_of(np.sin)
    ('np.linalg.solve', 'np.sin')
    """
    if isinstance(func, np.ufunc):  # NumPy's, or scipy.special's (gamma, jv, ...)
        short = func.__name__
        if getattr(np, short, None) is func:
            return f"np.{short}"
        special = sys.modules.get("scipy.special")
        return f"scipy.special.{short}" if getattr(special, short, None) is func else short
    if func is getitem:
        return "indexing (x[...])"
    if func is astype:
        return "x.astype"
    try:
        if func in display_names:
            return display_names[func]
    except TypeError:  # (an unhashable callable)
        pass
    mod: str = getattr(func, "__module__", "") or ""
    name: str = getattr(func, "__qualname__", "") or getattr(func, "__name__", repr(func))
    if mod.startswith("numpy"):
        sub = [p for p in mod.split(".")[1:] if not p.startswith("_") and p != "core"]
        return ".".join(["np", *sub, name])
    if mod.startswith("scipy"):
        return ".".join([*[p for p in mod.split(".") if not p.startswith("_")], name])
    return f"{mod}.{name}" if mod else name
