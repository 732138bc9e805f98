import inspect

import numpy as np
import pytest

import pullback as pb

from ..spec import Spec

TRIM_AXIS = "axis" in inspect.signature(np.trim_zeros).parameters  # NumPy 2.2 on


def _pair(func):
    return lambda x, y, **kw: func([x, y], **kw)


SPECS = [
    # joining
    Spec(np.concatenate, [((3,), (2,)), ((2, 3), (1, 3))], call=_pair(np.concatenate)),
    Spec(np.concatenate, [((2, 3), (2, 1))], kwargs={"axis": [-1, 1]},
         call=_pair(np.concatenate)),
    Spec(np.concatenate, [((2, 3), (4,)), ((), (3,))], kwargs={"axis": [None]},
         call=_pair(np.concatenate)),
    Spec(np.concatenate, [((2,), (3,))], name="np.concatenate(with a constant)",
         call=lambda x, y: np.concatenate([x, np.ones(2), y])),
    Spec(np.stack, [((), ()), ((3,), (3,))], call=_pair(np.stack)),
    Spec(np.stack, [((2, 3), (2, 3))], kwargs={"axis": [1, -1]}, call=_pair(np.stack)),
    Spec(np.vstack, [((), ()), ((3,), (3,)), ((2, 3), (3,))], call=_pair(np.vstack)),
    Spec(np.hstack, [((), (2,)), ((3,), (2,)), ((2, 3), (2, 1))], call=_pair(np.hstack)),
    Spec(np.dstack, [((3,), (3,)), ((2, 3), (2, 3)), ((2, 3, 2), (2, 3, 1))],
         call=_pair(np.dstack)),
    Spec(np.column_stack, [((), ()), ((3,), (3,)), ((3,), (3, 2))], call=_pair(np.column_stack)),
    Spec(np.block, [((2,), (3,)), ((2, 2), (2, 1))], call=lambda x, y: np.block([x, y])),
    Spec(np.block, [(2, 3)], call=np.block, name="np.block(one array)"),
    Spec(np.block, [((2, 2), (2, 1), (3,))], name="np.block(nested)",
         call=lambda a, b, c: np.block([[a, b], [c]])),
    Spec(np.block, [((2, 2), (2, 4))], name="np.block(deeper)",
         call=lambda a, c: np.block([[[a, a]], [[c]]])),
    Spec(np.append, [((3,), (2,)), ((2, 3), ()), ((), (2, 2))]),
    Spec(np.append, [((2, 3), (1, 3))], kwargs={"axis": [0, -2]}),
    Spec(np.append, [((2, 3), (2, 1))], kwargs={"axis": [1, -1]}),
    Spec(np.append, [(2, 3)], call=lambda x: np.append(x, [1.0, 2.0]),
         name="np.append(a constant)"),
    Spec(np.append, [(3,)], call=lambda x: np.append(np.ones((2, 2)), x),
         name="np.append(to a constant)"),
    # splitting: each piece is an output; the pullback joins their cotangents
    Spec(np.split, [(6,), (2, 6)], kwargs={"indices_or_sections": [3, [1, 4]]},
         call=lambda x, indices_or_sections: np.split(x, indices_or_sections, axis=-1)),
    Spec(np.split, [(4, 3)], kwargs={"indices_or_sections": [2], "axis": [0]}),
    Spec(np.array_split, [(5,), (2, 5)], kwargs={"indices_or_sections": [3]},
         call=lambda x, indices_or_sections: np.array_split(x, indices_or_sections, -1)),
    Spec(np.hsplit, [(4,), (2, 4)], kwargs={"indices_or_sections": [2, [1]]}),
    Spec(np.vsplit, [(4, 3)], kwargs={"indices_or_sections": [2]}),
    Spec(np.dsplit, [(2, 3, 4)], kwargs={"indices_or_sections": [[1, 3]]}),
    # building
    Spec(np.meshgrid, [((3,), (2,))], kwargs={"indexing": ["xy", "ij"], "sparse": [False, True]},
         call=lambda x, y, **kw: np.meshgrid(x, y, **kw)),
    Spec(np.meshgrid, [((3,), (2,), (4,)), ((2, 2), (3,), ())], kwargs={"indexing": ["xy"]},
         call=lambda *xs, **kw: np.meshgrid(*xs, **kw), name="np.meshgrid(three)"),
    Spec(np.meshgrid, [(3,)], call=lambda x: np.meshgrid(x), name="np.meshgrid(one)"),
    Spec(np.diagflat, [(3,), (2, 2)], kwargs={"k": [0, 1, -2]}),
    Spec(np.vander, [(3,), (4,)], kwargs={"N": [None, 1, 4], "increasing": [False, True]}),
    Spec(np.linspace, [((), ()), ((3,), ()), ((2, 1), (3,))],
         kwargs={"num": [1, 2, 5], "endpoint": [True, False]}),
    Spec(np.linspace, [((3,), (2, 3))], kwargs={"num": [4], "axis": [1, -1, 0]}),
    Spec(np.linspace, [((), ()), ((2,), (2,))], kwargs={"num": [1, 4], "endpoint": [True, False]},
         call=lambda start, stop, **kw: np.linspace(start, stop, retstep=True, **kw)[0],
         name="np.linspace(retstep: the samples)"),
    Spec(np.linspace, [((), ()), ((2,), (2,))], kwargs={"endpoint": [True, False]},
         call=lambda start, stop, endpoint: np.linspace(start, stop, 4, endpoint, retstep=True),
         name="np.linspace(retstep: samples and step)"),
    Spec(np.linspace, [()], call=lambda stop: np.linspace(0.0, stop ** 2, 3),
         name="np.linspace(constant start)"),
    Spec(np.logspace, [((), ()), ((3,), ()), ((2, 1), (3,))],
         kwargs={"num": [1, 4], "endpoint": [True, False], "base": [10.0, 2.0]}),
    Spec(np.logspace, [((2,), (), (2,))], kwargs={"axis": [0, 1, -1]},
         call=lambda a, b, base, **kw: np.logspace(a, b, 3, base=base + 3.0, **kw),
         name="np.logspace(tracked base)"),
    Spec(np.geomspace, [((), ()), ((3,), ()), ((2, 1), (3,))], domain="positive",
         kwargs={"num": [1, 4], "endpoint": [True, False]}),
    Spec(np.geomspace, [((2,), (2,))], domain="positive", kwargs={"axis": [1, -1]},
         call=lambda a, b, **kw: np.geomspace(-a, -b, 3, **kw), name="np.geomspace(negative)"),
    Spec(np.geomspace, [((), ()), ((2,), (2,))], domain="complex", kwargs={"num": [4]},
         name="np.geomspace(complex)"),
    Spec(np.full_like, [((3,), ()), ((2, 3), (3,))], call=lambda a, v: np.full_like(a, v * 2.0)),
    Spec(np.full_like, [(3,)], call=lambda a: np.full_like(a, a[0]) * a,
         name="np.full_like(a, a[0])"),
    # deleting, inserting, resizing, trimming: gathers of the input's elements
    Spec(np.delete, [(5,), (2, 3)],
         kwargs={"obj": [1, -1, slice(0, 2), [0, 1]], "axis": [None, 0, -1]}),
    Spec(np.delete, [(5,), (2, 3)], kwargs={"axis": [None, 0, -1]}, name="np.delete(int array)",
         call=lambda x, axis: np.delete(x, np.array([-1, 0]), axis)),
    Spec(np.delete, [()], kwargs={"obj": [0, [0]]}, name="np.delete(0-d)"),
    Spec(np.delete, [(4,), (2, 4)], name="np.delete(a boolean mask)",
         call=lambda x: np.delete(x, np.array([True, False, False, True]), axis=-1)),
    Spec(np.insert, [((4,), ()), ((4,), (2,)), ((2, 3), ())],
         kwargs={"obj": [1, -1, [0, 2], slice(1, 3)]},
         call=lambda x, v, obj: np.insert(x, obj, v)),
    Spec(np.insert, [((2, 3), (2,)), ((2, 3), (2, 1)), ((2, 3), ())],
         kwargs={"obj": [1, [0, 3], slice(0, 2)], "axis": [1, -1]},
         call=lambda x, v, obj, axis: np.insert(x, obj, v, axis)),
    Spec(np.insert, [((2, 3), (3,)), ((2, 3), (2, 3))], kwargs={"obj": [0, [2], [1, 1]]},
         call=lambda x, v, obj: np.insert(x, obj, v, axis=0), name="np.insert(rows)"),
    Spec(np.insert, [(2, 3)], call=lambda x: np.insert(x, 2, [7.0, 8.0], axis=1),
         name="np.insert(constant values)"),
    Spec(np.insert, [(3,), ()], call=lambda v: np.insert(np.ones((2, 3)), [1], v, axis=0),
         name="np.insert(into a constant)"),
    Spec(np.resize, [(3,), (2, 3), ()], kwargs={"new_shape": [7, (2, 4), (1,), 0, (3, 0)]}),
    Spec(np.trim_zeros, [(4,)], kwargs={"trim": ["fb", "f", "b"]},  # zeros put at the ends
         call=lambda x, trim: np.trim_zeros(np.pad(x, (2, 1)), trim)),
    Spec(np.trim_zeros, [(4,)], call=lambda x: np.trim_zeros(x), name="np.trim_zeros(none)"),
    *([Spec(np.trim_zeros, [(2, 3)], name="np.trim_zeros(axis)",  # axis= came in NumPy 2.2
            kwargs={"trim": ["fb", "f", "b"], "axis": [None, 0, -1, (0, 1)]},
            call=lambda x, trim, axis: np.trim_zeros(np.pad(x, ((1, 2), (2, 1))), trim, axis))]
      if TRIM_AXIS else []),
]




