import numpy as np

import pullback as pb
from pullback.rules.numpy import scans

from ..spec import Spec
from .test_reductions import _as_numpy_casts, with_nan, with_zeros

CUMULATIVE_SUM = getattr(np, "cumulative_sum", None)  # NumPy 2.1 and later
CUMULATIVE_PROD = getattr(np, "cumulative_prod", None)

AXIS = {"axis": [None, 0, -1]}
SHAPES = [(3,), (2, 3)]
INDICES = [0, 3, 1, 4, 5, 5, 6]

SPECS = [
    Spec(np.cumsum, [()]),
    # a 0-d array with an axis: NumPy reads it as 1-d (the result has shape (1,))
    Spec(np.cumsum, [()], kwargs={"axis": [0, -1]}, name="np.cumsum(0-d, axis)"),
    Spec(np.nancumsum, [()], kwargs={"axis": [0]}, name="np.nancumsum(0-d, axis)"),
    Spec(np.cumprod, [()], kwargs={"axis": [0, -1]}, name="np.cumprod(0-d, axis)"),
    Spec(np.nancumprod, [()], kwargs={"axis": [-1]}, name="np.nancumprod(0-d, axis)"),
    Spec(np.cumsum, SHAPES, kwargs=AXIS),
    Spec(np.cumsum, [(2, 3)], call=lambda x: x.cumsum(1), name="x.cumsum()"),
    Spec(np.nancumsum, [(4,), (3, 4)], domain=with_nan, kwargs=AXIS),
    Spec(np.cumprod, [()]),
    Spec(np.cumprod, SHAPES, kwargs=AXIS),
    # every third element zero: rows with one zero and with two (exact to order 2)
    Spec(np.cumprod, [(), (4,), (2, 4), (7,)], domain=with_zeros, name="np.cumprod(zeros)"),
    Spec(np.cumprod, [(2, 4), (4, 3)], domain=with_zeros, kwargs={"axis": [0, -1]},
         name="np.cumprod(zeros)"),
    Spec(np.cumprod, [(4,)], domain="complex", name="np.cumprod(complex)"),
    Spec(np.cumprod, [(4,)], domain=lambda rng, s: with_zeros(rng, s) * (1 + 1j),
         name="np.cumprod(complex zeros)"),
    Spec(np.nancumprod, [(4,), (3, 4)], domain=with_nan, kwargs=AXIS),
    Spec(CUMULATIVE_SUM, [(3,)]),
    Spec(CUMULATIVE_SUM, [()], kwargs={"axis": [0], "include_initial": [False, True]},
         name="np.cumulative_sum(0-d)"),
    Spec(CUMULATIVE_SUM, [(2, 3)], kwargs={"axis": [0, -1], "include_initial": [False, True]}),
    Spec(CUMULATIVE_PROD, [(3,)]),
    Spec(CUMULATIVE_PROD, [(2, 4)], domain=with_zeros,
         kwargs={"axis": [0, -1], "include_initial": [False, True]}),
    Spec(np.cumsum, SHAPES, call=np.add.accumulate, name="np.add.accumulate"),
    Spec(np.cumprod, [(2, 4)], domain=with_zeros, call=np.multiply.accumulate,
         kwargs={"axis": [0, -1]}, name="np.multiply.accumulate"),
    *[Spec(prim, [(5,), (2, 5), (4, 3)], call=ufunc.accumulate, kwargs={"axis": [0, -1]},
           name=f"np.{ufunc.__name__}.accumulate")
      for ufunc, prim in [(np.maximum, scans.maximum_accumulate),
                          (np.minimum, scans.minimum_accumulate),
                          (np.fmax, scans.fmax_accumulate), (np.fmin, scans.fmin_accumulate)]],
    Spec(scans.maximum_accumulate, [(5,)], call=lambda x: np.maximum.accumulate(x),
         name="np.maximum.accumulate(default axis)"),
    # a NaN: fmax and fmin pass over it
    *[Spec(prim, [(5,), (2, 5)], domain=with_nan, call=ufunc.accumulate,
           kwargs={"axis": [-1]}, name=f"np.{ufunc.__name__}.accumulate(nan)")
      for ufunc, prim in [(np.fmax, scans.fmax_accumulate), (np.fmin, scans.fmin_accumulate)]],
    # segments [0, 3), the one element 3 (3 >= 1), [1, 4), [4, end), and [5, 6) twice
    *[Spec(scans.add_reduceat, shapes, call=lambda x, axis: np.add.reduceat(x, INDICES, axis),
           kwargs={"axis": axes}, name="np.add.reduceat")
      for shapes, axes in [([(7,)], [0, -1]), ([(7, 3)], [0]), ([(2, 7)], [1, -1])]],
    Spec(scans.add_reduceat, [(7,), (7, 2)], call=lambda x: np.add.reduceat(x, [2]),
         name="np.add.reduceat(one segment)"),
]



