"""``Params``, an ordered set of params, and ``Grads``, gradients keyed by param: the
collections of Tracker's ``gradient(fn, ps)`` and ``update!(opt, ps, gs)``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from .._engine.core import Tracked, plain
from .leaf import Param, _a, check_live


class Params:
    """An ordered set of params, compared by identity (Tracker's ``Params``). Its repr
    shows each param's name (or its position), shape and dtype.

    Args:
        params: an iterable of params (made with ``pb.param``); one given twice is held
            once.

    >>> W, b = pb.param(np.ones((3, 2)), name="W"), pb.param(0.0)
    >>> ps = pb.Params([W, b, W]); ps
    Params(W: (3, 2) float64, #1: () float64)
    """

    __module__ = "pullback"

    def __init__(self, params: Iterable[Param] = ()) -> None:
        self._params: list[Param] = []
        self._ids: set[int] = set()
        if isinstance(params, (Tracked, dict, np.ndarray)) or not isinstance(params, Iterable):
            # (iterating a param or an array would give its rows, a dict its keys)
            raise TypeError(
                f"pullback: Params takes a list of params (values made with pb.param), got "
                f"{_a(params)}: write pb.Params([W]), or pb.Params(d.values()) for a dict"
                + (" (of an array: W = pb.param(x); pb.Params([W]))"
                   if isinstance(params, np.ndarray) else ""))
        for p in params:
            self.add(p)

    def add(self, p: Param) -> None:
        if not isinstance(p, Param):
            raise TypeError(
                f"pullback: Params holds values made with pb.param, got {_a(p)}; make it "
                "with W = pb.param(x) and use W in the loss"
            )
        check_live(p, "pb.Params")
        if id(p) not in self._ids:
            self._ids.add(id(p))
            self._params.append(p)

    def __iter__(self) -> Iterator[Param]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __contains__(self, p: object) -> bool:
        return id(p) in self._ids

    def __repr__(self) -> str:
        return "Params(" + ", ".join(
            f"{_label(p, i)}: {_shape_dtype_text(p)}" for i, p in enumerate(self._params)) + ")"


def _label(p: Param, i: int) -> str:
    """How a repr names the param at position ``i``: its name, or ``#i``."""
    return p.name if p.name is not None else f"#{i}"


def _shape_dtype_text(x: Any) -> str:
    """``(3, 2) float64`` for an array (or a param, or a tracked value); ``None``."""
    if x is None:
        return "None"
    v = plain(x)
    return f"{np.shape(v)} {getattr(v, 'dtype', np.result_type(v))}"


class Grads:
    """Gradients keyed by param (by identity): ``gs[W]``, made by ``pb.gradient``. Its
    repr shows each param's name (or position) and its gradient's shape and dtype.

    Args:
        pairs: ``(param, gradient)`` pairs, one per param.

    >>> W, b = pb.param(np.ones(2)), pb.param(0.5)
    >>> gs = pb.gradient(lambda: np.sum(W * b), pb.Params([W, b]))
    >>> gs[W], gs[b]
    (array([0.5, 0.5]), array(2.))
    >>> gs
    Grads(#0: (2,) float64, #1: () float64)
    """

    __module__ = "pullback"

    def __init__(self, pairs: Iterable[tuple[Param, Any]]) -> None:
        if isinstance(pairs, (Tracked, dict, np.ndarray)) or not isinstance(pairs, Iterable):
            raise TypeError(f"pullback: Grads takes (param, gradient) pairs, got {_a(pairs)}")
        self._grads = {}
        for pair in pairs:
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2
                    and isinstance(pair[0], Param)):
                raise TypeError(
                    "pullback: Grads takes (param, gradient) pairs, one per pb.param; got an "
                    f"entry that is {_a(pair)}")
            self._grads[id(pair[0])] = (pair[0], pair[1])

    def __getitem__(self, p: Param) -> Any:
        try:
            return self._grads[id(p)][1]
        except KeyError:
            raise KeyError(
                "pullback: this value is not one of the Params the gradient was taken for"
            ) from None

    def __contains__(self, p: object) -> bool:
        return id(p) in self._grads

    def __iter__(self) -> Iterator[Param]:
        return (p for p, _ in self._grads.values())

    def __len__(self) -> int:
        return len(self._grads)

    def items(self) -> list[tuple[Param, Any]]:
        return list(self._grads.values())

    def values(self) -> list[Any]:
        return [g for _, g in self._grads.values()]

    def __repr__(self) -> str:
        return "Grads(" + ", ".join(f"{_label(p, i)}: {_shape_dtype_text(g)}" for i, (p, g) in
                                    enumerate(self._grads.values())) + ")"

    def _no_arithmetic(self, *other: Any) -> Any:
        raise TypeError(
            "pullback: Grads has no arithmetic (gs + gs, 2 * gs); combine the gradients per "
            "param: pb.Grads((p, gs1[p] + gs2[p]) for p in gs1), or accumulate in .grad with "
            "loss.backward() over the micro-batches")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arithmetic
    __truediv__ = __neg__ = _no_arithmetic
