"""Pytrees: flattening, rebuilding and mapping nested tuples, lists and dicts, and the
messages for trees that do not fit."""

import dataclasses
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import pullback as pb

Pair = namedtuple("Pair", "u v")


def add(a, b):
    return a + b


def self_containing_list():
    loop: list = [1.0]
    loop.append(loop)
    return loop


def self_containing_dict():
    loop: dict = {"a": 1.0}
    loop["b"] = [2.0, loop]
    return loop


def nested(depth):
    tree: list = [1.0]
    for _ in range(depth):
        tree = [tree]
    return tree


@pytest.mark.parametrize("tree", [
    {"W": np.ones(2), "b": (0.5, [1.5, {"c": 2.5}])},
    Pair(1.0, (2.0, 3.0)),
    OrderedDict([("z", 1.0), ("a", [2.0])]),
    [(), [], {}, None],
    np.ones(3),
], ids=["nested", "namedtuple", "ordereddict", "empty-containers", "leaf"])
def test_flatten_and_unflatten_round_trip(tree):
    leaves, treedef = pb.tree_flatten(tree)
    rebuilt = pb.tree_unflatten(treedef, leaves)
    assert type(rebuilt) is type(tree)
    again, treedef_again = pb.tree_flatten(rebuilt)
    assert treedef_again == treedef
    assert all(a is b for a, b in zip(again, leaves)) and len(again) == len(leaves)


@pytest.mark.parametrize("tree, where", [
    (self_containing_list(), r"list at the top is held again at \[1\]"),
    (self_containing_dict(), r"dict at the top is held again at \['b'\]\[1\]"),
    ((0.0, [self_containing_list()]), r"list at \[1\]\[0\] is held again at \[1\]\[0\]\[1\]"),
], ids=["list", "dict", "inside"])
def test_a_tree_that_contains_itself_is_named_with_the_place(tree, where):
    with pytest.raises(ValueError, match=r"pullback: a pytree contains itself: the " + where):
        pb.tree_flatten(tree)
    with pytest.raises(ValueError, match="contains itself"):
        pb.tree_map(lambda a: a, tree)


def test_a_tree_too_deep_to_flatten_says_so():
    with pytest.raises(ValueError, match="nested too deep to flatten"):
        pb.tree_flatten(nested(5000))
    leaves, treedef = pb.tree_flatten(nested(100))  # deep, but within the limit
    assert leaves == [1.0] and pb.tree_unflatten(treedef, leaves) == nested(100)


_, PAIR = pb.tree_flatten((1.0, 2.0))


@pytest.mark.parametrize("call, error, match", [
    (lambda: pb.tree_unflatten("abc", [1]), TypeError,
     r"tree_unflatten takes the treedef that tree_flatten returned .* got a str$"),
    (lambda: pb.tree_unflatten([1, 2], PAIR), TypeError, "the arguments look swapped"),
    (lambda: pb.tree_unflatten(pb.tree_flatten((1.0, 2.0)), [1, 2]), TypeError,
     r"tree_flatten returns \(leaves, treedef\); pass its second item"),
    (lambda: pb.tree_unflatten(PAIR, None), TypeError,
     "tree_unflatten's leaves must be a list .* got None"),
    (lambda: pb.tree_unflatten(PAIR, 5), TypeError,
     "tree_unflatten's leaves must be a list .* got an int"),
    (lambda: pb.tree_map(None, [1, 2]), TypeError,
     r"tree_map takes the function first, then the trees; got None$"),
    (lambda: pb.tree_map([1, 2], np.sin), TypeError, "the arguments look swapped"),
], ids=["str-treedef", "swapped", "the-pair", "leaves-none", "leaves-int", "fn-none",
        "fn-swapped"])
def test_misuses_of_tree_unflatten_and_tree_map_name_the_argument(call, error, match):
    with pytest.raises(error, match="^pullback: .*" + match):
        call()


