import warnings

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

from ..spec import NUMPY2, Spec, check_unreached

AXES = {"axis": [None, 0, -1], "keepdims": [False, True]}
SHAPES = [(3,), (2, 3)]


def with_zeros(rng, shape):
    """Normal draws with every third element zero: rows with one and with two zeros."""
    x = rng.standard_normal(shape)
    x.flat[::3] = 0.0
    return x


def with_nan(rng, shape):
    x = rng.standard_normal(shape)
    x.flat[1] = np.nan
    return x


WHERE = np.array([True, False, True, True])


SPECS = [
    Spec(np.sum, [()]),
    Spec(np.sum, SHAPES, kwargs=AXES),
    Spec(np.sum, [(2, 3, 4)], kwargs={"axis": [(0, 2)], "keepdims": [False, True]}),
    Spec(np.sum, [(3, 4)], kwargs={"axis": [-1, None], "where": [WHERE]},
         name="np.sum(where=)"),
    Spec(np.sum, [((2, 3), ())], call=lambda x, init: np.sum(x, 0, None, None, False, init),
         name="np.sum(tracked initial)"),
    Spec(np.sum, [(2, 3)], call=lambda x: x.sum(axis=-1), name="x.sum()"),
    Spec(np.nansum, [(4,), (3, 4)], domain=with_nan, kwargs=AXES),
    Spec(np.mean, [()]),
    Spec(np.mean, SHAPES, kwargs=AXES),
    Spec(np.mean, [(2, 3, 4)], kwargs={"axis": [(0, 2)]}),
    Spec(np.mean, [(3, 4)], kwargs={"axis": [-1, None], "where": [WHERE]},
         name="np.mean(where=)"),
    Spec(np.nanmean, [(4,), (3, 4)], domain=with_nan, kwargs=AXES),
    Spec(np.average, SHAPES, kwargs=AXES),
    Spec(np.average, [((2, 3), (3,))], call=lambda a, w: np.average(a, -1, w),
         domain=("real", "positive"), name="np.average(1-d weights)"),
    Spec(np.average, [((2, 3), (2,))],
         call=lambda a, w: np.average(a, 0, w, returned=True, keepdims=True),
         domain=("real", "positive"), name="np.average(returned=True)"),
    Spec(np.average, [((2, 3), (2, 3))], call=lambda a, w: np.average(a, None, w, True),
         domain=("real", "positive"), name="np.average(full weights)"),
    # weights laid out along a tuple of axes: a NumPy 2 feature
    *([Spec(np.average, [((2, 3, 4), (4, 2))], call=lambda a, w: np.average(a, (2, 0), w),
            domain=("real", "positive"), name="np.average(weights along two axes)")]
      if NUMPY2 else []),
    Spec(np.var, [()]),
    Spec(np.var, SHAPES, kwargs={**AXES, "ddof": [0, 1]}),
    Spec(np.var, [(3, 4)], kwargs={"axis": [-1], "where": [WHERE],
                                   **({"correction": [1]} if NUMPY2 else {"ddof": [1]})},
         name="np.var(where=)"),  # correction= is NumPy 2's spelling of ddof=
    Spec(np.var, [(3,)], domain="complex", name="np.var(complex)"),
    Spec(np.std, [()], call=lambda x: np.std(x + np.array([0.0, 1.0])), name="np.std(0-d)"),
    Spec(np.std, SHAPES, kwargs={**AXES, "ddof": [0, 1]}),
    Spec(np.var, [(2, 3, 4)], kwargs={"axis": [(0, 2)], "keepdims": [True]}),
    Spec(np.std, [(2, 3, 4)], kwargs={"axis": [(2, 1)]}),
    Spec(np.nanvar, [(4,), (3, 4)], domain=with_nan, kwargs={**AXES, "ddof": [1]}),
    Spec(np.nanstd, [(4,), (3, 4)], domain=with_nan, kwargs=AXES),
    Spec(np.prod, [()]),
    Spec(np.prod, SHAPES, kwargs=AXES),
    Spec(np.prod, [(2, 3, 4)], kwargs={"axis": [(0, 2)]}),
    Spec(np.prod, [()], domain=with_zeros, name="np.prod(zero)"),
    Spec(np.prod, [(4,), (2, 4)], domain=with_zeros, kwargs=AXES, name="np.prod(zeros)"),
    Spec(np.prod, [(2, 3, 4)], domain=with_zeros, kwargs={"axis": [(0, 2), (1, 2)]},
         name="np.prod(zeros, two axes)"),
    Spec(np.prod, [(3, 4)], domain=with_zeros, kwargs={"axis": [-1], "where": [WHERE]},
         name="np.prod(where=)"),
    Spec(np.prod, [((2, 4), ())], domain=(with_zeros, "real"),
         call=lambda x, init: np.prod(x, 1, None, None, False, init),
         name="np.prod(tracked initial)"),
    Spec(np.prod, [(4,)], domain="complex", name="np.prod(complex)"),
    Spec(np.nanprod, [(4,), (3, 4)], domain=with_nan, kwargs=AXES),
    Spec(np.trace, [(3, 3), (3, 4)], kwargs={"offset": [0, 1, -1]}),
    Spec(np.trace, [(2, 3, 4)], kwargs={"offset": [0, 1], "axis1": [2, 0], "axis2": [1]}),
    Spec(np.trace, [(3, 4)], call=lambda a: np.trace(a, 1, 0, 1, np.float64),
         name="np.trace(every argument by position)"),
]

