"""Pytrees: nested tuples, lists and dicts of arrays, flattened to a list of leaves."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]

LEAF = None  # the treedef of a leaf
_END = object()

# a treedef: LEAF, or (the node's type, the children's treedefs, a dict's keys or None)
TreeDef: TypeAlias = "tuple[type, list[TreeDef], list[Any] | None] | None"


def _is_namedtuple(kind):
    return issubclass(kind, tuple) and hasattr(kind, "_fields")


def _walk(node, leaves):
    kind = type(node)
    if kind is tuple or kind is list:
        return (kind, [_walk(child, leaves) for child in node], None)
    if kind is dict or kind is OrderedDict:
        keys = list(node)
        return (kind, [_walk(node[k], leaves) for k in keys], keys)
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):  # a namedtuple
        return (kind, [_walk(child, leaves) for child in node], None)
    leaves.append(node)
    return LEAF


def _build(spec, it):
    if spec is LEAF:
        return next(it)
    kind, children, keys = spec
    built = [next(it) if child is LEAF else _build(child, it) for child in children]
    if kind is dict or kind is OrderedDict:
        return kind(zip(keys, built))
    if _is_namedtuple(kind):
        return kind(*built)
    return kind(built)


def tree_flatten(tree: Any) -> tuple[list[Any], TreeDef]:
    """``(leaves, treedef)``: the leaves in order, and the structure to rebuild them.

    >>> leaves, treedef = pb.tree_flatten({"W": np.ones(2), "b": (0.5, 1.5)})
    >>> leaves
    [array([1., 1.]), 0.5, 1.5]
    """
    leaves: list[Any] = []
    treedef = _walk(tree, leaves)
    return leaves, treedef


def tree_unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild the structure ``treedef`` with ``leaves`` in order.

    >>> leaves, treedef = pb.tree_flatten({"W": np.ones(2), "b": (0.5, 1.5)})
    >>> pb.tree_unflatten(treedef, [2 * leaves[0], 0.0, 1.0])
    {'W': array([2., 2.]), 'b': (0.0, 1.0)}
    """
    it = iter(leaves)
    try:
        tree = _build(treedef, it)
    except StopIteration:
        tree = _END
    if tree is _END or next(it, _END) is not _END:
        raise ValueError("pullback: tree_unflatten got " + (
            "fewer leaves" if tree is _END else "more leaves") + " than the structure holds")
    return tree


class StructureMismatch(ValueError):
    """Raised by ``leaves_by``: where ``tree`` leaves ``treedef``'s structure (``path``, as
    ``"['W'][0]"``), and what each has there, in words (``want``, ``got``)."""

    def __init__(self, path, want, got):
        super().__init__(f"at {path or 'the top'}: {want} expected, {got} given")
        self.path, self.want, self.got = path, want, got


def describe(node: Any) -> str:
    """What a pytree node is, in words: its keys, its length, or its type."""
    if isinstance(node, dict):
        return f"keys [{', '.join(sorted(map(repr, node)))}]"
    if isinstance(node, (tuple, list)):
        return f"{len(node)} items"
    return f"a {type(node).__name__}"


def leaves_by(treedef: TreeDef, tree: Any, bare_singletons: bool = False) -> list[Any]:
    """The entries of ``tree`` at the places of ``treedef``'s leaves, in its order: a
    dict's by key (in any order), a tuple's or a list's by position (either for either);
    below a leaf of ``treedef`` anything is one entry (a pair of bounds, say). With
    ``bare_singletons``, a value that is not a tuple or a list stands for a 1-tuple.
    Raises ``StructureMismatch`` where the structures part.

    >>> _, treedef = pb.tree_flatten({"W": 0.0, "b": (0.0, 0.0)})
    >>> leaves_by(treedef, {"b": [2.0, 3.0], "W": 1.0})
    [1.0, 2.0, 3.0]
    """
    found: list[Any] = []
    _leaves_by(treedef, tree, "", bare_singletons, found)
    return found


def _leaves_by(spec, node, path, bare_singletons, found):
    if spec is LEAF:
        found.append(node)
        return
    _, children, keys = spec
    if keys is not None:
        if not isinstance(node, dict) or set(node) != set(keys):
            raise StructureMismatch(path, describe(dict.fromkeys(keys)), describe(node))
        for k, child in zip(keys, children):
            _leaves_by(child, node[k], f"{path}[{k!r}]", bare_singletons, found)
    elif not isinstance(node, (tuple, list)):
        if not (bare_singletons and len(children) == 1):
            raise StructureMismatch(path, f"{len(children)} items", describe(node))
        _leaves_by(children[0], node, path, bare_singletons, found)
    elif len(node) != len(children):
        raise StructureMismatch(path, f"{len(children)} items", describe(node))
    else:
        for i, (child, sub) in enumerate(zip(children, node)):
            _leaves_by(child, sub, f"{path}[{i}]", bare_singletons, found)


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf; with more trees of the same structure,
    ``fn`` of the leaves in the same place (JAX's ``tree_map``).

    >>> pb.tree_map(np.zeros_like, {"W": np.ones(2), "b": (np.ones(1),)})
    {'W': array([0., 0.]), 'b': (array([0.]),)}
    >>> pb.tree_map(lambda p, g: p - 0.1 * g, {"W": np.ones(2)}, {"W": np.ones(2)})
    {'W': array([0.9, 0.9])}
    """
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(t) for t in rest]
    for k, (_, other) in enumerate(others):
        if other != treedef:
            raise ValueError(f"pullback: tree_map's tree {k + 2} has another structure than "
                             "the first")
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *(o for o, _ in others))])
