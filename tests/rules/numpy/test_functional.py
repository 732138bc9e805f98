import numpy as np
import pytest

import pullback as pb

from ..spec import UNARY, Spec


def _piecewise(x):
    return np.piecewise(x, [x < -0.5, x > 0.5], [np.sin, lambda v: v ** 2, 0.5])


def _cubic(v, a, b=1.0):
    return a * v ** 3 + b


def _scaled_exp(v, a, b=1.0):
    return a * np.exp(v)


# Random inputs lie off the boundaries between pieces (and unwrap's jumps), where each
# function is smooth: the order-2 checks hold.
SPECS = [
    Spec(np.piecewise, UNARY, call=_piecewise, name="np.piecewise(functions, a constant)"),
    Spec(np.piecewise, UNARY, name="np.piecewise(the default function)",
         call=lambda x: np.piecewise(x, [x < -0.5, x > 0.5], [np.sin, np.exp, np.tanh])),
    Spec(np.piecewise, [(3,)], call=lambda x: np.piecewise(x, x > 0, [np.sin, np.cos]),
         name="np.piecewise(one condition)"),
    Spec(np.piecewise, [(3,), (2, 3)], name="np.piecewise(args, kw)",
         call=lambda x: np.piecewise(x, [x < 0], [_cubic, _scaled_exp], 2.0, b=3.0)),
    Spec(np.piecewise, [((3,), ()), ((2, 3), ())], name="np.piecewise(a tracked argument)",
         call=lambda x, t: np.piecewise(x, [x < 0], [lambda v, t: t * v,
                                                     lambda v, t: np.cos(t) * v ** 2], t)),
    Spec(np.piecewise, [((3,), ()), ((2, 3), ())], name="np.piecewise(a tracked constant)",
         call=lambda x, t: np.piecewise(x, [x < 0, x > 1], [np.sin, t ** 2])),
    Spec(np.apply_along_axis, [(3,), (2, 3), (2, 3, 4)], kwargs={"axis": [0, -1]},
         call=lambda x, axis: np.apply_along_axis(lambda v: np.sum(v ** 2), axis, x),
         name="np.apply_along_axis(scalar results)"),
    Spec(np.apply_along_axis, [(3,), (2, 3), (2, 3, 4)], kwargs={"axis": [0, -1]},
         call=lambda x, axis: np.apply_along_axis(lambda v: np.cumsum(v) * v, axis, x),
         name="np.apply_along_axis(vector results)"),
    Spec(np.apply_along_axis, [(2, 3), (2, 3, 4)], kwargs={"axis": [0, 1, -1]},
         call=lambda x, axis: np.apply_along_axis(lambda v: np.outer(v[:2], v), axis, x),
         name="np.apply_along_axis(matrix results)"),
    Spec(np.apply_along_axis, [(2, 3)], name="np.apply_along_axis(args, kwargs)",
         call=lambda x: np.apply_along_axis(
             lambda v, p, scale=1.0: scale * np.sum(v ** p), 1, x, 3, scale=2.0)),
    Spec(np.apply_over_axes, [(2, 3), (2, 3, 4)], kwargs={"axes": [0, -1, [0, 1]]},
         call=lambda x, axes: np.apply_over_axes(np.sum, x, axes)),
    Spec(np.apply_over_axes, [(2, 3, 4)], kwargs={"axes": [1, (2, 0)]},
         name="np.apply_over_axes(keeping the axes)",
         call=lambda x, axes: np.apply_over_axes(
             lambda a, axis: np.cumsum(np.sin(a), axis), x, axes)),
    # scaled so that the jumps between neighbours exceed pi: multiples of the period added
    Spec(np.unwrap, [(5,), (3, 5)],
         kwargs={"discont": [None, 1.0, 4.0], "axis": [-1, 0], "period": [2 * np.pi, 3.0]},
         call=lambda x, **kw: np.unwrap(4.0 * x, **kw)),
    Spec(np.unwrap, [((5,), ())], name="np.unwrap(a tracked discont)",
         call=lambda x, d: np.unwrap(4.0 * x, 2.0 + 0.1 * np.tanh(d))),
]


