"""The watch: the one hook of the engine that debugging works through. While a watch is set
for the thread (``state.watch``), the hot paths take ``apply`` and ``record`` hands the
watch every node it makes, with the NumPy function that made it; ``backward_pass`` hands
it every node's cotangents. With no watch set the engine pays one test it already made
(``state.slow`` stands where ``state.no_grad`` stood) and a read of a module global in
``record``.

The watch notes the op and the user's line of every node; with ``check`` it also checks
each forward value and each pullback's cotangents for a NaN or infinity born of finite
values (``detect_anomaly``).
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
from typing import Any

import numpy as np

from .._engine import core
from .._engine.core import Tracked, plain, state
from .._engine.records import Record
from .._engine.registry import name_of

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # pullback/
_NUMPY = os.path.dirname(os.path.abspath(np.__file__)) + os.sep


# ---------------------------------------------------------------------------- the user's line

class Site:
    """Where a node was recorded: the first frame outside pullback and NumPy."""

    __slots__ = ("filename", "lineno", "function")

    def __init__(self, filename: str, lineno: int, function: str) -> None:
        self.filename, self.lineno, self.function = filename, lineno, function

    @property
    def source(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    @property
    def short(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"

    def describe(self) -> str:
        text = f"{self.short} in {self.function}"
        return f"{text}:\n    {self.source}" if self.source else text


def _is_ours(filename: str) -> bool:
    return filename.startswith(_PACKAGE) or filename.startswith(_NUMPY)


def user_site(depth: int = 1) -> Site | None:
    """The innermost frame on the stack outside pullback and NumPy."""
    frame: Any = sys._getframe(depth)
    while frame is not None:
        code = frame.f_code
        if not _is_ours(os.path.abspath(code.co_filename)):
            return Site(code.co_filename, frame.f_lineno, code.co_name)
        frame = frame.f_back
    return None


# ---------------------------------------------------------------------------- finiteness

def _values(x):
    """The plain numeric values in ``x`` (an argument: a value, or lists and tuples)."""
    if isinstance(x, Tracked):
        yield plain(x)
    elif type(x) is list or type(x) is tuple:
        for v in x:
            yield from _values(v)
    elif isinstance(x, (np.ndarray, np.generic, float, complex)):
        yield x


def _first_bad(v) -> tuple[Any, Any] | None:
    """``(index, value)`` of the first NaN or infinity in ``v``, or None."""
    if isinstance(v, (float, complex)):
        return None if np.isfinite(v) else ((), v)
    if getattr(v, "dtype", None) is None or v.dtype.kind not in "fc":
        return None
    bad = ~np.isfinite(v)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return index, v[index]


def _all_finite(args) -> bool:
    return all(_first_bad(v) is None for v in _values(args))


def _op_name(rule, func=None) -> str:
    """How messages name the operation of a node."""
    return name_of(func) if func is not None else rule.name()


def _nodes_of(out):
    """The nodes ``record`` made: the result, or the hub and each output of several."""
    if isinstance(out, Tracked):
        return [out]
    nodes = [o for o in out if isinstance(o, Tracked)] if isinstance(out, (tuple, list)) else []
    return ([nodes[0].args] if nodes else []) + nodes


# ---------------------------------------------------------------------------- the watch

class _Watch:
    """What a thread's ``detect_anomaly`` or ``graph`` sees: every node's op and site, and,
    with ``check``, the anomaly checks of the forward and the backward pass."""

    def __init__(self, check: bool, outer: _Watch | None, collect: bool = False) -> None:
        self.check: bool = check or (outer is not None and outer.check)
        self.collect = collect  # check, noting where each node was made, but raise nothing
        self.outer = outer
        self.seen: dict[int, tuple[str, Site | None]] = {}  # node.seq -> (op, site)
        self.within: dict[int, str] = {}  # node.seq -> the op whose pullback recorded it

    def __call__(self, out, args, func):
        nodes = _nodes_of(out)
        if not nodes:
            return
        op = _op_name(nodes[0].rule, func)
        site = user_site(2)
        running = _running_pullback()
        if running is not None and running[1] is not None:
            # recorded by a pullback (a derivative computed inside the function, a Hessian):
            # the user's line is the one that recorded the node being pulled back, not the
            # call of the transform that runs the backward pass
            site = running[1]
        watch = self
        while watch is not None:
            for node in nodes:
                watch.seen[node.seq] = (op, site)
                if running is not None:
                    watch.within[node.seq] = running[0]
            watch = watch.outer
        if not self.check:
            return
        for node in nodes:
            if node.rule.index is not None:  # one output of several: its hub is checked
                continue
            value = node.value
            bad = next((b for b in map(_first_bad, _values(value)) if b), None) \
                if isinstance(value, tuple) else _first_bad(plain(value))
            if bad is not None and _all_finite(args) and not self.collect:
                within = "" if running is None else (
                    f" (computing the derivative of {running[0]}, in its pullback)")
                raise _anomaly(
                    f"pullback: {op} of finite inputs gave {bad[1]} at index {bad[0]} "
                    f"in the forward pass{within}, at {_where(site)}", site)
            node.rule = _Checked(node.rule, op, site)

    def site_of(self, node) -> tuple[str, Site | None]:
        return self.seen.get(node.seq) or (_op_name(node.rule), None)


class _Checked(Record):
    """A node's record under ``pb.detect_anomaly``, whose ``pull`` checks what its own
    record's returns: a cotangent with a NaN or infinity made from a finite one is an
    anomaly, and an error raised inside the pullback gets a note naming the line that
    recorded the node. It answers for its record otherwise."""

    __slots__ = ("rule", "op", "site")

    def __init__(self, rule, op: str, site: Site | None) -> None:
        self.rule, self.op, self.site = rule, op, site

    elementwise = property(lambda self: self.rule.elementwise)
    view_of = property(lambda self: self.rule.view_of)

    def name(self):
        return self.op

    def saved(self):
        return self.rule.saved()

    def pull(self, node, g):
        pairs = _noted(lambda: list(self.rule.pull(node, g)), self.op, self.site)
        given = getattr(g, "slots", g)  # (a hub's: one slot per output)
        if not _all_finite(given) or getattr(state.watch, "collect", False):
            return pairs
        for k, (parent, ct) in enumerate(pairs):
            bad = None if ct is None else next(
                (b for b in map(_first_bad, _values(ct)) if b), None)
            if bad is not None:
                position = next((i for i, a in enumerate(node.args) if a is parent), k)
                raise _anomaly(
                    f"pullback: the pullback of {self.op} turned finite cotangents into "
                    f"{bad[1]} at index {bad[0]} of the cotangent of its argument {position}, "
                    f"in the backward pass; the node was recorded at {_where(self.site)}",
                    self.site)
        return pairs


def _noted(call, op, site):
    """``call()``, an error it raises noting the pullback of ``op`` recorded at ``site``."""
    stack = _pullbacks.__dict__.setdefault("stack", [])
    stack.append((op, site))
    try:
        return call()
    except FloatingPointError:
        raise
    except Exception as error:
        if getattr(error, "pullback_site", None) is None:
            _add_note(error, f"pullback: raised in the pullback of {op}, recorded at "
                             f"{_where(site)}")
            _mark(error, site)
        raise
    finally:
        stack.pop()


# the checked pullbacks running on this thread, innermost last: (op, the site of its node)
_pullbacks = threading.local()


def _running_pullback() -> tuple[str, Site | None] | None:
    stack = getattr(_pullbacks, "stack", None)
    return stack[-1] if stack else None


def _where(site: Site | None) -> str:
    if site is None:
        return "a line recorded outside pb.detect_anomaly()"
    return site.describe()


def _anomaly(message: str, site: Site | None) -> FloatingPointError:
    error = FloatingPointError(
        message + "\nFix the operation's domain there (a clip, a where, an epsilon), or "
        "differentiate a more stable form of it.")
    _mark(error, site)
    return error


def _mark(error: BaseException, site: Site | None) -> None:
    """Say on ``error`` that it already names the user's line (``site``)."""
    try:
        error.pullback_site = site or True  # type: ignore[attr-defined]
    except AttributeError:  # an exception type without a __dict__
        pass


