"""Where a NaN was born: ``detect_anomaly``, which stops at the first operation that makes
one from finite values, and the provenance of a non-finite loss that a losscheck's message
gives (``loss_error`` for ``grad``, ``graph_loss_error`` for ``backward()``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._engine.arguments import fname_of
from .._engine.core import Tracked, plain
from .._engine.registry import LossError
from .._engine.vjp import Linearized
from ..tree import tree_flatten
from .watch import _all_finite, _first_bad, _op_name, _tracked, _values, _Watching


class detect_anomaly(_Watching):
    """Check every operation for a NaN or infinity born of finite values (per thread); also
    a decorator.

    In the forward pass each recorded operation checks its output; in the backward pass
    each pullback checks the cotangents it returns, when the cotangent it got was finite.
    The first anomaly raises ``FloatingPointError`` naming the operation, the index and the
    line of your code that called it. A zero cotangent times an infinite derivative is
    zero (pullback's convention), not an anomaly. An error raised in a pullback gets a note
    naming the line that recorded the node. It costs a check per operation while on, and
    nothing when off.

    >>> with pb.detect_anomaly():
    ...     pb.grad(lambda x: np.sum(np.log(x)), losscheck=False)(np.array([1.0, 0.0]))
    Traceback (most recent call last):
    FloatingPointError: pullback: np.log of finite inputs gave -inf at index (1,) in ...
    """

    check = True

    def __init__(self, *args: Any) -> None:
        if args:  # @pb.detect_anomaly without the parentheses
            raise TypeError("pullback: write @pb.detect_anomaly() with parentheses, or use "
                            "it as `with pb.detect_anomaly():`")

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TypeError("pullback: @pb.detect_anomaly() decorates a function, got "
                            f"{type(fn).__name__}; to check a block of code, write "
                            "`with pb.detect_anomaly():`")

        @functools.wraps(fn)
        def detect_anomaly_wrapper(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly():
                return fn(*args, **kwargs)

        return detect_anomaly_wrapper


class _Provenance(_Watching):  # where each node was made, pullbacks included: loss_error's
    check = collect = True


# ---------------------------------------------------------------------------- provenance

def first_birth(out, constants=False) -> tuple[Tracked, Any] | None:
    """Where the non-finite values of ``out`` (a tracked value, or a list of them) were
    born, following them back: from a node that is not finite to those of its inputs that
    are not finite either, so a NaN that ``np.where`` masked out, or a value nothing used,
    is never blamed. Returns the first such node (in creation order) whose inputs were all
    finite, with the index and value: ``(node, bad)``; with ``constants``, the first whose
    tracked inputs were finite and a constant among its arguments was not:
    ``(node, (k, bad))``, ``k`` that argument's position and ``bad`` its first non-finite
    entry."""
    found: tuple[Tracked, Any] | None = None
    stack = [o for o in (out if isinstance(out, list) else [out]) if isinstance(o, Tracked)]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        args = node.args
        if args is None or node.rule is None:
            continue
        if node.rule.index is not None:  # an output of several: its hub
            stack.append(args[0])
            continue
        value = node.value
        bad = next((b for b in map(_first_bad, _values(value)) if b), None) \
            if isinstance(value, tuple) else _first_bad(plain(value))
        if bad is None:
            continue  # finite: what it was computed from did not reach the output here
        tracked = list(_tracked(args))
        came = [a for a in tracked if not _all_finite([a])]
        stack.extend(came)
        if came or found is not None and node.seq > found[0].seq:
            continue
        if not constants:
            if _all_finite(args):
                found = (node, bad)
            continue
        k, entry = next(((k, b) for k, a in enumerate(args) if not isinstance(a, Tracked)
                         and (b := next(filter(None, map(_first_bad, _values(a))), None))),
                        (None, None))
        if entry is not None:
            found = (node, (k, entry))
    return found


def loss_error(error: LossError, f: Callable[..., Any], args: Sequence[Any],
               kwargs: dict[str, Any], argnums: Sequence[int]) -> LossError:
    """``error`` (a non-finite loss of ``f``) with where the first non-finite value that
    reaches the loss was born: ``f`` runs once more, recorded with the line of each node,
    and the loss's non-finite values are followed back through the graph (``first_birth``)."""
    try:
        with np.errstate(all="ignore"), _Provenance() as seen:  # (NumPy warned already)
            lin = Linearized(f, args, kwargs, argnums)
        watch = seen.watch
        outs = tree_flatten(lin.out)[0]
        born, came = first_birth(outs), first_birth(outs, constants=True)
    except Exception:  # noqa: BLE001  (a second run that fails differently: keep the first error)
        born = came = None
    if born is not None:
        node, (index, value) = born
        op, site = watch.site_of(node)
        within = watch.within.get(node.seq)
        how = f" (computing the derivative of {within}, in its pullback)" if within else ""
        where = site.describe() if site is not None else "a line pullback could not find"
        return LossError(f"{error}\nThe first non-finite value was born at {where}\n"
                         f"{op} of finite inputs gave {value} at index {index}{how}.")
    bad = _bad_input(args)
    if not bad and came is not None:
        node, (k, (index, value)) = came
        op, site = watch.site_of(node)
        where = f" at {site.describe()}" if site is not None else ""
        bad = (f"The first non-finite value came in{where}\n{op}'s argument {k}, a constant "
               f"(not a differentiated argument), holds {value} at index {index}.")
    if bad:
        return LossError(f"{error}\n{bad}")
    return LossError(f"{error}\nRunning {fname_of(f)} again found no operation that made "
                     "it from finite values (does it draw random numbers, or read state that "
                     "changed?).")


def _bad_input(args) -> str:
    """The sentence naming the first argument that is not finite, or ``""``."""
    for i, a in enumerate(args):
        for leaf in tree_flatten(a)[0]:
            bad = next((b for b in map(_first_bad, _values(leaf)) if b), None)
            if bad is not None:
                return (f"Argument {i} is not finite: {bad[1]} at index {bad[0]}; "
                        "no operation made the non-finite value, it came in.")
    return ""


def graph_loss_error(error: LossError, loss) -> LossError:
    """``error`` (a non-finite loss of a graph already recorded, as ``backward()`` has) with
    the first operation in it that made a NaN or infinity from finite inputs."""
    found = first_birth(loss)
    if found is None:
        came = first_birth(loss, constants=True)
        return LossError(f"{error}\nNo operation in its graph made the non-finite value from "
                         "finite inputs: " + ("a param or a constant is not finite." if came is None
                                              else f"{_op_name(came[0].rule)}'s argument "
                                              f"{came[1][0]}, a constant, holds {came[1][1][1]} "
                                              f"at index {came[1][1][0]}."))
    node, bad = found
    return LossError(
        f"{error}\nThe first non-finite value in its graph: {_op_name(node.rule)} of finite "
        f"inputs gave {bad[1]} at index {bad[0]}. Record the forward pass under "
        "pb.detect_anomaly() to stop at the line of your code that called it.")
