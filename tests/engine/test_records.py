"""The records: every table entry records its calls, every node's record pulls its
cotangent back, and what debug and the transforms want of a node they ask its record."""

import re
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback._engine import records, registry
from pullback._engine.core import Tracked
from pullback._engine.register import registered_rules
from tests.conftest import central_differences

PACKAGE = Path(pb.__file__).parent
KINDS = [name for name, c in vars(records).items()
         if isinstance(c, type) and issubclass(c, records.Record) and c is not records.Record]


def _overrides(record, method):
    return getattr(type(record), method) is not getattr(records.Record, method)


def test_every_table_entry_is_a_record_that_records_calls():
    registered_rules(None)  # (loads the rules of the SciPy modules there are)
    wrong = [registry.name_of(f) for f, r in registry.rules.items()
             if not isinstance(r, records.Record) or not _overrides(r, "record")]
    assert not wrong, wrong


def _nodes(out):
    """Every node ``out`` depends on, at any level."""
    stack, seen = [o for o in (out if isinstance(out, (list, tuple)) else [out])
                   if isinstance(o, Tracked)], {}
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(a for a in node.args or () if isinstance(a, Tracked))
        stack.extend(b for a in node.args or () if isinstance(a, (list, tuple))
                     for b in a if isinstance(b, Tracked))
    return list(seen.values())


def _program(x, kinds):
    """Rows, a product, a reduction, general rules, a composite and several outputs, with
    the kinds of the nodes they record noted."""
    w = np.linspace(0.5, 1.5, 6).reshape(3, 2)
    h = np.tanh(x @ w)  # a product's row, an elementwise row
    parts = np.split(h, 2, axis=1)  # several outputs: a hub and its picks
    q, r = np.linalg.qr(np.stack([h.T @ h, np.eye(2)]) + 3.0)
    y = np.sum(parts[0] ** 2) + np.mean(r) + np.sum(np.cumsum(parts[1]))  # a general rule
    y = y + np.sum(np.flipud(h))  # a composite: the nodes of its implementation
    kinds.update(type(n.rule).__name__ for n in _nodes(y) if n.rule is not None)
    return y


def test_every_node_has_a_record_that_pulls_its_cotangent_back():
    x = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    kinds = set()
    g = pb.grad(lambda x: _program(x, kinds))(x)
    assert {"Elementwise", "Bilinear", "Reduction", "Pullback", "Pick"} <= kinds, kinds
    assert kinds <= set(KINDS), kinds - set(KINDS)
    np.testing.assert_allclose(g, central_differences(lambda x: _program(x, set()), x),
                               rtol=1e-6, atol=1e-8)
    # and the second derivative through the same records
    hess = pb.hessian(lambda x: _program(x, set()))(x)
    column = central_differences(lambda x: pb.grad(lambda x: _program(x, set()))(x)[1, 2], x)
    np.testing.assert_allclose(hess[1, 2], column, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_each_record_kind_has_its_halves(kind):
    cls = getattr(records, kind)
    made_by_record = {"Pullback", "Pick", "_Freed"}  # the node's record: record() makes them
    # a composite's implementation records the nodes; a general rule's node holds the
    # Pullback its rule returned, which is the other half
    records_no_node = {"Composite", "General"}
    if kind not in made_by_record:
        assert cls.record is not records.Record.record, kind
    if kind not in records_no_node:
        assert cls.pull is not records.Record.pull, kind


def test_a_released_nodes_record_says_so():
    x = pb.param(np.array([1.0, 2.0]))
    y = np.sum(np.sin(x))
    y.backward()
    with pytest.raises(RuntimeError, match="already freed"):
        y.backward()


def test_outside_the_engine_nothing_asks_a_records_class():
    classes = re.compile(r"(__class__|isinstance|type\()[^\n]*\b(Elementwise|Bilinear|"
                         r"Reduction|General|Pullback|Composite|Pick|Slots)\b")
    wrong = [f"{p.relative_to(PACKAGE)}:{i}" for p in PACKAGE.rglob("*.py")
             if p.parent.name != "_engine"
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if classes.search(line)]
    assert not wrong, wrong
    assert classes.search("if rule.__class__ is Pick:")
