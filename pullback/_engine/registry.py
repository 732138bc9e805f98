"""The rule table, as data: the bottom layer of pullback's engine, importing NumPy only.

It holds the tables (``rules``, the non-differentiable set, the ufunc methods, the
primitives' bodies), the markers a cotangent can be (``ONE``, ``MINUS_ONE``, a
``NotImplementedCotangent``), the errors, ``getitem``/``astype`` (indexing and casting as
functions, so that they have rules like any other) and ``name_of``, how messages name a
function. Nothing here runs a rule or registers one: ``register.py`` fills these tables
with records (records.py), the engine above reads them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

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

# function -> its record (records.py): an Elementwise, Bilinear or Reduction row, a General
# rule or a Composite
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


# ---------------------------------------------------------------------------- cotangents

ONE = object()        # a local derivative of 1 (``add``'s), so the cotangent passes as it is
MINUS_ONE = object()  # a local derivative of -1 (``subtract``'s second argument)


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


# ---------------------------------------------------------------------------- lookups

# the NumPy functions that read a list as a sequence of arrays, not as one array
_SEQUENCES = frozenset(f for f in (
    np.stack, np.concatenate, np.block, np.hstack, np.vstack, np.dstack, np.column_stack,
    getattr(np, "row_stack", None), np.choose, np.select, np.piecewise, np.linalg.multi_dot,
    np.broadcast_arrays, np.meshgrid, np.histogramdd, np.histogram2d) if f is not None)


def reads_lists_as_arrays(func: Any) -> bool:
    """Whether ``func`` is a NumPy function that reads a list argument as one array."""
    return (isinstance(func, np.ufunc) or hasattr(func, "_implementation")) and (
        func not in _SEQUENCES)


# pb.primitive's wrappers and the SciPy functions whose calls go to a rule
# (``interception.swap_code``), each with the body that computes it on plain values
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