def test_cumprod_with_zeros_is_exact():
    x = np.array([2.0, 0.0, 3.0, 0.0, 5.0])

    def loss(x):
        return np.sum(np.cumprod(x) * np.arange(1.0, 6.0))

    # d/dx_j = sum_{i >= j} w_i prod_{k <= i, k != j} x_k
    np.testing.assert_array_equal(pb.grad(loss)(x), [1.0, 2 * 2 + 3 * 2 * 3, 0.0, 0.0, 0.0])
    hessian = np.stack([pb.grad(lambda x, j=j: pb.grad(loss)(x)[j])(x) for j in range(5)])
    expected = np.zeros((5, 5))
    expected[0, 1] = expected[1, 0] = 2 + 3 * 3
    expected[1, 2] = expected[2, 1] = 3 * 2
    expected[1, 3] = expected[3, 1] = 4 * 2 * 3 + 5 * 2 * 3 * 5
    np.testing.assert_array_equal(hessian, expected)


def test_running_maximum_ties_share():
    # output i goes equally to the elements of x[:i + 1] that attain it, as np.max's does
    x, w = np.array([1.0, 1.0, 0.0, 1.0, 2.0]), np.arange(1.0, 6.0)
    got = pb.grad(lambda x: np.sum(np.maximum.accumulate(x) * w))(x)
    np.testing.assert_allclose(got, [1 + 2 / 2 + 3 / 2 + 4 / 3, 2 / 2 + 3 / 2 + 4 / 3, 0,
                                     4 / 3, 5])
    got = pb.grad(lambda x: np.sum(np.minimum.accumulate(-x) * w))(x)
    np.testing.assert_allclose(got, -np.array([1 + 2 / 2 + 3 / 2 + 4 / 3,
                                               2 / 2 + 3 / 2 + 4 / 3, 0, 4 / 3, 5]))


def test_running_extremum_nan():
    # maximum: a NaN wins from there on and takes the cotangent; fmax: a NaN loses
    x = np.array([1.0, np.nan, 2.0])
    (ct,) = pb.vjp(np.maximum.accumulate, x)[1](np.ones(3))
    np.testing.assert_array_equal(ct, [1.0, 2.0, 0.0])
    np.testing.assert_array_equal(pb.grad(lambda x: np.sum(np.fmax.accumulate(x)))(x),
                                  [2.0, 0.0, 1.0])


def test_add_reduceat_spreads_each_segment():
    # indices [0, 3, 1, 4]: segments [0, 3), the element 3 (3 >= 1), [1, 4), [4, end)
    got = pb.grad(lambda x: np.sum(np.add.reduceat(x, [0, 3, 1, 4]) * np.arange(1.0, 5.0)))
    np.testing.assert_array_equal(got(np.ones(6)), [1, 1 + 3, 1 + 3, 2 + 3, 4, 4])


# a complex array with a real dtype=: NumPy scans its real part
SPECS += [Spec(f, SHAPES, domain="complex", kwargs={"axis": [None, -1]},
               call=_as_numpy_casts(f, float), name=f"np.{f.__name__}(complex, dtype=float)")
          for f in (np.cumprod, np.cumsum)]