class _Watching:
    """Set a watch for the thread for the duration of a ``with`` block."""

    check = collect = False

    def __enter__(self):
        self.watch = _Watch(self.check, state.watch, self.collect)
        if self.watch.outer is None:
            core.watching.add(threading.get_ident())
            state.slow += 1
        state.watch = self.watch
        return self

    def __exit__(self, exc_type, exc, tb):
        state.watch = self.watch.outer
        if self.watch.outer is None:
            state.slow -= 1
            core.watching.discard(threading.get_ident())
        if exc is not None and self.check and getattr(exc, "pullback_site", None) is None:
            _point_at_user(exc, tb)
        return False


def _add_note(exc: BaseException, note: str) -> None:
    if hasattr(exc, "add_note"):  # Python 3.11
        exc.add_note(note)
    elif exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}\n{note}",) + exc.args[1:]


def _point_at_user(exc: BaseException, tb) -> None:
    """Note on an error raised inside a rule in the forward pass the line of the user's
    that called it (a pullback's errors get theirs from ``_checked``)."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    inside = False  # the innermost user frame with a frame of pullback's below it
    for frame in reversed(frames):
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename.startswith(_PACKAGE):
            inside = True
        elif inside and not _is_ours(filename):
            site = Site(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
            _add_note(exc, f"pullback: raised inside pullback, called at {site.describe()}")
            return


def _tracked(x):
    """The tracked values in ``x`` (an argument: a value, or lists and tuples)."""
    if isinstance(x, Tracked):
        yield x
    elif type(x) is list or type(x) is tuple:
        for v in x:
            yield from _tracked(v)