def test_tree_map_matches_dicts_by_key_in_the_order_of_the_first():
    out = pb.tree_map(add, {"a": 1.0, "b": [2.0, 3.0]}, {"b": [20.0, 30.0], "a": 10.0})
    assert out == {"a": 11.0, "b": [22.0, 33.0]} and list(out) == ["a", "b"]
    out = pb.tree_map(add, {"b": 1.0, "a": 2.0}, {"a": 10.0, "b": 20.0})
    assert list(out) == ["b", "a"] and out == {"b": 21.0, "a": 12.0}
    out = pb.tree_map(lambda a, b, c: a + b + c, Pair(1.0, 2.0), Pair(10.0, 20.0),
                      Pair(100.0, 200.0))
    assert out == Pair(111.0, 222.0)


@pytest.mark.parametrize("first, other, where, what", [
    ({"a": 1}, {"b": 1}, "the top", r"a dict with keys \['a'\] there, tree 2 lacks 'a', "
     "has 'b' in addition"),
    ({"a": 1}, {"a": 1, "c": 2}, "the top", r"a dict with keys \['a'\] there, tree 2 has 'c' "
     "in addition"),
    ({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2, 3]}, r"\['b'\]",
     "a list of 2 items there, tree 2 has 3 items"),
    ({"a": 1, "b": [1, 2]}, {"a": 1, "b": (1, 2)}, r"\['b'\]",
     "a list of 2 items there, tree 2 has a tuple of 2 items"),
    ([1, {"k": [1, 2]}], [1, {"k": 3}], r"\[1\]\['k'\]",
     r"a list of 2 items there, tree 2 has a leaf \(an int\)"),
    ([1, 2], [1, [2, 3]], r"\[1\]", "a leaf there, tree 2 has a list of 2 items"),
    (OrderedDict(a=1, b=2), OrderedDict(b=1, a=2), "the top",
     r"an OrderedDict with keys \['a', 'b'\] there, tree 2 has the keys in another order, "
     r"\['b', 'a'\]"),
    (OrderedDict(a=1), {"a": 1}, "the top", r"an OrderedDict with keys \['a'\] there, tree 2 "
     r"has a dict with keys \['a'\]"),
    (Pair(1, 2), (1, 2), "the top", "a Pair of 2 items there, tree 2 has a tuple of 2 items"),
], ids=["other-key", "extra-key", "longer", "tuple-for-list", "leaf-for-list",
        "list-for-leaf", "ordereddict-order", "dict-for-ordereddict", "tuple-for-namedtuple"])
def test_tree_map_says_where_and_how_the_trees_differ(first, other, where, what):
    with pytest.raises(ValueError, match=rf"pullback: tree_map's tree 2 has another structure "
                                         rf"than the first, at {where}: the first has {what}"):
        pb.tree_map(add, first, other)


def test_tree_map_numbers_the_tree_that_differs():
    with pytest.raises(ValueError, match="tree 3 has another structure .* tree 3 has 1 item$"):
        pb.tree_map(lambda a, b, c: a, [1, 2], [3, 4], [5])


# ---------------------------------------------------------------------------- ravel_pytree

def test_ravel_pytree_flattens_to_one_vector_and_back_with_shapes_and_dtypes():
    tree = {"W": np.arange(6.0).reshape(2, 3),
            "b": (np.float32(0.5), [np.ones(2, np.float32)]),
            "n": 2.0}
    flat, unravel = pb.ravel_pytree(tree)
    assert flat.shape == (10,) and flat.dtype == np.float64
    back = unravel(flat + 1.0)
    assert back["W"].shape == (2, 3) and back["b"][1][0].dtype == np.float32
    np.testing.assert_array_equal(back["W"], tree["W"] + 1.0)
    assert back["b"][0] == np.float32(1.5) and back["n"] == 3.0
    empty, unravel_empty = pb.ravel_pytree({})
    assert empty.shape == (0,) and unravel_empty(empty) == {}
    with pytest.raises(ValueError, match=r"unravel takes a 1-d vector of 10 entries.*\(8,\)"):
        unravel(np.zeros(8))