# max and min are smooth away from ties (random inputs have none): the pullback is
# locally constant in x, so the order-2 check holds
for _f in (np.max, np.amax, np.min, np.amin):
    SPECS += [
        Spec(_f, [()]),
        Spec(_f, SHAPES, kwargs=AXES),
        Spec(_f, [(2, 3, 4)], kwargs={"axis": [(0, 2)]}),
    ]
SPECS += [
    Spec(np.max, [(3, 4)], kwargs={"axis": [-1], "where": [WHERE], "initial": [-0.5]},
         name="np.max(where=, initial=)"),
    Spec(np.min, [((2, 3), ())], call=lambda x, init: np.min(x, 0, None, False, init),
         name="np.min(tracked initial)"),
    Spec(np.nanmax, [(4,), (3, 4)], domain=with_nan, kwargs=AXES),
    Spec(np.nanmin, [(4,), (3, 4)], domain=with_nan, kwargs=AXES),
    Spec(np.ptp, [()]),
    Spec(np.ptp, SHAPES, kwargs=AXES),
    Spec(np.ptp, [(2, 3, 4)], kwargs={"axis": [(0, 2)]}),
    # ufunc methods, implemented by the functions above
    Spec(np.sum, SHAPES, call=np.add.reduce, kwargs={"axis": [0, None], "keepdims": [True]},
         name="np.add.reduce"),
    Spec(np.prod, [(2, 4)], domain=with_zeros, call=np.multiply.reduce,
         kwargs={"axis": [0, -1]}, name="np.multiply.reduce"),
    Spec(np.max, SHAPES, call=np.maximum.reduce, name="np.maximum.reduce"),
    Spec(np.min, SHAPES, call=np.minimum.reduce, kwargs={"axis": [-1]},
         name="np.minimum.reduce"),
    Spec(np.logaddexp, SHAPES + [(2, 3, 4)], call=np.logaddexp.reduce,
         kwargs={"axis": [0, -1, None], "keepdims": [False, True]}, name="np.logaddexp.reduce"),
    Spec(np.logaddexp2, [(2, 3, 4)], call=np.logaddexp2.reduce,
         kwargs={"axis": [(0, 2), 1]}, name="np.logaddexp2.reduce"),
]

