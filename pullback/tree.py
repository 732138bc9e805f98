"""Pytrees: nested tuples, lists and dicts of arrays, flattened to a list of leaves.

Namedtuples are nodes too, and so is any class registered with ``register_pytree_node``
(a dataclass with ``register_dataclass``). ``ravel_pytree`` flattens a tree to one vector.
"""

from __future__ import annotations

import dataclasses as _dataclasses
import sys as _sys
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

import numpy as _np

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "ravel_pytree",
           "register_pytree_node", "register_dataclass"]


def __dir__() -> list[str]:
    return sorted(__all__)


LEAF = None  # the treedef of a leaf
_END = object()

# a treedef: LEAF, or (the node's type, the children's treedefs, a dict's keys or None)
TreeDef: TypeAlias = "tuple[type, list[TreeDef], list[Any] | None] | None"


def _is_namedtuple(kind):
    return issubclass(kind, tuple) and hasattr(kind, "_fields")


class _Node:
    """The third entry of a registered class's treedef (where a dict's keys stand): what
    its ``flatten`` returned beside the children (``aux``), and the children's labels for
    messages (a dataclass's field names, else their positions)."""

    __slots__ = ("aux", "labels")

    def __init__(self, aux: Any, labels: list[Any]) -> None:
        self.aux, self.labels = aux, labels

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Node) and _same_aux(self.aux, other.aux)

    def __hash__(self) -> int:
        return hash(len(self.labels))

    def __repr__(self) -> str:
        return f"aux={self.aux!r}"


def _same_aux(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # (arrays as aux: compared by identity)
        return a is b


# a registered class -> (flatten, unflatten, labels or None): register_pytree_node's table
_nodes: dict[type, tuple[Callable[[Any], Any], Callable[[Any, Any], Any], Any]] = {}


def _walk(node, leaves):
    kind = type(node)
    if kind is tuple or kind is list:
        return (kind, [_walk(child, leaves) for child in node], None)
    if kind is dict or kind is OrderedDict:
        keys = list(node)
        return (kind, [_walk(node[k], leaves) for k in keys], keys)
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):  # a namedtuple
        return (kind, [_walk(child, leaves) for child in node], None)
    if kind in _nodes:
        children, aux = _flattened(node)
        labels = _nodes[kind][2] or list(range(len(children)))
        return (kind, [_walk(child, leaves) for child in children], _Node(aux, labels))
    leaves.append(node)
    return LEAF


def _flattened(node) -> tuple[list[Any], Any]:
    """``(children, aux)`` of a registered node, from its class's ``flatten``."""
    flatten = _nodes[type(node)][0]
    out = flatten(node)
    if not (isinstance(out, tuple) and len(out) == 2):
        raise TypeError(
            f"pullback: the flatten function registered for {type(node).__name__} must "
            f"return a pair (children, aux), got {kind_of(out)}")
    return list(out[0]), out[1]


def labels_of(spec) -> list[str]:
    """How a message writes the path to each child of the treedef node ``spec``:
    ``"['W']"`` for a dict's, ``"[0]"`` for a sequence's, ``".w"`` for a dataclass's."""
    _, children, keys = spec
    if isinstance(keys, _Node):
        return [f".{k}" if isinstance(k, str) else f"[{k}]" for k in keys.labels]
    if keys is not None:
        return [f"[{k!r}]" for k in keys]
    return [f"[{i}]" for i in range(len(children))]


def _build(spec, it):
    if spec is LEAF:
        return next(it)
    kind, children, keys = spec
    built = [next(it) if child is LEAF else _build(child, it) for child in children]
    if isinstance(keys, _Node):
        return _nodes[kind][1](keys.aux, built)
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
        _is_namedtuple(kind)) or kind in _nodes