def test_ravel_pytree_is_differentiable_both_ways():
    tree = {"W": np.array([[0.3, -1.2], [0.7, 2.0]]), "b": np.array([0.1, -0.4])}

    def loss(t):  # through the vector and back through unravel
        flat, unravel = pb.ravel_pytree(t)
        again = unravel(np.sin(flat))
        return np.sum(again["W"] @ again["b"]) + np.sum(flat ** 3)

    pb.check_grads(loss, tree, order=2)
    _, unravel = pb.ravel_pytree(tree)
    pb.check_grads(lambda v: np.sum(unravel(v)["W"] ** 2 * np.sum(unravel(v)["b"])),
                   np.linspace(-1.0, 1.0, 6), order=2)


# ---------------------------------------------------------------------------- registered nodes

class Affine:
    """A user's class, registered as a node: W and b are children, the name is aux."""

    def __init__(self, W, b, name="layer"):
        self.W, self.b, self.name = W, b, name


pb.register_pytree_node(Affine, lambda m: ((m.W, m.b), m.name),
                        lambda name, children: Affine(*children, name=name))


@dataclasses.dataclass(frozen=True)
class Linear:
    W: np.ndarray
    b: np.ndarray
    activation: str = "tanh"


pb.register_dataclass(Linear, static=["activation"])


def apply(layer, x):
    return getattr(np, layer.activation)(x @ layer.W + layer.b)


def test_a_registered_class_is_differentiated_mapped_and_rebuilt():
    m = Affine(np.array([1.0, -2.0]), np.array(0.5), name="first")
    leaves, treedef = pb.tree_flatten({"m": m})
    assert len(leaves) == 2
    back = pb.tree_unflatten(treedef, [2 * leaves[0], leaves[1]])["m"]
    assert isinstance(back, Affine) and back.name == "first"
    np.testing.assert_array_equal(back.W, [2.0, -4.0])
    pb.check_grads(lambda m: np.sum(np.tanh(m.W) * m.b ** 2), m, order=2)
    g = pb.grad(lambda m: np.sum(np.tanh(m.W) * m.b ** 2))(m)
    assert isinstance(g, Affine) and g.name == "first" and g.W.shape == (2,)
    other = Affine(np.ones(2), np.array(1.0), name="second")   # another aux: another tree
    with pytest.raises(ValueError, match="another structure"):
        pb.tree_map(np.add, m, other)


def test_a_dataclass_with_a_static_field_trains_with_an_optimizer():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    layer = Linear(rng.normal(size=(3, 2)) * 0.1, np.zeros(2))

    def loss(layer):
        return np.mean((apply(layer, x) - y) ** 2)

    pb.check_grads(loss, layer, order=2)
    g = pb.grad(loss)(layer)
    assert isinstance(g, Linear) and g.activation == "tanh" and g.W.shape == (3, 2)
    opt = pb.optim.Adam(0.05)
    state = opt.init(layer)
    first = loss(layer)
    for _ in range(20):
        layer, state = opt.update(layer, pb.grad(loss)(layer), state)
    assert isinstance(layer, Linear) and loss(layer) < first
    flat, unravel = pb.ravel_pytree(layer)
    assert flat.shape == (8,) and unravel(flat).activation == "tanh"


def test_registering_is_refused_where_it_cannot_work():
    with pytest.raises(TypeError, match="register_dataclass takes a class made with"):
        pb.register_dataclass(Affine)
    with pytest.raises(ValueError, match="Linear has no field 'bias'"):
        pb.register_dataclass(Linear, static=["bias"])
    with pytest.raises(ValueError, match="list is already a pytree node"):
        pb.register_pytree_node(list, lambda x: (x, None), lambda a, c: c)
    with pytest.raises(TypeError, match="two functions after the class"):
        pb.register_pytree_node(Pair.__class__, None, None)