def test_split_pieces_not_used_get_zero_cotangents():
    x = np.arange(6.0)
    g = pb.grad(lambda x: np.sum(np.split(x, 3)[1] ** 2))(x)
    np.testing.assert_array_equal(g, [0, 0, 4, 6, 0, 0])


@pytest.mark.parametrize("trim, want", [("fb", [0, 3, 3, 3, 0]), ("f", [0, 3, 3, 3, 3]),
                                        ("b", [3, 3, 3, 3, 0])])
def test_trimmed_zeros_get_no_cotangent(trim, want):
    # which zeros are trimmed is decided by the values: the trimmed ones get nothing, the
    # zero kept inside gets its cotangent
    x = np.array([0.0, 1.0, 0.0, 2.0, 0.0])
    g = pb.grad(lambda x: np.sum(3.0 * np.trim_zeros(x, trim)))(x)
    np.testing.assert_array_equal(g, want)
    g = pb.grad(lambda x: np.sum(np.trim_zeros(x, trim)))(np.zeros(3))  # all trimmed
    np.testing.assert_array_equal(g, np.zeros(3))


def test_trim_zeros_follows_numpy_on_every_trim_string():
    x = np.array([0.0, 1.0, 2.0, 0.0])
    for trim in ["fb", "bf", "F", "B", "x", ""]:
        try:
            want = np.trim_zeros(x, trim)
        except ValueError as e:  # NumPy 2.2 on checks the string
            with pytest.raises(ValueError, match="trim"):
                np.trim_zeros(pb.param(x), trim)
            assert "trim" in str(e)
            continue
        np.testing.assert_array_equal(np.trim_zeros(pb.param(x), trim).value, want)


