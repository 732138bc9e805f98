"""Pytrees: nested tuples, lists and dicts of arrays, flattened to a list of leaves."""

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]

LEAF = None  # the treedef of a leaf


def _is_namedtuple(kind):
    return issubclass(kind, tuple) and hasattr(kind, "_fields")


def tree_flatten(tree):
    """``(leaves, treedef)``: the leaves in order, and the structure to rebuild them.

    >>> leaves, treedef = tree_flatten({"W": W, "b": (b1, b2)})   # leaves == [W, b1, b2]
    """
    leaves = []

    def walk(node):
        kind = type(node)
        if kind is tuple or kind is list or _is_namedtuple(kind):
            return (kind, [walk(child) for child in node], None)
        if kind is dict:
            keys = list(node)
            return (dict, [walk(node[k]) for k in keys], keys)
        leaves.append(node)
        return LEAF

    return leaves, walk(tree)


def tree_unflatten(treedef, leaves):
    """Rebuild the structure ``treedef`` with ``leaves`` in order."""
    it = iter(leaves)

    def build(spec):
        if spec is LEAF:
            return next(it)
        kind, children, keys = spec
        built = [build(child) for child in children]
        if kind is dict:
            return dict(zip(keys, built))
        if _is_namedtuple(kind):
            return kind(*built)
        return kind(built)

    return build(treedef)


def tree_map(fn, tree):
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [fn(x) for x in leaves])
