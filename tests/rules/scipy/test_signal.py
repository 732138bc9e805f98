import numpy as np
import pytest
import scipy.signal

import pullback as pb
from pullback.rules.scipy import signal as scipy_signal
from tests.conftest import central_differences

from ..spec import Spec

# in1 longer, shorter, as long; 2-d with in2 smaller and larger in every axis
SHAPES = [((), ()), ((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((4, 3), (2, 3)),
          ((2, 2), (3, 4))]
GRID = {"mode": ["full", "same", "valid"], "method": ["direct", "fft"]}


def _mixed(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


SPECS = [
    Spec(scipy_signal.convolve, SHAPES, kwargs=GRID, call=scipy.signal.convolve),
    Spec(scipy_signal.convolve, [((4,), (3,)), ((2, 3), (2, 2))], domain="complex",
         kwargs={"mode": ["full", "same", "valid"]}, call=scipy.signal.convolve,
         name="scipy.signal.convolve(complex)"),
    Spec(scipy_signal.correlate, SHAPES, kwargs=GRID, call=scipy.signal.correlate),
    Spec(scipy_signal.correlate, [((4,), (3,)), ((2, 3), (2, 2))], domain="complex",
         kwargs={"mode": ["full", "same", "valid"]}, call=scipy.signal.correlate,
         name="scipy.signal.correlate(complex)"),
    Spec(scipy_signal.correlate, [((3,), (5,)), ((3, 2), (2, 2))], domain=("real", _mixed),
         kwargs={"mode": ["same", "valid"], "method": ["auto"]},
         call=scipy.signal.correlate, name="scipy.signal.correlate(real, complex)"),
]

# an empty input (the modes SciPy takes it in, by the direct method: its fft method does
# not take it, and auto warns): every output entry is an empty sum, 0
EMPTY = [
    ({"mode": ["valid"]}, [((0, 3), (0, 3)), ((2, 0), (2, 0))]),
    ({"mode": ["same"]}, [((0,), (3,)), ((2, 0), (1, 2)), ((0, 0), (2, 2))]),
]
SPECS += [Spec(func, shapes, kwargs={**modes, "method": ["direct"]},
               call=getattr(scipy.signal, name), name=f"scipy.signal.{name}(empty)")
          for func, name in ((scipy_signal.convolve, "convolve"),
                             (scipy_signal.correlate, "correlate"))
          for modes, shapes in EMPTY]




def test_methods_give_the_same_derivative():
    rng = np.random.default_rng(1)
    a, b, u = rng.standard_normal(6), rng.standard_normal(4), rng.standard_normal(6)
    for func in (scipy.signal.convolve, scipy.signal.correlate):
        cts = [pb.vjp(lambda a, b, func=func, method=method: func(a, b, "same", method),
                      a, b)[1](u) for method in ("direct", "fft", "auto")]
        for ct in cts[1:]:
            np.testing.assert_allclose(ct[0], cts[0][0], atol=1e-12)
            np.testing.assert_allclose(ct[1], cts[0][1], atol=1e-12)


SPECS += [Spec(scipy_signal.convolve, [((5,), (3,))],
               call=lambda a, b: scipy.signal.convolve(a, in2=b), name="convolve(in2=tracked)")]


def test_tracked_keyword_argument():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(5), rng.standard_normal(3)
    got = pb.grad(lambda b: np.sum(scipy.signal.convolve(a, in2=b, mode="valid") ** 2))(b)
    want = pb.grad(lambda b: np.sum(scipy.signal.convolve(a, b, "valid") ** 2))(b)
    np.testing.assert_allclose(got, want)


def _stable(rng, shape):
    """Denominators with a[0] away from 0 and the poles inside the unit circle."""
    a = rng.uniform(-0.3, 0.3, shape)
    a[..., 0] = rng.uniform(1.0, 1.5)
    return a


LFILTER = [
    Spec(scipy_signal.lfilter, [((3,), (3,), (6,)), ((2,), (1,), (4, 5)), ((4,), (2,), (3,)),
                                ((1,), (3,), (2, 4))],
         domain=("real", _stable, "real"), kwargs={"axis": [-1, 0]},
         call=scipy.signal.lfilter),
    Spec(scipy_signal.lfilter, [((3,), (2,), (5,))], domain=("complex", _stable, "complex"),
         call=scipy.signal.lfilter, name="scipy.signal.lfilter(complex)"),
]
SPECS += LFILTER


def test_lfilter_initial_conditions_have_no_rule():
    with pytest.raises(pb.NoRuleError, match="initial conditions"):
        pb.grad(lambda x: np.sum(scipy.signal.lfilter([1.0], [1.0, -0.5], x, zi=[0.0])[0]))(
            np.ones(3))


_KERNEL = [[1.0, -2.0], [0.5, 3.0]]  # a plain list, as SciPy takes a kernel


@pytest.mark.parametrize("f", [
    lambda x: np.sum(scipy.signal.correlate2d(np.outer(x, x), _KERNEL) ** 2),
    lambda x: np.sum(scipy.signal.correlate2d(np.outer(x, x), _KERNEL, "same", "wrap") ** 2),
], ids=["correlate2d", "correlate2d-wrap"])
def test_a_list_operand_is_read_as_an_array(f):
    x = np.array([0.5, -1.5, 2.0])
    np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-6)
