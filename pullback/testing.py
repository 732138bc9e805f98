"""Checking derivatives against central finite differences, in float64."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ._engine.arguments import function_named
from ._engine.core import plain
from .api import vjp
from .tree import kind_of, tree_flatten, tree_map, tree_unflatten

__all__ = ["check_grads", "check_batched"]


def _as_float64(x):
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return x.astype(np.complex128)
    if x.dtype.kind == "f":
        return x.astype(np.float64)
    return x


def _random_like(x, rng):
    x = np.asarray(x)
    r = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        r = r + 1j * rng.standard_normal(x.shape)
    return r.astype(x.dtype) if x.dtype.kind in "fc" else np.zeros(x.shape)


def _inner(a, b):
    """The real inner product of two pytrees: sum of Re(conj(a) * b)."""
    la, _ = tree_flatten(a)
    lb, _ = tree_flatten(b)
    return float(sum(np.sum(np.real(np.conj(np.asarray(plain(u))) * np.asarray(plain(v))))
                     for u, v in zip(la, lb)))


def _axpy(eps, v, x):
    lx, treedef = tree_flatten(x)
    lv, _ = tree_flatten(v)
    return tree_unflatten(treedef, [xi + eps * vi if np.asarray(xi).dtype.kind in "fc" else xi
                                    for xi, vi in zip(lx, lv)])


def _check_outputs(out, name: str, check: str) -> None:
    """Refuse outputs ``check`` cannot compare: None (a missing return), strings, objects."""
    for o in tree_flatten(out)[0]:
        if o is None:
            raise TypeError(f"pullback: {check}: {name} returned None" + (
                " (is a return statement missing?)" if out is None else " inside its output")
                + "; it needs to return float arrays (or a pytree of them)")
        v = plain(o)
        dtype = getattr(v, "dtype", None)
        kind = np.asarray(v).dtype.kind if dtype is None else dtype.kind
        if kind not in "biufc":
            raise TypeError(f"pullback: {check}: {name} returned {_a(v)}" + (
                "" if o is out else " inside its output")
                + "; it needs to return float arrays (or a pytree of them)")


def _a(x) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of dtype {x.dtype}"
    return kind_of(x)


def _real(value, name: str, positive: bool) -> None:
    """Refuse a tolerance or a step that is not a finite real number ``>= 0`` (``> 0``)."""
    if not (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
            and math.isfinite(value) and (value > 0 if positive else value >= 0)):
        raise ValueError(f"pullback: check_grads needs {name} {'>' if positive else '>='} 0, "
                         f"a finite real number, got {value!r}")


def check_grads(f: Callable[..., Any], *args: Any, order: int = 2, eps: float = 1e-6,
                rtol: float = 1e-6, atol: float = 1e-7, seed: int = 0) -> None:
    """Compare ``f``'s reverse-mode derivatives with central finite differences in float64.

    Along a random direction ``v`` and a random output cotangent ``u``, checks
    ``<vjp(u), v>`` against ``(<u, f(x + eps v)> - <u, f(x - eps v)>) / (2 eps)``; for
    ``order=2`` it then checks the pullback itself, as a function of the primals and the
    cotangent, the same way, and so on for higher orders. Raises AssertionError with the
    relative error where they differ by more than ``atol + rtol * max(|reverse|, |finite|)``.

    Leaves of ``args`` that are not floating-point or complex (integers, booleans, strings)
    are held fixed, as constants of ``f``. ``seed`` seeds the random directions, so a
    failure repeats.

    >>> pb.check_grads(lambda x: np.sum(np.tanh(x) ** 2), np.random.randn(3), order=2)
    >>> pb.check_grads(lambda x, n: np.sum(x ** n), np.random.randn(3), 3)
    """
    name = function_named(f, "pb.check_grads")
    if not (isinstance(order, (int, np.integer)) and not isinstance(order, bool) and order >= 1):
        raise ValueError("pullback: check_grads needs order 1 or 2 (first, or also second "
                         f"derivatives) or a higher positive integer, got {order!r}")
    _real(eps, "a step eps", positive=True)
    _real(rtol, "rtol", positive=False)
    _real(atol, "atol", positive=False)
    given, treedef = tree_flatten(tuple(args))
    leaves = [_as_float64(x) for x in given]
    fixed = [np.asarray(x).dtype.kind not in "fc" for x in leaves]
    if all(fixed):  # nothing would be checked: a pass would say nothing
        raise ValueError(
            "pullback: check_grads got no floating-point argument to check (integer, boolean "
            "and string arguments are held fixed); pass floats, np.asarray(x, dtype=float)"
        )
    if any(fixed):
        def on_inexact(*free: Any) -> Any:
            it = iter(free)
            return f(*tree_unflatten(treedef, [g if c else next(it)
                                               for g, c in zip(given, fixed)]))

        on_inexact.__qualname__ = name
        return check_grads(on_inexact, *[x for x, c in zip(leaves, fixed) if not c],
                           order=order, eps=eps, rtol=rtol, atol=atol, seed=seed)
    args = tree_unflatten(treedef, leaves)
    rng = np.random.default_rng(seed)
    out, vjp_fn = vjp(f, *args)
    _check_outputs(out, name, "check_grads")
    u = tree_map(lambda o: _random_like(o, rng), out)
    v = tree_map(lambda a: _random_like(a, rng), args)
    analytic = _inner(vjp_fn(u), v)
    numeric = (_inner(u, f(*_axpy(eps, v, args))) - _inner(u, f(*_axpy(-eps, v, args)))) \
        / (2 * eps)
    scale = max(abs(analytic), abs(numeric))
    if not abs(analytic - numeric) <= atol + rtol * scale:
        rel = abs(analytic - numeric) / (scale or 1.0)
        raise AssertionError(
            f"pullback: check_grads: {name}: reverse mode gives {analytic:.12g}, finite "
            f"differences give {numeric:.12g} (relative error {rel:.3g}, order {order} left "
            "to check)"
        )
    if order > 1:
        def pullback_of(*xs_and_u: Any) -> Any:
            return vjp(f, *xs_and_u[:-1])[1](xs_and_u[-1])

        pullback_of.__qualname__ = f"pullback of {name}"
        check_grads(pullback_of, *args, u, order=order - 1, eps=eps, rtol=rtol, atol=atol,
                    seed=seed + 1)


def check_batched(f: Callable[..., Any], *args: Any, batch: int = 3, seed: int = 0) -> None:
    """Check that a stack of ``batch`` cotangents sent back through one pass gives the same
    cotangents as ``batch`` separate passes (every pullback must accept batch axes).

    >>> pb.testing.check_batched(lambda x: np.cumsum(x), np.random.randn(4))
    """
    name = function_named(f, "pb.testing.check_batched")
    if not args:
        raise TypeError(f"pullback: check_batched got no argument to check: pass {name}'s "
                        "arguments after it, check_batched(f, x)")
    if not (isinstance(batch, (int, np.integer)) and not isinstance(batch, bool) and batch >= 1):
        raise ValueError(f"pullback: check_batched's batch must be a positive integer (the "
                         f"number of cotangents stacked), got {batch!r}")
    args = tree_map(_as_float64, tuple(args))
    rng = np.random.default_rng(seed)
    out, vjp_fn = vjp(f, *args)
    _check_outputs(out, name, "check_batched")
    us = [tree_map(lambda o: _random_like(o, rng), out) for _ in range(batch)]
    leaves = [tree_flatten(u)[0] for u in us]
    _, treedef = tree_flatten(us[0])
    stacked = tree_unflatten(treedef, [np.stack(parts) for parts in zip(*leaves)])
    together = vjp_fn.batched(stacked, (batch,))
    for k, u in enumerate(us):
        alone = vjp_fn(u)
        for a, b in zip(tree_flatten(alone)[0], tree_flatten(together)[0]):
            np.testing.assert_allclose(
                np.asarray(b)[k], a, rtol=1e-10, atol=1e-12,
                err_msg=f"pullback: check_batched: slice {k} of a batched pullback of "
                        f"{name} differs from a single pass")
