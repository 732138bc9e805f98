"""Debugging: where a NaN was born (``detect_anomaly``, and the provenance in a losscheck's
message), a picture of the recorded graph (``graph``), and what the graph keeps alive for
the backward pass (``memory_report``).

All of it works through one hook of the engine: while a *watch* is set for the thread
(``state.watch``), the hot paths take ``apply`` and ``record`` hands the watch every node
it makes, with the NumPy function that made it; ``backward_pass`` hands it every node's
cotangents. With no watch set the engine pays one test it already made (``state.slow``
stands where ``state.no_grad`` stood) and a read of a module global in ``record``.
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._engine import core
from ._engine.backward import (
    Linearized,
    _product_pullback,
    _row_pullback,
    fname_of,
    function_named,
    normalize_argnums,
)
from ._engine.core import Tracked, box_at, plain, state
from ._engine.registry import (
    Bilinear,
    Elementwise,
    LossError,
    NotImplementedCotangent,
    Pick,
    Reduction,
    Unbatched,
    name_of,
)
from .tree import tree_flatten

__all__ = ["detect_anomaly", "graph", "Graph", "memory_report", "MemoryReport"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NUMPY = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_lock = threading.Lock()
_ROWS = (Elementwise, Bilinear, Reduction)  # the rules that are table rows


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
    if func is not None:
        return name_of(func)
    if isinstance(rule, _ROWS):
        return name_of(rule.func)
    if rule.__class__ is Unbatched:
        rule = rule.rule
    name = getattr(rule, "__qualname__", None) or repr(rule)
    return name.rsplit(".", 1)[-1]


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
            if node.rule.__class__ is Pick:
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
            node.rule = _checked(node, op, site)

    def site_of(self, node) -> tuple[str, Site | None]:
        return self.seen.get(node.seq) or (_op_name(node.rule), None)


def _checked(node, op: str, site: Site | None):
    """``node``'s rule, as a general rule whose pullback checks what it returns: a
    cotangent with a NaN or infinity made from a finite one is an anomaly, and an error
    raised inside the pullback gets a note naming the line that recorded the node."""
    rule = node.rule
    if rule.__class__ is Unbatched:
        return Unbatched(_checked_pullback(rule.rule, op, site))
    if isinstance(rule, _ROWS):
        row = rule
        pairs = {Elementwise: _row_pullback, Bilinear: _product_pullback,
                 Reduction: Reduction.pull}[row.__class__]

        def rule(g):
            args, level = node.args, node.level
            positions = [i for i, a in enumerate(args)
                         if isinstance(a, Tracked) and a.level == level]
            cts = [None] * len(args)
            for i, (_, ct) in zip(positions, pairs(row, node, g)):
                cts[i] = ct
            return tuple(cts)

        rule.__qualname__ = op
    return _checked_pullback(rule, op, site)


def _checked_pullback(pullback, op, site):
    def check(g, ct, position):
        if ct is not None and ct.__class__ is not NotImplementedCotangent:
            bad = next((b for b in map(_first_bad, _values(ct)) if b), None)
            if bad is not None and _all_finite(g) and not getattr(state.watch, "collect",
                                                                   False):
                raise _anomaly(
                    f"pullback: the pullback of {op} turned finite cotangents into {bad[1]} "
                    f"at index {bad[0]} of the cotangent of its argument {position}, in the "
                    f"backward pass; the node was recorded at {_where(site)}", site)
        return ct

    def noted(call):
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

    def thunk(g, c, position):
        return lambda: check(g, noted(c), position)

    def checked_pullback(g):
        cts = noted(lambda: pullback(g))
        if not isinstance(cts, (tuple, list)):
            return cts  # the engine says what is wrong with it
        return tuple(thunk(g, c, i) if callable(c) and c.__class__ is not
                     NotImplementedCotangent else check(g, c, i) for i, c in enumerate(cts))

    checked_pullback.__qualname__ = getattr(pullback, "__qualname__", op)
    return checked_pullback


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
        with _lock:
            core.watching += 1
        if self.watch.outer is None:
            state.slow += 1
        state.watch = self.watch
        return self

    def __exit__(self, exc_type, exc, tb):
        state.watch = self.watch.outer
        if self.watch.outer is None:
            state.slow -= 1
        with _lock:
            core.watching -= 1
        if exc is not None and self.check and getattr(exc, "pullback_site", None) is None:
            _point_at_user(exc, tb)
        return False


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
        if isinstance(args, Tracked):  # an output of several: its hub
            stack.append(args)
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


def _tracked(x):
    if isinstance(x, Tracked):
        yield x
    elif type(x) is list or type(x) is tuple:
        for v in x:
            yield from _tracked(v)


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
    bad = _bad_input(args, argnums)
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


def _bad_input(args, argnums) -> str:
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


# ---------------------------------------------------------------------------- the graph

class _Watched(_Watching):
    check = False


class _Provenance(_Watching):  # where each node was made, pullbacks included: loss_error's
    check = collect = True


def _record_run(f, args, kwargs, nums) -> tuple[Linearized, _Watch]:
    with _Watched() as watching:
        lin = Linearized(f, args, kwargs, nums)
    return lin, watching.watch


class Node:
    """One recorded operation of a ``Graph``: its op, output shape and dtype, the line of
    user code that called it, its inputs (the ids of other nodes) and the bytes it keeps
    alive for the backward pass (arrays shared with an earlier node or an input count
    there)."""

    __slots__ = ("id", "op", "shape", "dtype", "site", "inputs", "saved_bytes", "kind")

    def __init__(self, id, op, shape, dtype, site, inputs, kind):
        self.id, self.op, self.shape, self.dtype = id, op, shape, dtype
        self.site, self.inputs, self.kind = site, inputs, kind
        self.saved_bytes = 0

    def __repr__(self) -> str:
        return f"Node({self.id}, {self.op}, shape={self.shape}, dtype={self.dtype})"


def _shape_dtype(value):
    v = plain(value)
    if isinstance(v, tuple):
        return tuple(np.shape(plain(o)) for o in v), "tuple"
    return tuple(np.shape(v)), str(np.result_type(v))


def _arrays(x, found, seen_objects, depth=0):
    """Every ndarray reachable from ``x`` through boxes, containers and closures, keyed by
    the id of the memory's owner (a view keeps its base alive)."""
    if depth > 8 or id(x) in seen_objects:
        return
    if isinstance(x, np.ndarray):
        while isinstance(x.base, np.ndarray):
            x = x.base
        found.setdefault(id(x), x)
        return
    if isinstance(x, np.generic):
        found.setdefault(id(x), x)
        return
    seen_objects.add(id(x))
    if isinstance(x, Tracked):
        _arrays(x.value, found, seen_objects, depth + 1)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _arrays(v, found, seen_objects, depth + 1)
    elif isinstance(x, dict):
        for v in x.values():
            _arrays(v, found, seen_objects, depth + 1)
    elif isinstance(x, Unbatched):
        _arrays(x.rule, found, seen_objects, depth + 1)
    elif callable(x) and getattr(x, "__closure__", None):
        for cell in x.__closure__:
            try:
                _arrays(cell.cell_contents, found, seen_objects, depth + 1)
            except ValueError:  # an empty cell
                pass


