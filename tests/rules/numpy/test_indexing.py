import numpy as np
import pytest

import pullback as pb
from pullback._engine.registry import getitem
from pullback.rules.numpy.indexing import index_add

from ..spec import Spec, check_unreached

X = (4, 5, 3)
MASK_4 = np.array([True, False, True, True])
MASK_45 = np.arange(20).reshape(4, 5) % 3 == 0
MASK_453 = np.arange(60).reshape(X) % 7 < 3

# (label, index) for an array of shape X: every form of x[...] NumPy reads
INDICES = [
    ("slice", np.s_[1:3]),
    ("steps", np.s_[::-2, 1:4:2, ::-1]),
    ("int", np.s_[2]),
    ("negative ints", np.s_[1, -1, -3]),
    ("ellipsis", np.s_[..., 1]),
    ("int ellipsis None", np.s_[1, ..., None, 2]),
    ("newaxis", np.s_[None, :, np.newaxis]),
    ("int array with repeats", np.s_[[0, 0, 3, 1]]),
    ("2-d int array", np.s_[np.array([[0, 1], [1, 1]])]),
    ("advanced apart", np.s_[[0, 2, 2], :, [1, 0, 2]]),
    ("advanced together", np.s_[:, [[0, 4]], [[1], [2]]]),
    ("advanced and slices", np.s_[1:3, [0, 0, 4], 1:]),
    ("mask", np.s_[MASK_4]),
    ("2-d mask", np.s_[MASK_45]),
    ("3-d mask", np.s_[MASK_453]),
    ("mask and int array", np.s_[MASK_4, 1:, [0, 0, 2]]),
    ("0-d result", np.s_[1, 2, 0]),
    ("bool scalar", np.s_[True]),
    ("empty tuple", np.s_[()]),
    ("list of ints", [1, 2, 1]),
    ("empty array", np.s_[np.array([], dtype=int)]),
    # NumPy puts the axes of advanced indices first when anything stands between them, even
    # an ... of no axes; without it they would stay in place
    ("... of no axes between advanced", np.s_[:, [0, 2], ..., 1]),
    ("None, ... of no axes between advanced", np.s_[None, [0, 0], ..., 0, 1]),
    ("mask ... int array of no axes", np.s_[None, MASK_4, ..., [[0], [2]], 1]),
    ("bool scalar ... of no axes", np.s_[1:3, True, ..., 0, [1, 2]]),
    ("... of no axes, advanced together", np.s_[[1, 2], ..., 0, 2]),
    ("empty list", []),
    ("empty nested list", [[]]),
    ("tuple with repeats", np.s_[(0, 0, -4), 1]),
]

SPECS = [Spec(getitem, [X], call=lambda x, i=index: x[i], name=f"x[{label}]")
         for label, index in INDICES]
