"""What a graph keeps alive for its backward pass: ``pb.memory_report(f)(*args)``, a
``MemoryReport`` of the ``Graph`` that ``pb.graph`` records, largest entries first."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._engine.arguments import function_named
from .picture import Graph, _build_graph, _table


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