def test_resize_of_an_empty_array_is_zeros():
    out, vjp_fn = pb.vjp(lambda x: np.resize(x, (2, 2)), np.zeros(0))
    np.testing.assert_array_equal(out, np.resize(np.zeros(0), (2, 2)))
    assert vjp_fn(np.ones((2, 2)))[0].shape == (0,)


def test_resize_repeats_add_up():
    g = pb.grad(lambda x: np.sum(np.resize(x, 7)))(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [3.0, 2.0, 2.0])


def test_insert_values_broadcast_add_up():
    # one value written at three places gets the sum of their cotangents
    g = pb.grad(lambda v: np.sum(np.insert(np.arange(4.0), [0, 1, 4], v) * np.arange(7.0)))(1.0)
    assert g == 0.0 + 2.0 + 6.0


def test_delete_and_insert_raise_numpy_errors_for_a_float_index():
    # obj is an index: a float one (tracked or not) raises NumPy's own error
    calls = [lambda x: np.delete(x, 1.0 * x[:1]), lambda x: np.delete(x, np.array([1.0])),
             lambda x: np.insert(x, 1.0 * x[:1], 1.0), lambda x: np.insert(x, [0.5, 1.5], 1.0)]
    for call in calls:
        with pytest.raises((IndexError, TypeError, ValueError)) as numpy_error:
            call(np.arange(3.0))
        with pytest.raises(numpy_error.type):
            call(pb.param(np.arange(3.0)))


def test_fromiter_of_tracked_values():
    def f(x):
        return np.fromiter((v * v for v in x), float) * np.arange(1.0, 4.0)

    pb.check_grads(f, np.array([0.5, -1.0, 2.0]), order=2)
    out = pb.vjp(lambda x: np.fromiter(iter(x), float, count=2), np.ones(3))[0]
    np.testing.assert_array_equal(out, [1.0, 1.0])
    with pytest.raises(ValueError, match="iterator too short"):
        pb.grad(lambda x: np.sum(np.fromiter(iter(x), float, count=4)))(np.ones(3))
    np.testing.assert_array_equal(np.fromiter(range(3), float), [0.0, 1.0, 2.0])  # plain
