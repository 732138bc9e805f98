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