def _children(x):
    """``(path suffix, child)`` for each child of the container ``x``."""
    if isinstance(x, dict):
        return [(f"[{k!r}]", v) for k, v in x.items()]
    if type(x) in _nodes:
        children = _flattened(x)[0]
        return list(zip(labels_of(_walk(x, [])), children))
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
        f"limit, {_sys.getrecursionlimit()}); pass a flatter structure, such as a list of "
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
            and type(x[1]) is list and (x[2] is None or type(x[2]) is list
                                        or isinstance(x[2], _Node)))


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
    kind, children, keys = spec
    if isinstance(keys, _Node):
        if type(node) is not kind:
            raise StructureMismatch(path, f"a {kind.__name__}", describe(node))
        for label, child, sub in zip(labels_of(spec), children, _flattened(node)[0]):
            _leaves_by(child, sub, path + label, bare_singletons, found)
        return
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
    """``tree`` with ``fn`` applied to every leaf; with more trees of the same structure
    (``*rest``), ``fn`` of the leaves in the same place (JAX's ``tree_map``). A dict's entries are
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
    if isinstance(keys, _Node):
        return f"{article(kind.__name__)} {kind.__name__} ({keys!r})"
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
    if isinstance(keys, _Node):
        subs, aux = _flattened(node)
        if len(subs) != len(children) or not _same_aux(aux, keys.aux):
            raise StructureMismatch(path, _what(spec), f"has {_what(_walk(node, []))}")
        for label, child, sub in zip(labels_of(spec), children, subs):
            _match(child, sub, path + label, found)
        return
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


# ---------------------------------------------------------------------------- registration

def register_pytree_node(cls: type, flatten: Callable[[Any], tuple[Iterable[Any], Any]],
                         unflatten: Callable[[Any, list[Any]], Any]) -> type:
    """Make instances of ``cls`` pytree nodes, as ``jax.tree_util.register_pytree_node``.

    Args:
        cls: the class. Instances of exactly this class become nodes (a subclass is
            registered on its own).
        flatten: ``flatten(obj) -> (children, aux)``: the children to differentiate and
            map over (arrays, or pytrees themselves), and anything else the class needs to
            be rebuilt (hashable and comparable with ``==``: two trees with unequal ``aux``
            have different structures).
        unflatten: ``unflatten(aux, children) -> obj``: a new instance from ``aux`` and a
            list of children in ``flatten``'s order.

    Returns:
        ``cls``, so that it may be used as a decorator's last line.

    >>> class Affine:
    ...     def __init__(self, W, b):
    ...         self.W, self.b = W, b
    >>> _ = pb.register_pytree_node(
    ...     Affine, lambda m: ((m.W, m.b), None), lambda aux, ch: Affine(*ch))
    >>> g = pb.grad(lambda m: np.sum(m.W * 2.0 + m.b))(Affine(np.ones(2), 1.0))
    >>> g.W, g.b
    (array([2., 2.]), np.float64(2.0))
    """
    return _register(cls, flatten, unflatten, None, "register_pytree_node")


def register_dataclass(cls: type, static: Iterable[str] = ()) -> type:
    """Make a dataclass a pytree node: its fields are the children, in their order, except
    those named in ``static``, which are kept as they are (part of the structure, never
    differentiated). Use it as a decorator or call it on the class.

    Args:
        cls: a class made with ``@dataclasses.dataclass`` (frozen or not).
        static: names of fields that are not children: hyperparameters, flags, names.
            Their values must compare with ``==``.

    Returns:
        ``cls``.

    >>> import dataclasses
    >>> @pb.register_dataclass
    ... @dataclasses.dataclass
    ... class Linear:
    ...     W: np.ndarray
    ...     b: float
    >>> pb.grad(lambda m: np.sum(m.W) * m.b)(Linear(np.ones(2), 3.0))
    Linear(W=array([3., 3.]), b=np.float64(2.0))
    """
    if not (isinstance(cls, type) and _dataclasses.is_dataclass(cls)):
        raise TypeError(
            f"pullback: register_dataclass takes a class made with @dataclasses.dataclass, "
            f"got {cls!r}; for another class use pb.register_pytree_node(cls, flatten, "
            "unflatten)")
    static = list(static)
    fields = [f.name for f in _dataclasses.fields(cls)]
    unknown = [name for name in static if name not in fields]
    if unknown:
        raise ValueError(f"pullback: register_dataclass: {cls.__name__} has no field "
                         f"{', '.join(map(repr, unknown))} (its fields: {', '.join(fields)})")
    data = [name for name in fields if name not in static]

    def flatten_dataclass(obj):
        return [getattr(obj, name) for name in data], tuple(
            getattr(obj, name) for name in static)

    def unflatten_dataclass(aux, children):
        obj = object.__new__(cls)  # (no __init__, no __post_init__: the fields as given)
        for name, value in zip(data, children):
            object.__setattr__(obj, name, value)
        for name, value in zip(static, aux):
            object.__setattr__(obj, name, value)
        return obj

    return _register(cls, flatten_dataclass, unflatten_dataclass, data, "register_dataclass")


def _register(cls, flatten, unflatten, labels, fname):
    if not isinstance(cls, type):
        raise TypeError(f"pullback: {fname} takes a class first, got {kind_of(cls)}")
    if cls in (tuple, list, dict, OrderedDict) or _is_namedtuple(cls) or cls is _np.ndarray:
        raise ValueError(f"pullback: {cls.__name__} is already a pytree "
                         f"{'leaf' if cls is _np.ndarray else 'node'}; it cannot be "
                         "registered again")
    if not (callable(flatten) and callable(unflatten)):
        raise TypeError(f"pullback: {fname} takes two functions after the class: "
                        "flatten(obj) -> (children, aux) and unflatten(aux, children)")
    _nodes[cls] = (flatten, unflatten, labels)
    return cls


# ---------------------------------------------------------------------------- ravel_pytree

def ravel_pytree(tree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(vector, unravel)``: every leaf of ``tree`` flattened and concatenated into one
    1-d array, and the function that turns such a vector back into the tree, each leaf with
    its shape and dtype (``jax.flatten_util.ravel_pytree``).

    The vector's dtype is the leaves' common one (NumPy's promotion); a tree without
    leaves gives an empty float64 vector. It is differentiable: inside ``pb.grad`` a
    tracked tree gives a tracked vector, and ``unravel`` of a tracked vector a tracked tree.
    Use it to hand a pytree of params to code that wants one vector (SciPy's minimizers, a
    Hessian over all params, ``np.savez``).

    Args:
        tree: a pytree of arrays and numbers.

    Returns:
        The vector and ``unravel(vector) -> tree``.

    >>> flat, unravel = pb.ravel_pytree({"W": np.ones((2, 2)), "b": np.zeros(2)})
    >>> flat
    array([1., 1., 1., 1., 0., 0.])
    >>> unravel(np.arange(6.0))
    {'W': array([[0., 1.],
           [2., 3.]]), 'b': array([4., 5.])}
    """
    leaves, treedef = tree_flatten(tree)
    shapes = [_np.shape(x) for x in leaves]
    dtypes = [x.dtype if hasattr(x, "dtype") else _np.result_type(x) for x in leaves]
    sizes = [int(_np.prod(s, dtype=_np.int64)) for s in shapes]
    total = sum(sizes)
    if leaves:
        flat = _np.concatenate([_np.reshape(x, (-1,)) for x in leaves])
    else:
        flat = _np.zeros(0)

    def unravel(vector: Any) -> Any:
        if _np.ndim(vector) != 1 or _np.shape(vector)[0] != total:
            raise ValueError(
                f"pullback: unravel takes a 1-d vector of {total} entries (the size of the "
                f"tree ravel_pytree flattened), got shape {_np.shape(vector)}")
        parts, start = [], 0
        for shape, size, dtype in zip(shapes, sizes, dtypes):
            part = _np.reshape(vector[start:start + size], shape)
            parts.append(part.astype(dtype) if dtype != flat.dtype else part)
            start += size
        return tree_unflatten(treedef, parts)

    return flat, unravel