SPECS += [
    Spec(getitem, [()], call=lambda x, i=index: x[i], name=f"0-d x[{label}]")
    for label, index in [("()", ()), ("...", Ellipsis), ("None", None), ("True", True)]
]
SPECS += [
    Spec(index_add, [(3, 2)], call=lambda g: index_add(g, [0, 0, 2], (4, 2))),
    Spec(index_add, [(2, 3)], call=lambda g: index_add(g, np.s_[..., 1:4], (2, 5)),
         name="index_add(slice)"),
    Spec(index_add, [(3,)], call=lambda g: index_add(g, MASK_4, (4,)), name="index_add(mask)"),
    Spec(index_add, [(2, 4)], call=lambda g: index_add(g, np.s_[:, [0, 2], ..., 1], X),
         name="index_add(... of no axes between advanced)"),
    Spec(np.take, [(3, 4)], call=lambda m, **kw: np.take(m, [0, 2, 2, -1], **kw),
         kwargs={"axis": [None, 0, -1]}),
    Spec(np.take, [(3, 4)], call=lambda m, **kw: np.take(m, [[5, -7]], **kw),
         kwargs={"axis": [None, 1], "mode": ["wrap", "clip"]}),
    Spec(np.take, [()], call=lambda m: np.take(m, [0, 0])),
    # a 0-d array with an axis: NumPy reads it as 1-d
    Spec(np.take, [()], call=lambda m, **kw: np.take(m, [[0, 0]], **kw),
         kwargs={"axis": [0, -1]}, name="np.take(0-d, axis)"),
    Spec(np.take, [()], call=lambda m: np.take(m, [], axis=0), name="np.take(0-d, nothing)"),
    Spec(np.take, [(3, 4)], call=lambda m, **kw: np.take(m, [], **kw),
         kwargs={"axis": [None, 0, 1]}, name="np.take(an empty list)"),
    Spec(np.take_along_axis, [(3, 4)], call=lambda m, **kw: np.take_along_axis(
        m, np.array([[0, 3, 3, 1]] * 3), **kw), kwargs={"axis": [-1]}),
    Spec(np.take_along_axis, [(3, 4)], call=lambda m: np.take_along_axis(
        m, np.array([[0, 0, 2, 1]]), 0), name="np.take_along_axis(broadcast)"),
    Spec(np.take_along_axis, [(3, 4)], call=lambda m: np.take_along_axis(
        m, np.array([0, 11, 3, 3]), None), name="np.take_along_axis(axis=None)"),
    Spec(np.compress, [()], call=lambda m, **kw: np.compress([True], m, **kw),
         kwargs={"axis": [None, 0, -1]}, name="np.compress(0-d)"),
    Spec(np.compress, [(3, 4)], call=lambda m, **kw: np.compress([True, False, True], m, **kw),
         kwargs={"axis": [None, 0, -1]}),
    Spec(np.extract, [(3, 4)], call=lambda m: np.extract(MASK_45[:3, :4], m)),
    Spec(np.choose, [((4,), (4,), (4,)), ((2, 4), (1, 4), ())],
         call=lambda a, b, c: np.choose(np.array([0, 1, 2, 1]), [a, b, c])),
    Spec(np.choose, [(3, 2, 4), (3, 4), (3, 1, 1)], name="np.choose(one array)",
         call=lambda c: np.choose(np.array([[0, 1, 2, 1], [1, 1, 1, 0]]), c)),
    Spec(np.choose, [((3,), (3,))], name="np.choose(mode=)",
         call=lambda a, b, **kw: np.choose(np.array([0, 3, -1]), (a, b), **kw),
         kwargs={"mode": ["wrap", "clip"]}),
    Spec(np.select, [((3, 4), (4,), ()), ((3, 4), (), (3, 1))],
         call=lambda a, b, d: np.select([MASK_45[:3, :4], MASK_45[1:, :4]], [a, b], d)),
    Spec(np.select, [((3, 4), (4,))], name="np.select(plain default)",
         call=lambda a, b: np.select([MASK_45[:3, :4], MASK_45[1:, :4]], [a, b], 2.0)),
    Spec(np.where, [((2, 3), (2, 3)), ((2, 1), (1, 3)), ((3,), ())],
         call=lambda x, y: np.where(np.arange(3) % 2 == 0, x, y)),
    Spec(np.where, [(2, 3)], call=lambda x: np.where(x > 0, x, 0.0), name="np.where(relu)"),
    Spec(np.diagonal, [(3, 3), (3, 4), (4, 2)], kwargs={"offset": [0, 1, -1]}),
    Spec(np.diagonal, [(4, 5, 3)], kwargs={"offset": [0, 1], "axis1": [0, -1], "axis2": [1]}),
    Spec(np.diagonal, [(4, 5, 3)], call=lambda x: np.diagonal(x, -1, 2, 0),
         name="np.diagonal(axes apart, reversed)"),
    Spec(np.diagonal, [(3, 3)], call=lambda x: x.diagonal(), name="x.diagonal()"),
    Spec(np.diag, [(3,), (3, 3), (3, 4)], kwargs={"k": [0, 1, -2]}),
    Spec(np.tril, [(3,), (3, 3), (2, 3, 4)], kwargs={"k": [0, 1, -1]}),
    Spec(np.triu, [(3,), (3, 3), (2, 3, 4)], kwargs={"k": [0, 1, -1]}),
]



def test_repeated_indices_add_up():
    x = np.arange(3.0)
    np.testing.assert_array_equal(pb.grad(lambda x: np.sum(x[[0, 0, 2, 0]]))(x), [3, 0, 1])
    np.testing.assert_array_equal(
        pb.grad(lambda x: np.sum(np.take(x, [1, 1], axis=0)))(x), [0, 2, 0])


def test_advanced_indices_apart_move_first():
    x = np.arange(24.0).reshape(2, 3, 4)
    out, vjp_fn = pb.vjp(lambda x: x[[0, 1], :, [2, 3]], x)
    assert out.shape == (2, 3)
    g = np.arange(6.0).reshape(2, 3)
    expected = np.zeros_like(x)
    expected[0, :, 2] = g[0]
    expected[1, :, 3] = g[1]
    np.testing.assert_array_equal(vjp_fn(g)[0], expected)


@pytest.mark.parametrize("shape, dtype, index", [
    ((2, 3, 4), np.float64, np.s_[:, [0, 2], ..., 1]),
    ((1, 1), np.float32, np.s_[None, np.array([0, 0]), ..., 0]),
    ((2, 3), np.float32, np.s_[None, 1, ..., [0, 2, 2]]),
    ((3,), np.float64, []),
])
def test_values_are_numpys(shape, dtype, index):
    x = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    out, _ = pb.vjp(lambda x: x[index], x)
    assert out.shape == x[index].shape and out.dtype == dtype
    np.testing.assert_array_equal(out, x[index])


