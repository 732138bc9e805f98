"""Pytrees: nested tuples, lists and dicts of arrays, flattened to a list of leaves."""

from __future__ import annotations

import sys
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
    try:
        treedef = _walk(tree, leaves)
    except RecursionError:
        raise _too_deep(tree) from None
    return leaves, treedef


def _is_node(x) -> bool:
    """Whether ``x`` is a container of a pytree (as ``_walk`` reads it), not a leaf."""
    kind = type(x)
    return kind is tuple or kind is list or kind is dict or kind is OrderedDict or (
        _is_namedtuple(kind))


def _children(x):
    """``(path suffix, child)`` for each child of the container ``x``."""
    if isinstance(x, dict):
        return [(f"[{k!r}]", v) for k, v in x.items()]
    return [(f"[{i}]", v) for i, v in enumerate(x)]


def _too_deep(tree) -> ValueError:
    """The error for a tree that ``_walk`` could not flatten for Python's recursion limit:
    a container that holds itself (a list appended to itself), saying where, or else a
    tree nested too deep."""
    # a walk with an explicit stack: (node, its path, the ids of the containers above it)
    stack: list[tuple[Any, str, dict[int, str]]] = [(tree, "", {})]
    while stack:
        node, path, above = stack.pop()
        if not _is_node(node):
            continue
        if id(node) in above:
            top = above[id(node)] or "the top"
            return ValueError(
                f"pullback: a pytree contains itself: the {type(node).__name__} at {top} is "
                f"held again at {path}, so it has no end to flatten. Pass a tree without "
                "the cycle (a copy of the inner container, or the arrays themselves).")
        inner = {**above, id(node): path}
        stack.extend((child, path + key, inner) for key, child in _children(node))
    return ValueError(
        "pullback: a pytree is nested too deep to flatten (deeper than Python's recursion "
        f"limit, {sys.getrecursionlimit()}); pass a flatter structure, such as a list of "
        "arrays, or stack the arrays into one")


def tree_unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild the structure ``treedef`` with ``leaves`` in order.

    >>> leaves, treedef = pb.tree_flatten({"W": np.ones(2), "b": (0.5, 1.5)})
    >>> pb.tree_unflatten(treedef, [2 * leaves[0], 0.0, 1.0])
    {'W': array([2., 2.]), 'b': (0.0, 1.0)}
    """
    if treedef is not LEAF and not _is_treedef(treedef):
        hint = ""
        if _is_treedef(leaves) or leaves is LEAF:
            hint = ": the arguments look swapped, write tree_unflatten(treedef, leaves)"
        elif type(treedef) is tuple and len(treedef) == 2 and _is_treedef(treedef[1]):
            hint = ": tree_flatten returns (leaves, treedef); pass its second item"
        raise TypeError(
            "pullback: tree_unflatten takes the treedef that tree_flatten returned (the second "
            f"item of its result) first, then the leaves; got {kind_of(treedef)}{hint}")
    try:
        it = iter(leaves)
    except TypeError:
        raise TypeError("pullback: tree_unflatten's leaves must be a list (or any iterable) "
                        f"of the leaves in order, got {kind_of(leaves)}") from None
    try:
        tree = _build(treedef, it)
    except StopIteration:
        tree = _END
    if tree is _END or next(it, _END) is not _END:
        raise ValueError("pullback: tree_unflatten got " + (
            "fewer leaves" if tree is _END else "more leaves") + " than the structure holds")
    return tree


def _is_treedef(x) -> bool:
    """Whether ``x`` looks like a node of a treedef: ``(type, list of children, keys)``."""
    return (type(x) is tuple and len(x) == 3 and isinstance(x[0], type)
            and type(x[1]) is list and (x[2] is None or type(x[2]) is list))


def kind_of(x) -> str:
    """``x``'s type, for a message: 'None', 'a str', 'an int', 'an ndarray'."""
    if x is None:
        return "None"
    name = type(x).__name__
    return f"{article(name)} {name}"


def article(word: str) -> str:
    """'a' or 'an', for ``word`` in a message ('an ndarray', said "en-dee-array")."""
    return "an" if word[:1].lower() in "aeiou" or word.startswith("nd") else "a"


def plural(n: int, word: str = "item") -> str:
    """'1 item', '2 items'."""
    return f"{n} {word}" + ("" if n == 1 else "s")


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
    ``fn`` of the leaves in the same place (JAX's ``tree_map``). A dict's entries are
    matched by key, so the same keys in another order are the same structure (as in JAX,
    which sorts them); the result has the first tree's order. Tuples, lists and
    OrderedDicts are matched by position: their types, lengths and keys must agree.

    >>> pb.tree_map(np.zeros_like, {"W": np.ones(2), "b": (np.ones(1),)})
    {'W': array([0., 0.]), 'b': (array([0.]),)}
    >>> pb.tree_map(lambda p, g: p - 0.1 * g, {"W": np.ones(2)}, {"W": np.ones(2)})
    {'W': array([0.9, 0.9])}
    """
    if not callable(fn):
        raise TypeError(f"pullback: tree_map takes the function first, then the trees; got "
                        f"{kind_of(fn)}" + (" (the arguments look swapped: tree_map(fn, tree))"
                                       if callable(tree) else ""))
    leaves, treedef = tree_flatten(tree)
    others = []
    for k, other in enumerate(rest):
        found: list[Any] = []
        try:
            _match(treedef, other, "", found)
        except StructureMismatch as error:
            raise ValueError(
                f"pullback: tree_map's tree {k + 2} has another structure than the first, at "
                f"{error.path or 'the top'}: the first has {error.want} there, tree {k + 2} "
                f"{error.got}") from None
        others.append(found)
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])


def _what(spec) -> str:
    """A treedef's node, in words, for tree_map's message."""
    if spec is LEAF:
        return "a leaf"
    kind, children, keys = spec
    if keys is not None:
        return f"{kind_of(kind())} with keys [{', '.join(map(repr, keys))}]"
    return f"{article(kind.__name__)} {kind.__name__} of {plural(len(children))}"


def _match(spec, node, path, found):
    """Append ``node``'s leaves at the places of ``spec``'s (a dict's by key) to ``found``;
    raise ``StructureMismatch`` (``got``: what ``node`` has there) where they part."""
    if spec is LEAF:
        if _is_node(node):
            _, inner = tree_flatten(node)
            raise StructureMismatch(path, "a leaf", f"has {_what(inner)}")
        found.append(node)
        return
    kind, children, keys = spec
    if type(node) is not kind:
        got = _what(tree_flatten(node)[1]) if _is_node(node) else f"a leaf ({kind_of(node)})"
        raise StructureMismatch(path, _what(spec), f"has {got}")
    if keys is None:
        if len(node) != len(children):
            raise StructureMismatch(path, _what(spec), f"has {plural(len(node))}")
        for i, (child, sub) in enumerate(zip(children, node)):
            _match(child, sub, f"{path}[{i}]", found)
        return
    if kind is dict and set(node) == set(keys):
        items = [(k, node[k]) for k in keys]
    elif list(node) == keys:
        items = list(node.items())
    else:
        missing = [k for k in keys if k not in node]
        extra = [k for k in node if k not in keys]
        got = ", ".join(part for part in (
            "lacks " + ", ".join(map(repr, missing)) if missing else "",
            "has " + ", ".join(map(repr, extra)) + " in addition" if extra else "",
        ) if part) or f"has the keys in another order, [{', '.join(map(repr, node))}]"
        raise StructureMismatch(path, _what(spec), got)
    for (k, sub), child in zip(items, children):
        _match(child, sub, f"{path}[{k!r}]", found)
