"""What a program recorded by ``pb.jit`` is: its nodes (traced boxes, each holding in
``args`` the call ``(func, args, kwargs)`` that computed it), its guards, parameters and
outputs, held by the ``Program`` that the passes rewrite and emit.py writes out; and the
functions a node may call besides NumPy's own."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._engine.core import Tracked
from .._engine.interception import original_of


def _astype(x, dtype, **kwargs):
    return x.astype(dtype, **kwargs)


def _eye_product(x, eye, left):
    """``eye @ x`` (``left``) or ``x @ eye`` for the identity ``eye``: ``x`` itself, as a
    new C-ordered array, wherever ``x`` is finite (``0 * inf`` is NaN in the matmul)."""
    if np.isfinite(x).all():
        return np.add(x, 0.0, order="C")
    return eye @ x if left else x @ eye


def _finite_number(x):
    """``np.isfinite`` of a float16, 32 or 64 number, as a guard tests it."""
    return math.isfinite(x)


# whose result's shape and dtype follow from those of the first argument (the others
# being constants)
_BY_FIRST = frozenset(original_of(f) for f in (
    np.reshape, np.transpose, np.swapaxes, np.moveaxis, np.broadcast_to, np.sum, np.mean,
    np.max, np.min, np.amax, np.amin, np.prod, np.all, np.any, np.ravel, np.squeeze,
    np.expand_dims, np.cumsum, np.real, np.imag, np.zeros_like, np.ones_like, np.full_like,
    np.copy, np.ascontiguousarray)) | {_astype}
# whose result's shape and dtype follow from those of all their (array) arguments
_BY_ALL = frozenset(original_of(f) for f in (np.dot, np.outer, np.inner, np.where))


def _leaves(x, out):
    """The nodes among a call's arguments (in lists, tuples, slices and dicts)."""
    if isinstance(x, Tracked):
        out.append(x)
    elif type(x) in (list, tuple):
        for a in x:
            _leaves(a, out)
    elif type(x) is slice:
        _leaves((x.start, x.stop, x.step), out)
    elif type(x) is dict:
        _leaves(tuple(x.values()), out)
    return out


class Program:
    """One trace's program as the passes see it. ``events``: the nodes and the guards
    ``(box, kind, expected)`` in the order they ran; ``params``: ``(name, box)`` per input;
    ``outs``: the output's leaves (nodes or constants). What the passes find: ``same`` (a
    node computing what an earlier one did: that one), ``subst`` (a node equal to another
    node or to a constant), ``calls`` (a node computed by a cheaper call), ``into`` (an
    elementwise node written into an operand that dies there) and ``free`` (the big arrays
    let go after each event, by its position)."""

    __slots__ = ("events", "params", "outs", "same", "subst", "calls", "into", "free")

    def __init__(self, events: list[Any], params: list[tuple[str, Any]], outs: list[Any]):
        self.events, self.params, self.outs = events, params, outs
        self.same: dict[int, Any] = {}
        self.subst: dict[int, Any] = {}
        self.calls: dict[int, Any] = {}
        self.into: dict[int, Any] = {}
        self.free: dict[int, list[Any]] = {}

    def canon(self, x):
        """What ``x`` stands for: the first node of its computation, or what that equals."""
        if not isinstance(x, Tracked):
            return x
        x = self.same.get(id(x), x)
        while isinstance(x, Tracked) and id(x) in self.subst:
            x = self.subst[id(x)]
            if isinstance(x, Tracked):
                x = self.same.get(id(x), x)
        return x

    def mapped(self, x):
        """A call's arguments ``x`` with each node replaced by what it stands for."""
        if isinstance(x, Tracked):
            return self.canon(x)
        if type(x) is list or type(x) is tuple:
            return type(x)(self.mapped(a) for a in x)
        if type(x) is slice:
            return slice(self.mapped(x.start), self.mapped(x.stop), self.mapped(x.step))
        return x

    def call_of(self, box):
        """The call that computes node ``box``: its own, or a cheaper one."""
        return self.calls.get(id(box), box.args)

    def operands(self, call):
        """The nodes a call reads, as they stand after the passes."""
        found = []
        stack = [call[1], tuple(call[2].values())]
        while stack:
            for a in stack.pop():
                if isinstance(a, Tracked):
                    a = self.canon(a)
                    if isinstance(a, Tracked):
                        found.append(a)
                elif type(a) in (list, tuple):
                    stack.append(a)
                elif type(a) is slice:
                    stack.append((a.start, a.stop, a.step))
        return found

    def guards(self):
        return [e for e in self.events if not isinstance(e, Tracked)]

    def live(self):
        """The nodes an output or a guard needs, in order (what is left is dropped)."""
        needed: set[int] = set()
        stack = [self.canon(o) for o in self.outs if isinstance(o, Tracked)]
        stack += [self.canon(e[0]) for e in self.guards()]
        while stack:
            b = stack.pop()
            if not isinstance(b, Tracked) or id(b) in needed:
                continue
            needed.add(id(b))
            if b.args is not None:
                stack.extend(self.operands(self.call_of(b)))
        return [e for e in self.events if isinstance(e, Tracked) and id(e) in needed
                and self.canon(e) is e and e.args is not None]