def _as_numpy_casts(f, dtype):
    """``f(z, dtype=dtype, ...)`` of a complex ``z`` with a real dtype: NumPy casts z to
    dtype (its real part), warning that it does."""
    def cast(z, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            return f(z, dtype=dtype, **kwargs)

    return cast


# a complex array with a real dtype=: the function of its real part (var and std centre on
# the real part's mean, and take |z - mean|^2 of the complex values, as NumPy does)
SPECS += [Spec(f, SHAPES, domain="complex", kwargs={"axis": [None, -1]},
               call=_as_numpy_casts(f, float), name=f"np.{f.__name__}(complex, dtype=float)")
          for f in (np.prod, np.nanprod, np.var, np.std, np.nanvar)]
SPECS += [Spec(np.prod, [(4,)], domain=lambda rng, s: with_zeros(rng, s) + 1j,
               call=_as_numpy_casts(np.prod, float), name="np.prod(complex zeros, dtype=float)")]

OUTER = [(np.add, "real"), (np.subtract, "real"), (np.multiply, "real"),
         (np.true_divide, ("real", "nonzero")), (np.power, ("positive", "real")),
         (np.maximum, "real")]
SPECS += [Spec(f, [((3,), (2,)), ((2, 2), ()), ((), (3,))], domain=d, call=f.outer,
               name=f"np.{f.__name__}.outer") for f, d in OUTER]



def test_ties_share_the_gradient():
    x = np.array([1.0, 3.0, 3.0])
    for f in (np.max, np.amax, np.nanmax):
        np.testing.assert_allclose(pb.grad(f)(x), [0, 0.5, 0.5])
    for f in (np.min, np.amin, np.nanmin):
        np.testing.assert_allclose(pb.grad(f)(-x), [0, 0.5, 0.5])
    np.testing.assert_allclose(pb.grad(lambda x: np.sum(np.max(x, axis=0)))(
        np.array([[1.0, 3.0], [1.0, 2.0]])), [[0.5, 1.0], [0.5, 0.0]])
    np.testing.assert_allclose(pb.grad(np.ptp)(np.array([1.0, 3.0, 3.0, 1.0, 2.0])),
                               [-0.5, 0.5, 0.5, -0.5, 0.0])
    # a tracked initial that ties with the elements takes its share
    gx, gi = pb.grad(lambda x, i: np.max(x, initial=i), argnums=(0, 1))(np.array([1.0, 3.0]), 3.0)
    np.testing.assert_allclose(gx, [0, 0.5])
    assert gi == 0.5


_X = np.array([[0.5, -1.0, 2.0], [3.0, 1.5, -0.5]])


@pytest.mark.parametrize("f", [
    np.max, np.min, np.amax, np.nanmax, np.nanmin, np.ptp,
    lambda x: np.max(x, axis=0), lambda x: np.min(x, axis=1, keepdims=True),
    lambda x: np.ptp(x, axis=1),
    lambda x: np.max(x, axis=1, initial=1.0),  # the initial value wins the first row
    lambda x: np.max(x, where=np.array([True, False, True]), initial=-5.0),
    lambda x: np.nanmax(np.where(x > 0, x, np.nan), axis=0),
    lambda x: np.maximum.reduce(x, axis=1),
], ids=["max", "min", "amax", "nanmax", "nanmin", "ptp", "max-axis", "min-keepdims",
        "ptp-axis", "max-initial", "max-where", "nanmax-axis", "maximum.reduce"])
def test_an_infinite_cotangent_reaches_only_the_extremum(f):
    # the elements an extremum does not attain get exactly 0, even from an inf or NaN
    # cotangent (np.where, not g * mask: 0 * inf would be NaN)
    with np.errstate(invalid="ignore"):
        assert check_unreached(f, _X) > 0


def test_max_of_nan_sends_the_gradient_to_the_nan():
    g = pb.grad(np.max, losscheck=False)(np.array([1.0, np.nan, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(pb.grad(np.nanmax)(np.array([1.0, np.nan, 2.0])), [0, 0, 1])


def test_std_of_a_constant_has_zero_gradient():
    np.testing.assert_array_equal(pb.grad(np.std)(np.ones(3)), np.zeros(3))
    np.testing.assert_array_equal(pb.grad(np.nanstd)(np.array([1.0, np.nan])), [0.0, 0.0])


def test_prod_with_zeros_is_exact():
    x = np.array([2.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(pb.grad(np.prod)(x), np.zeros(4))
    hessian = np.stack([pb.grad(lambda x, i=i: pb.grad(np.prod)(x)[i])(x) for i in range(4)])
    expected = np.zeros((4, 4))
    expected[1, 3] = expected[3, 1] = 6.0
    np.testing.assert_array_equal(hessian, expected)


def test_nan_forms_send_nothing_to_nans():
    x = np.array([[1.0, np.nan], [3.0, 4.0]])
    for f in (np.nansum, np.nanmean, np.nanprod, np.nanvar, np.nanstd, np.nanmax, np.nanmin):
        g = pb.grad(lambda x, f=f: np.sum(f(x, axis=0)))(x)
        assert g[0, 1] == 0 and np.all(np.isfinite(g)), f.__name__


def test_in_place_ufunc_at_is_refused():
    # np.add.at into a tracked array is a write (rules/in_place.py); into a plain one, not
    x = pb.param(np.ones(2))
    with pytest.raises(TypeError, match=r"np\.add\.at writes a tracked value into a plain"):
        np.add.at(np.zeros(3), [0, 0], x)
    with pytest.raises(TypeError, match=r"np\.multiply\.at.*in place"):
        np.multiply.at(x, [0], 2.0)


def test_out_is_refused():
    x = pb.param(np.ones(2))
    with pytest.raises(TypeError, match="out="):
        np.sum(x, 0, None, np.zeros(()))


@pytest.mark.skipif(not NUMPY2, reason="mean= is a NumPy 2 keyword")
@pytest.mark.parametrize("f", [np.var, np.std, np.nanvar, np.nanstd])
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_and_std_about_a_given_mean(f, ddof):
    # NumPy 2's mean=: the spread about that centre (a constant), not about the sample mean
    # (a test, not a spec row: Dask's var takes no mean=)
    x = np.array([[1.0, 2.0, 4.0], [0.5, -1.0, np.nan if f.__name__[:3] == "nan" else 3.0]])
    centre = np.array([[0.5], [-1.0]])

    def loss(x):
        return np.sum(f(x, axis=-1, ddof=ddof, mean=centre) ** 2)

    with np.errstate(invalid="ignore"):  # (the NaN entry of the nan-forms' data)
        want = central_differences(loss, x)
    np.testing.assert_allclose(pb.grad(loss)(x), np.nan_to_num(want), rtol=1e-6, atol=1e-9)
    pb.check_grads(lambda x: f(x[0], mean=0.25), x, order=2)


@pytest.mark.skipif(not NUMPY2, reason="mean= is a NumPy 2 keyword")
def test_var_of_complex_input_about_a_given_mean():
    z = np.array([0.5 + 0.5j, -1.0 + 0.2j, 2.0 - 0.3j])
    pb.check_grads(lambda z: np.var(z, mean=0.5 - 1j), z, order=2)
    pb.check_grads(lambda z: np.std(z, keepdims=True, mean=np.array([0.25j])), z, order=2)