def _saved(node) -> dict[int, np.ndarray]:
    """The arrays ``node`` keeps alive for its pullback: its value, the plain values among
    its arguments and of its tracked arguments (a table row's pullback reads them), and
    those its pullback closes over."""
    found: dict[int, np.ndarray] = {}
    seen: set[int] = set()
    _arrays(plain(node.value), found, seen)
    args = node.args if isinstance(node.args, (list, tuple)) else ()
    for a in args:
        _arrays(plain(a) if isinstance(a, Tracked) else a, found, seen)
    rule = node.rule
    if not isinstance(rule, (*_ROWS, Pick)):  # (rows read their arguments)
        _arrays(rule, found, seen)
    return found


class Graph:
    """The graph ``f`` recorded for one call, made by ``pb.graph(f)(*args)``: ``nodes``
    (inputs, then operations in the order they ran), ``to_dot()``, ``summary()``, and a
    picture in Jupyter (``_repr_svg_``, through the ``graphviz`` package). ``name`` is
    the function's name and ``outputs`` the nodes of its results, as ``pb.graph`` gives
    them.

    >>> g = pb.graph(lambda x: np.sum(np.sin(x) * x))(np.ones(3))
    >>> [node.op for node in g.nodes]
    ['input 0', 'np.sin', 'np.multiply', 'np.sum']
    """

    def __init__(self, name: str, nodes: list[Node], outputs: list[int]) -> None:
        if not (isinstance(name, str) and isinstance(nodes, list)
                and all(isinstance(n, Node) for n in nodes) and isinstance(outputs, list)
                and all(isinstance(i, int) for i in outputs)):
            raise TypeError("pullback: a Graph is made by pb.graph(f)(*args), which records "
                            "f's call; it is not built by hand")
        self.name = name
        self.nodes = nodes
        self.outputs = outputs

    @property
    def saved_bytes(self) -> int:
        """The bytes the graph keeps alive for the backward pass, each array once."""
        return sum(n.saved_bytes for n in self.nodes)

    def to_dot(self) -> str:
        """The graph as Graphviz DOT text: one box per operation with its output shape and
        dtype and the line of user code that called it (the source in the tooltip);
        inputs are ellipses, outputs are drawn bold.

        >>> print(pb.graph(np.sin)(np.ones(2)).to_dot().splitlines()[0])
        digraph "sin" {
        """
        lines = [f"digraph {_quote(self.name)} {{", "  rankdir=TB;",
                 '  node [shape=box, fontname="Helvetica", fontsize=10];']
        outputs = set(self.outputs)
        for n in self.nodes:
            shape = f"{n.shape} {n.dtype}" if n.dtype != "tuple" else f"{len(n.shape)} outputs"
            label = f"{n.op}\n{shape}"
            attrs = []
            if n.site is not None:
                label += f"\n{n.site.short}"
                attrs.append(f"tooltip={_quote(n.site.short + ': ' + n.site.source)}")
            if n.kind == "input":
                attrs += ["shape=ellipse", "style=filled", 'fillcolor="#dbe9f6"']
            if n.id in outputs:
                attrs += ["penwidth=2", 'color="#b2182b"']
            lines.append(f"  n{n.id} [label={_quote(label)}" + "".join(
                ", " + a for a in attrs) + "];")
        for n in self.nodes:
            for i in n.inputs:
                lines.append(f"  n{i} -> n{n.id};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def summary(self) -> str:
        """A table of the operations: op, how many times it ran, the output shapes and
        the bytes its nodes keep alive for the backward pass.

        >>> print(pb.graph(lambda x: np.sum(x * x))(np.ones(2)).summary())
        op           count  output shapes  saved bytes
        input 0          1  (2,)                     0
        np.multiply      1  (2,)                    16
        np.sum           1  ()                       8
        total            3                          24
        """
        rows: dict[str, list[Any]] = {}
        for n in self.nodes:
            row = rows.setdefault(n.op, [0, [], 0])
            row[0] += 1
            shape = str(n.shape) if n.dtype != "tuple" else f"{len(n.shape)} outputs"
            if shape not in row[1]:
                row[1].append(shape)
            row[2] += n.saved_bytes
        table = [("op", "count", "output shapes", "saved bytes")]
        for op, (count, shapes, nbytes) in rows.items():
            shown = ", ".join(shapes[:3]) + (", ..." if len(shapes) > 3 else "")
            table.append((op, str(count), shown, str(nbytes)))
        table.append(("total", str(len(self.nodes)), "", str(self.saved_bytes)))
        return _table(table, right={1, 3})

    def svg(self) -> str:
        """The picture as SVG text, drawn by Graphviz (``pip install 'pullback[graph]'``
        and Graphviz's ``dot`` program)."""
        try:
            import graphviz
        except ImportError:
            raise ImportError(
                "pullback: drawing a graph needs the graphviz Python package and Graphviz's "
                "dot program: pip install 'pullback[graph]', and apt install graphviz (or "
                "brew install graphviz, conda install graphviz). g.to_dot() and g.summary() "
                "need neither."
            ) from None
        try:
            return graphviz.Source(self.to_dot()).pipe(format="svg").decode()
        except graphviz.ExecutableNotFound:
            raise RuntimeError(
                "pullback: the graphviz Python package is installed but Graphviz's dot "
                "program is not on PATH: apt install graphviz (or brew install graphviz, "
                "conda install graphviz). g.to_dot() gives the DOT text without it."
            ) from None

    def _repr_svg_(self) -> str:
        return self.svg()

    def __repr__(self) -> str:
        ops = sum(n.kind == "op" for n in self.nodes)
        inputs = sum(n.kind == "input" for n in self.nodes)
        return (f"<pullback graph of {self.name}: {_count(inputs, 'input')}, "
                f"{_count(ops, 'operation')}, {self.saved_bytes} bytes saved for the "
                "backward pass>")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _table(rows, right=frozenset()) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)


