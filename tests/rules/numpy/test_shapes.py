import numpy as np
import pytest

import pullback as pb
from pullback._engine.registry import astype

from ..spec import BINARY, UNARY, Spec

_windows = np.lib.stride_tricks.sliding_window_view

SPECS = [
    Spec(_windows, [(5,)], call=lambda x: _windows(x, 3)),
    Spec(_windows, [(4, 6)], call=lambda x: _windows(x, (2, 3)),
         name="sliding_window_view(every axis)"),
    Spec(_windows, [(4, 6)], call=lambda x: _windows(x, 3, axis=-1),
         name="sliding_window_view(axis)"),
    Spec(_windows, [(4, 6)], call=lambda x: _windows(x, (2, 2), axis=(1, 1)),
         name="sliding_window_view(an axis twice)"),
    # changing shape
    Spec(np.reshape, [(2, 3)], kwargs={"order": ["C", "F", "A"]},
         call=lambda x, order: np.reshape(x, (3, 2), order=order)),
    Spec(np.reshape, UNARY, call=lambda x: np.reshape(x, (1, -1)), name="np.reshape(1, -1)"),
    Spec(np.reshape, [(2, 3)], call=lambda x: x.reshape(6), name="x.reshape"),
    Spec(np.ravel, UNARY, kwargs={"order": ["C", "F", "A", "K"]}),
    Spec(np.ravel, [(2, 3, 4)], kwargs={"order": ["F", "K"]}, name="np.ravel(transposed)",
         call=lambda x, order: np.ravel(np.transpose(x, (1, 0, 2)), order)),
    Spec(np.ravel, [(2, 3)], kwargs={"order": ["C", "F"]}, name="x.flatten",
         call=lambda x, order: x.flatten(order)),
    # transposing
    Spec(np.transpose, [(3,), (2, 3), (2, 3, 4)]),
    Spec(np.transpose, [(2, 3, 4)], kwargs={"axes": [(1, 0, 2), (-1, 0, 1)]}),
    Spec(np.transpose, [(2, 3)], call=lambda x: x.T, name="x.T"),
    Spec(np.swapaxes, [(2, 3), (2, 3, 4)], kwargs={"axis1": [0, -2], "axis2": [-1]}),
    Spec(np.moveaxis, [(2, 3, 4)], kwargs={"source": [0, -1], "destination": [-1, 1]}),
    Spec(np.moveaxis, [(2, 3, 4)], call=lambda x: np.moveaxis(x, (0, 1), (2, 0)),
         name="np.moveaxis(several)"),
    Spec(np.rollaxis, [(2, 3, 4)], kwargs={"axis": [2, 0], "start": [0, 3, -1]}),
    # adding and removing axes
    Spec(np.expand_dims, UNARY, kwargs={"axis": [0, -1]}),
    Spec(np.expand_dims, [(2, 3)], kwargs={"axis": [(0, 2)]}),
    Spec(np.squeeze, [(1, 3, 1), (1,)], kwargs={"axis": [None, 0]}),
    Spec(np.atleast_1d, UNARY),
    Spec(np.atleast_2d, UNARY),
    Spec(np.atleast_3d, UNARY + [(2, 3, 4)]),
    Spec(np.atleast_1d, [((), (3,))], call=lambda x, y: np.atleast_1d(x, y),
         name="np.atleast_1d(several)"),
    Spec(np.atleast_2d, [((), (2, 3))], call=lambda x, y: np.atleast_2d(x, y),
         name="np.atleast_2d(several)"),
    Spec(np.atleast_3d, [((3,), (2, 3))], call=lambda x, y: np.atleast_3d(x, y),
         name="np.atleast_3d(several)"),
    Spec(np.broadcast_to, [(), (3,), (2, 1)], call=lambda x: np.broadcast_to(x, (4, 2, 3))),
    Spec(np.broadcast_arrays, BINARY, call=lambda x, y: np.broadcast_arrays(x, y)),
    Spec(np.broadcast_arrays, [((2, 1), (3,), ())], call=lambda *xs: np.broadcast_arrays(*xs),
         name="np.broadcast_arrays(three)"),
    Spec(np.copy, UNARY),
    Spec(astype, UNARY, kwargs={"dtype": [np.float64, np.complex128]},
         call=lambda x, dtype: x.astype(dtype), name="x.astype"),
    # rearranging
    Spec(np.flip, [(3,), (2, 3)], kwargs={"axis": [None, 0, -1]}),
    Spec(np.flip, [(), (2, 3, 4)], name="np.flip(all)"),
    Spec(np.flip, [(2, 3, 4)], kwargs={"axis": [(0, 2)]}),
    Spec(np.fliplr, [(2, 3), (2, 3, 4)]),
    Spec(np.flipud, [(3,), (2, 3)]),
    Spec(np.roll, [(3,), (2, 3)], kwargs={"shift": [1, -4], "axis": [None, 0, -1]}),
    Spec(np.roll, [(2, 3)], kwargs={"shift": [(1, 2)], "axis": [(0, 1), None]}),
    Spec(np.rot90, [(2, 3), (2, 3, 4)], kwargs={"k": [1, 2, -1, 7]}),
    Spec(np.rot90, [(2, 3, 4)], kwargs={"k": [1, 3], "axes": [(2, 0), (-1, -2)]}),
    # tiling
    Spec(np.tile, UNARY, kwargs={"reps": [2, (2, 1), (1, 2, 2)]}),
    Spec(np.repeat, UNARY, kwargs={"repeats": [1, 3]}),
    Spec(np.repeat, [(3,), (2, 3)], kwargs={"repeats": [2], "axis": [0, -1]}),
    Spec(np.repeat, [()], kwargs={"repeats": [2, [3]], "axis": [0, -1]},
         name="np.repeat(0-d, axis)"),
    Spec(np.repeat, [(3,), (2, 3)], call=lambda x: np.repeat(x, [1, 0, 2], axis=-1),
         name="np.repeat(per element)"),
    Spec(np.repeat, [(2, 3)], call=lambda x: np.repeat(x, [0, 1, 2, 1, 1, 3]),
         name="np.repeat(per element, flattened)"),
]




@pytest.mark.parametrize("convert", [lambda x: np.asarray(x), lambda x: np.array(x),
                                     lambda x: np.asarray([x[0], x[1]])])
def test_asarray_of_a_tracked_value_is_tracked(convert):
    # np.asarray/np.array do not dispatch; pullback's stand-ins for them, in NumPy's
    # namespace while a differentiation runs, record the copy
    pb.check_grads(lambda x: np.sum(convert(x) ** 2), np.array([1.0, 2.0]))


def test_several_outputs_take_zeros_for_unused_ones():
    x, y = np.arange(3.0), np.array([[1.0], [2.0]])
    g = pb.grad(lambda x, y: np.sum(np.broadcast_arrays(x, y)[1]), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(g[0], np.zeros(3))
    np.testing.assert_array_equal(g[1], np.full((2, 1), 3.0))


def test_roll_and_flip_move_complex_cotangents_unchanged():
    z = np.array([1 + 2j, 3 - 1j, -2j])
    u = np.array([1j, 2.0, 1 - 1j])
    _, vjp_fn = pb.vjp(lambda z: np.flip(np.roll(z, 1)), z)
    np.testing.assert_array_equal(vjp_fn(u)[0], np.roll(np.flip(u), -1))
