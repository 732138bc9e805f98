"""A picture of the recorded graph: ``pb.graph(f)(*args)`` records ``f``'s call under a
watch and returns a ``Graph`` of its ``Node``s, with the bytes each keeps alive for the
backward pass, as DOT text, a table or an SVG picture."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._engine.arguments import fname_of, function_named, normalize_argnums
from .._engine.core import Tracked, box_at, plain
from .._engine.vjp import Linearized
from ..tree import plural, tree_flatten
from .watch import _tracked, _Watch, _Watching


def _record_run(f, args, kwargs, nums) -> tuple[Linearized, _Watch]:
    """``f``'s call, recorded under a watch that notes each node's op and line."""
    with _Watching() as watching:
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
    rule = node.rule
    if rule is None or rule.index is not None:  # an input, or one output of several
        return found
    for a in node.args:
        _arrays(plain(a) if isinstance(a, Tracked) else a, found, seen)
    _arrays(rule.saved(), found, seen)  # (a pullback's closure; rows read the arguments)
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
        return (f"<pullback graph of {self.name}: {plural(inputs, 'input')}, "
                f"{plural(ops, 'operation')}, {self.saved_bytes} bytes saved for the "
                "backward pass>")


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
        if args_ is not None:
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
        if t.rule.index is not None:  # one output of several
            op = f"{watch.site_of(t.args[0])[0]}[{t.rule.index}]"
            inputs = [t.args[0].seq]
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