def _build_graph(f, args, kwargs, argnums) -> Graph:
    _, nums = normalize_argnums(argnums, len(args), fname_of(f))
    lin, watch = _record_run(f, args, kwargs, nums)
    level = lin.level
    outs = tree_flatten(lin.out)[0]
    roots = [b for b in (box_at(o, level) for o in outs) if b is not None]
    # the nodes the outputs depend on, at the graph's level, in creation order
    found: dict[int, Tracked] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node.seq in found:
            continue
        found[node.seq] = node
        args_ = node.args
        if isinstance(args_, Tracked):
            stack.append(args_)
        elif args_ is not None:
            stack.extend(a for a in _tracked(args_) if a.level == level)
    leaf_names = {}
    for i, (_, _, boxes) in zip(nums, lin.inputs):
        for k, box in enumerate(boxes):
            leaf_names[box.seq] = f"input {i}" + (f"[{k}]" if len(boxes) > 1 else "")
            found.setdefault(box.seq, box)
    known: set[int] = {id(a) for a in _input_arrays(args)}
    nodes = []
    for seq in sorted(found):
        t = found[seq]
        shape, dtype = _shape_dtype(t.value)
        if t.rule is None:
            node = Node(seq, leaf_names.get(seq, "input"), shape, dtype, None, [], "input")
            for key in _saved(t):
                known.add(key)
            nodes.append(node)
            continue
        op, site = watch.site_of(t)
        if t.rule.__class__ is Pick:
            op = f"{watch.site_of(t.args)[0]}[{t.rule.index}]"
            inputs = [t.args.seq]
        else:
            inputs = sorted({a.seq for a in _tracked(t.args) if a.level == level})
        node = Node(seq, op, shape, dtype, site, inputs, "op")
        for key, array in _saved(t).items():
            if key not in known:
                known.add(key)
                node.saved_bytes += array.nbytes
        nodes.append(node)
    return Graph(fname_of(f), nodes, sorted(r.seq for r in roots))