def test_piecewise_functions_get_the_tracked_selected_values():
    seen = []

    def square(v):
        seen.append(type(v))
        return v ** 2

    x = np.array([-1.0, 2.0, 0.5])
    g = pb.grad(lambda x: np.sum(np.piecewise(x, [x > 0], [square, lambda v: 3.0 * v])))(x)
    np.testing.assert_array_equal(g, [3.0, 4.0, 1.0])
    assert seen and all(issubclass(t, pb.Tracked) for t in seen)


@pytest.mark.parametrize("call", [
    # a condition on the leading axis selects rows; NumPy reads a 2-d condlist as a list of
    # such row conditions; a 0-d condition selects everything
    lambda x: np.piecewise(x, [np.array([True, False, True])], [lambda v: v ** 2, np.sin]),
    lambda x: np.piecewise(x, x > 0, [np.sin, np.cos, np.tanh, np.exp]),
    lambda x: np.piecewise(x, [np.array([True, False, True])], [np.arange(3.0), np.sin]),
    lambda x: np.piecewise(x, [np.array(True)], [lambda v: v * 2.0]),
], ids=["rows", "2-d condlist", "a row constant", "0-d condition"])
def test_piecewise_conditions_of_leading_axes(call):
    x = np.random.default_rng(3).standard_normal((3, 3))
    out, _ = pb.vjp(call, x)
    np.testing.assert_array_equal(out, call(x))
    pb.check_grads(call, x, order=2)


def test_piecewise_with_too_many_functions_raises_numpy_s_error():
    x = pb.param(np.ones(3))
    with pytest.raises(ValueError, match="with 1 condition"):
        np.piecewise(x, [x > 0], [np.sin, np.cos, np.tan])


def test_piecewise_with_only_a_tracked_argument_raises():
    # a plain x does not reach pullback (NumPy dispatches on x and condlist): NumPy's own
    # loop then refuses to write a tracked value into its plain buffer, not silently
    x = np.ones(3)
    with pytest.raises(TypeError, match="tracked value"):
        pb.grad(lambda t: np.sum(np.piecewise(x, [x > 0], [lambda v, t: t * v, 0.0], t)))(2.0)


def test_apply_along_axis_calls_func1d_on_tracked_slices():
    seen = []

    def norm(v):
        seen.append((type(v), v.shape))
        return np.sqrt(np.sum(v ** 2))

    x = np.arange(1.0, 7.0).reshape(2, 3)
    pb.check_grads(lambda x: np.apply_along_axis(norm, 0, x), x, order=2)
    assert seen and all(issubclass(t, pb.Tracked) and s == (2,) for t, s in seen[:3])


def test_apply_along_axis_broadcasts_and_casts_later_results_as_numpy():
    # NumPy writes each later result into a buffer shaped and typed as the first
    def f(x):
        return np.apply_along_axis(lambda v: v if v[0] > 0 else np.sum(v), 1, x)

    x = np.array([[1.0, 2.0, 3.0], [-1.0, 2.0, 0.5]])
    out, _ = pb.vjp(f, x)
    np.testing.assert_array_equal(out, f(x))
    pb.check_grads(f, x, order=2)


def test_apply_along_axis_with_an_empty_axis_raises_numpy_s_error():
    with pytest.raises(ValueError, match="iteration dimensions are 0"):
        np.apply_along_axis(np.sum, 1, pb.param(np.ones((0, 3))))


def test_unwrap_derivative_is_the_identity():
    # the added multiples of the period are piecewise constant in p
    x = np.array([0.0, 3.5, 7.0, 0.5, -3.0])
    assert not np.array_equal(np.unwrap(x), x)
    w = np.arange(1.0, 6.0)
    np.testing.assert_array_equal(pb.grad(lambda x: np.sum(np.unwrap(x) * w))(x), w)
    g = pb.grad(lambda d: np.sum(np.unwrap(x, d)))(2.0)  # discont only picks the jumps
    assert g == 0.0


def test_unwrap_with_a_tracked_period_raises():
    x = np.array([0.0, 3.5, 7.0])
    with pytest.raises(TypeError, match="'period'"):
        pb.grad(lambda p: np.sum(np.unwrap(x * p, period=p)))(2 * np.pi)