def test_ellipsis_of_no_axes_between_advanced_indices():
    x = np.arange(24.0).reshape(2, 3, 4)
    index = (slice(None), [0, 2], ..., 1)
    w = np.arange(4.0).reshape(2, 2)

    def loss(x):
        return np.sum(x[index] * w)

    assert pb.value_and_grad(loss)(x)[0] == loss(x)
    pb.check_grads(loss, x, order=2)


def test_tracked_index_is_refused():
    x = pb.param(np.arange(3.0))
    with pytest.raises(TypeError, match="index must be a plain"):
        x[pb.param(np.array(1.0))]
    with pytest.raises(TypeError, match="index must be a plain"):
        x[0, pb.param(np.array(1.0))]


def test_where_with_condition_only_gives_indices():
    x = pb.param(np.array([0.0, 2.0, 0.0, 3.0]))
    (idx,) = np.where(x)
    assert not isinstance(idx, pb.Tracked)
    np.testing.assert_array_equal(idx, [1, 3])


@pytest.mark.parametrize("f", [
    lambda c: np.choose(np.array([[0, 2, 1], [1, 0, 2]]), c),
    lambda c: np.choose(np.array([0, 2, 1]), [c[0, 0], c[1, 1], c[2, 0]]),
    lambda c: np.select([c[0] > 0, c[1] > 0], [c[1], c[2]], c[0]),
    lambda c: c[np.array([0, 2]), 1:], lambda c: np.take(c, [1, 4]),
    lambda c: np.compress([True, False, True], c, axis=0), lambda c: np.diagonal(c),
    lambda c: np.trace(c), lambda c: np.tril(c), lambda c: np.where(c > 0, c, 0.0),
], ids=["choose-array", "choose-list", "select", "getitem", "take", "compress", "diagonal",
        "trace", "tril", "where"])
def test_an_infinite_cotangent_reaches_only_what_the_output_depends_on(f):
    # a selection sends an inf or NaN cotangent to what it selects, and exactly 0 elsewhere
    c = np.array([[0.5, -1.0, 2.0], [3.0, 1.5, -0.5], [-2.0, 0.25, 1.0]])
    with np.errstate(invalid="ignore"):
        assert check_unreached(f, c) > 0


def test_where_zero_cotangent_on_the_branch_not_taken():
    # the gradient of sqrt at 0 is infinite, but where's other branch sends it nothing
    g = pb.grad(lambda x: np.sum(np.where(x > 0, np.sqrt(np.abs(x)), 0.0)))(
        np.array([0.0, 4.0]))
    np.testing.assert_array_equal(g, [0.0, 0.25])


def test_in_place_writes_are_refused():
    x = pb.param(np.arange(4.0))
    # writes (tests/rules/numpy/test_in_place.py), refused into a param
    for write in (lambda: np.put(x, [0], 1.0), lambda: np.putmask(x, x.value > 1, 0.0),
                  lambda: np.place(x, x.value > 1, [0.0]),
                  lambda: np.copyto(x, 1.0),
                  lambda: np.put_along_axis(x, np.array([0]), 1.0, 0)):
        with pytest.raises(TypeError, match="a write into a param"):
            write()
    with pytest.raises(TypeError, match="np.add.at writes a tracked value into a plain array"):
        np.add.at(np.zeros(4), [0, 0], x[:2])
    with pytest.raises(TypeError, match="in place"):  # np.multiply.at has no rule
        np.multiply.at(x, [0], 2.0)


@pytest.mark.parametrize("call", [lambda x: np.take(x, 0, axis=1),
                                  lambda x: np.compress([True], x, axis=1),
                                  lambda x: np.repeat(x, 2, axis=1),
                                  lambda x: np.cumsum(x, 1)])
def test_a_0d_array_has_no_second_axis(call):
    # NumPy reads a 0-d array as 1-d for axis 0 or -1 only; pullback keeps its AxisError
    with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
        call(np.array(0.5))
    with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
        pb.grad(lambda x: np.sum(call(x)))(np.array(0.5))


@pytest.mark.parametrize("args", [(None, 0, (3,)), ("a", 0, (3,)), (np.ones(2), [0, 1], "ab"),
                                  (np.ones(2), [0, 1], (3.0,))],
                         ids=["None", "str", "str shape", "float shape"])
def test_index_add_refuses_what_is_no_values_or_shape(args):
    with pytest.raises(TypeError, match="index_add.values, index, shape. takes numeric"):
        pb.index_add(*args)