def _input_arrays(args):
    found = {}
    _arrays(list(args), found, set())
    return list(found.values())


def graph(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Graph]:
    """The graph ``f`` records for a call, differentiating with respect to ``argnums`` as
    ``grad`` would: ``pb.graph(f)(*args)`` returns a ``Graph``. ``f`` may return any
    pytree of arrays, and may itself be a derivative (``pb.graph(pb.grad(f))``: the graph
    of the gradient's computation).

    >>> g = pb.graph(lambda x: np.sum(np.exp(x)))(np.zeros(3))
    >>> print(g.summary())
    op       count  output shapes  saved bytes
    input 0      1  (3,)                     0
    np.exp       1  (3,)                    24
    np.sum       1  ()                       8
    total        3                          32
    """
    function_named(f, "pb.graph")

    @functools.wraps(f)
    def graph_f(*args: Any, **kwargs: Any) -> Graph:
        return _build_graph(f, args, kwargs, argnums)

    return graph_f


# ---------------------------------------------------------------------------- memory

class MemoryReport:
    """What the graph of one call keeps alive for its backward pass, made by
    ``pb.memory_report(f)(*args)``: ``total_bytes``, ``entries`` (one per node that keeps
    something: bytes, op, output shape, user line), largest first; ``print`` it for a
    table of the ``top`` largest entries.

    >>> rep = pb.memory_report(lambda x: np.sum(np.tanh(x)))(np.zeros(1000))
    >>> rep.total_bytes
    8008
    """

    def __init__(self, graph: Graph, top: int | None = 10) -> None:
        if not isinstance(graph, Graph):
            raise TypeError("pullback: MemoryReport takes a Graph (from pb.graph(f)(*args)), "
                            f"got {type(graph).__name__}; pb.memory_report(f)(*args) makes "
                            "both at once")
        _check_top(top)
        self.graph = graph
        self.top = top
        self.entries = sorted((n for n in graph.nodes if n.saved_bytes),
                              key=lambda n: (-n.saved_bytes, n.id))
        self.total_bytes = graph.saved_bytes

    def __str__(self) -> str:
        rows = [("bytes", "op", "shape", "line")]
        shown = self.entries if self.top is None else self.entries[:self.top]
        for n in shown:
            where = f"{n.site.short}  {n.site.source}" if n.site is not None else ""
            rows.append((str(n.saved_bytes), n.op, str(n.shape), where))
        more = len(self.entries) - len(shown)
        foot = f"\n... and {more} more nodes" if more > 0 else ""
        return (f"{self.graph.name} keeps {_human(self.total_bytes)} alive for the backward "
                f"pass, in {len(self.entries)} nodes:\n" + _table(rows, right={0}) + foot)

    def __repr__(self) -> str:
        return f"<MemoryReport of {self.graph.name}: {self.total_bytes} bytes>"


def _human(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _check_top(top) -> None:
    if top is not None and not (isinstance(top, (int, np.integer))
                                and not isinstance(top, bool) and top >= 0):
        raise ValueError("pullback: memory_report's top must be a non-negative integer (the "
                         f"rows printed) or None for all of them, got {top!r}")


def memory_report(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
                  top: int | None = 10) -> Callable[..., MemoryReport]:
    """What ``f``'s graph keeps alive for the backward pass, differentiating with respect
    to ``argnums`` as ``grad`` would: the arrays each node's pullback needs (its output,
    its arguments' values, what its pullback closes over), each counted once, at the first
    node that keeps it; arrays passed in as arguments are not counted. Printing the report
    shows its ``top`` entries (None: all of them).

    >>> rep = pb.memory_report(lambda x: np.sum(x * x))(np.ones(100))
    >>> rep.total_bytes, rep.entries[0].op
    (808, 'np.multiply')
    """
    function_named(f, "pb.memory_report")
    _check_top(top)

    @functools.wraps(f)
    def memory_report_f(*args: Any, **kwargs: Any) -> MemoryReport:
        return MemoryReport(_build_graph(f, args, kwargs, argnums), top)

    return memory_report_f
