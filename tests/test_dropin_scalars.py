"""NumPy's scalar idioms as people write them, differentiated unchanged: np.isscalar of a
tracked NumPy scalar answers as NumPy does for the plain value (so code branching on it,
NumPy's own np.poly1d among it, takes NumPy's branch), and np.arange takes a tracked start,
stop or step. Every function here is plain NumPy code, checked against finite differences
of itself on plain arrays."""

import importlib
import logging
import math
import pickle
import statistics

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

X = np.array([0.3, -0.8, 1.7])


def _matches_differences(f, x=X):
    np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------- np.isscalar

def _scaled_if_scalar(a):
    # library-style code: a scalar takes one branch, an array the other
    if np.isscalar(a):
        return 10.0 * a ** 2
    return np.sum(a ** 2)


@pytest.mark.parametrize("f", [
    lambda x: _scaled_if_scalar(x[0]),
    lambda x: _scaled_if_scalar(np.sum(x * x)),
    lambda x: _scaled_if_scalar(x[0] * x[1]) + _scaled_if_scalar(x[1:]),
    lambda x: np.sum((np.poly1d([1.0, -2.0, 0.5]) / x[1]).coeffs),  # poly1d's isscalar
    lambda x: np.sum((np.poly1d([1.0, -2.0, 0.5]) * x[2]).coeffs),
    lambda x: np.poly1d([1.0, -2.0, 0.5])(x[1] * 2.0),
], ids=["element", "sum", "scalar-and-array", "poly1d-div", "poly1d-mul", "poly1d-call"])
def test_branches_on_isscalar_take_numpys_branch(f):
    _matches_differences(f)


def test_isscalar_answers_as_for_the_plain_value():
    seen = []

    def f(x):
        for v in (x[0], np.sum(x), x[1:], x, x[:1]):
            seen.append(np.isscalar(v))
        return np.sum(x)

    pb.grad(f)(X)
    plain = [np.isscalar(v) for v in (X[0], np.sum(X), X[1:], X, X[:1])]
    assert seen == plain == [True, True, False, False, False]
    # and under nested derivatives (a value tracked at two levels)
    nested = []
    pb.hessian(lambda x: (nested.append(np.isscalar(x[0] * x[1])), x[0] * x[1])[1])(X)
    assert nested and all(nested)


def test_isscalar_is_replaced_where_numpy_imported_it_by_name():
    for name in ("numpy._core.numeric", "numpy.lib._polynomial_impl",
                 "numpy.lib._function_base_impl", "numpy.matrixlib.defmatrix"):
        try:
            module = importlib.import_module(name)
        except ImportError:  # NumPy 1.26's layout
            continue
        assert module.isscalar is np.isscalar, name
    # a plain call is NumPy's own answer, and the function pickles by its name
    assert np.isscalar(1.5) and np.isscalar("a") and not np.isscalar(np.ones(1))
    assert pickle.loads(pickle.dumps(np.isscalar)) is np.isscalar


# ---------------------------------------------------------------------------- np.arange

@pytest.mark.parametrize("f", [
    lambda p: np.sum(np.sin(np.arange(p[0], 2.0, 0.25))),
    lambda p: np.sum(np.sin(np.arange(0.0, 2.0, p[0]))),
    lambda p: np.sum(np.sin(np.arange(p[0], p[2], p[0] * 0.5))),
    lambda p: np.sum(np.exp(-np.arange(p[2]) * p[0])),  # a tracked stop sets the length only
    lambda p: np.sum(np.cos(np.arange(start=p[0], stop=1.05, step=0.1))),
    lambda p: np.sum(np.arange(p[1], -2.1, -0.3) ** 3),
    lambda p: np.sum(np.arange(p[2], dtype=int) * p[0]),  # an integer range: a constant
], ids=["start", "step", "start-stop-step", "stop", "keywords", "descending", "int"])
# (the points are away from those where the length changes, where the range jumps)
def test_arange_with_tracked_ends_or_step(f):
    _matches_differences(f)


@pytest.mark.parametrize("args,kwargs", [
    ((0.3, 2.0, 0.25), {}), ((0.0, 2.0, 0.17), {}), ((2.3,), {}), ((0.3, -2.0, -0.3), {}),
    ((0.3, 2.0), {"dtype": np.float32}), ((0.5, 4.0), {"dtype": int}), ((3.0, 1.0), {}),
])
def test_arange_keeps_numpys_length_dtype_and_values(args, kwargs):
    got = []

    def f(x):
        out = np.arange(*[a * x[0] for a in args], **kwargs)
        got.append(pb.stop_gradient(out))
        return np.sum(out * 1.0)

    pb.grad(f)(np.ones(1))
    want = np.arange(*args, **kwargs)
    assert got[0].dtype == want.dtype and got[0].shape == want.shape
    np.testing.assert_allclose(got[0], want, rtol=1e-6 if want.dtype == np.float32 else 1e-14)


def test_arange_errors_are_numpys():
    def f(x):
        return np.sum(np.arange(x[0], 2.0, 0.0))

    with np.errstate(divide="ignore"):  # NumPy's own error for the plain values
        with pytest.raises(Exception) as plain_error:
            f(X)
        with pytest.raises(type(plain_error.value), match=str(plain_error.value)):
            pb.grad(f)(X)
    with pytest.raises(ValueError):  # an array start, which NumPy refuses so
        pb.grad(lambda x: np.sum(np.arange(x, 2.0)))(X)


# ---------------------------------------------------------------------------- np.float64

@pytest.mark.parametrize("cast", [np.float64, np.float32])
def test_a_numpy_scalar_type_of_a_tracked_value_is_refused_not_dropped(cast):
    # np.float64(s) is a type's constructor, which pullback cannot intercept: it is refused
    # (not a silent constant); writing s itself, or np.asarray(s, dtype=...), works
    with pytest.raises(TypeError, match=r"^pullback: (?s:.*)np\.float64\(x\) or "
                       r"np\.float32\(x\) \(write x\.astype\(np\.float64\)"):
        pb.grad(lambda x: cast(np.sum(x ** 2)) * 2.0)(X)
    _matches_differences(lambda x: np.sum(x ** 2).astype(np.float64) * 2.0)
    _matches_differences(lambda x: np.asarray(np.sum(x ** 2), dtype=np.float64) * 2.0)


# ---------------------------------------------------------------------- Python's scalar idioms

_LOG = logging.getLogger("pullback.tests.formatting")


def _logged_loss(x, lines):
    # a training loop's progress line, %-formatted and through logging, as people write it
    loss = np.sum(x ** 2) * x[0]
    lines.append("loss %.4f, step %d" % (loss, x[2] * 0 + 3))
    message = "%8.3f"
    message %= loss
    lines.append(message)
    _LOG.warning("loss %.4f", loss)
    return loss


def test_percent_formatting_and_logging_format_the_plain_value(caplog):
    got, want = [], []
    with caplog.at_level(logging.WARNING, logger=_LOG.name):
        pb.grad(lambda x: _logged_loss(x, got))(X)
        _logged_loss(X, want)
    assert got == want and len(got) == 2
    assert caplog.messages[0] == caplog.messages[1] == want[0].split(",")[0]
    _matches_differences(lambda x: _logged_loss(x, []))
    # elsewhere float() and int() of a tracked value still drop nothing silently
    for convert in (float, int, lambda v: math.exp(v)):
        with pytest.raises(TypeError, match="^pullback: "):
            pb.grad(lambda x, c=convert: c(x[0]) + np.sum(x))(X)


def _branches(x):
    """Python's piecewise-constant scalar idioms on ``x``: plain numbers and bools."""
    return (math.trunc(x[2] * 2.0), math.floor(x[1] * 3.0), math.ceil(x[0]),
            (x[0] * 10.0).is_integer(), (x[0] * 3.0).is_integer(), 1.7 in x.reshape(3, 1),
            0.5 in x, -0.8 in x)


def test_piecewise_constant_scalar_idioms_answer_as_for_the_plain_values():
    seen = []

    def f(x):
        seen.append(_branches(x))
        a, b, c, d, e, g, h, k = seen[-1]
        return np.sum(x ** 2) * (a + b * c) + (np.sum(x ** 3) if d and g and k else 0.0)

    g = pb.grad(f)(X)
    assert seen[0] == _branches(X)
    assert all(type(v) in (int, bool) for v in seen[0])
    a, b, c = seen[0][:3]  # the gradient is the branch's, which is constant around X
    branch = lambda x: np.sum(x ** 2) * (a + b * c) + np.sum(x ** 3)  # noqa: E731
    np.testing.assert_allclose(g, central_differences(branch, X), rtol=1e-6, atol=1e-8)


def test_the_statistics_module_is_refused_with_numpys_functions_named():
    with pytest.raises(TypeError, match=r"^pullback: the statistics module .*np\.mean"):
        pb.grad(lambda x: statistics.mean(x) * 2.0)(X)


@pytest.mark.parametrize("method", ["tobytes", "byteswap", "setflags"])  # (resize: its own,
# test_dropin_refusals.py)
def test_an_ndarray_method_without_a_rule_says_what_to_write(method):
    with pytest.raises(AttributeError, match=f"^pullback: a tracked value has no method "
                                             f"{method} "):
        pb.grad(lambda x: getattr(x, method)() and np.sum(x))(X)
    with pytest.raises(AttributeError, match="'Tracked' object has no attribute 'nothing'"):
        pb.grad(lambda x: x.nothing)(X)


def test_a_finite_longdouble_loss_beyond_float64s_range_is_finite():
    if np.finfo(np.longdouble).max <= np.finfo(np.float64).max:
        pytest.skip("this platform's longdouble is float64")
    x = np.array([1e200, 2e200], dtype=np.longdouble)
    f = lambda x: np.sum(x * x) / 10  # noqa: E731  (5e400: not a float64)
    value, g = pb.value_and_grad(f)(x)
    assert value == f(x) and np.isfinite(value)
    h = x * np.finfo(np.longdouble).eps ** 0.5
    want = np.array([(f(x + e) - f(x - e)) / (2 * e.sum()) for e in np.diag(h)])
    np.testing.assert_allclose(g.astype(float), want.astype(float), rtol=1e-6)


def test_a_python_float_argument_is_differentiated_as_a_float64():
    # docs/conventions.md: boxed as np.float64, so float32 data meets a float64 value (NumPy
    # would read a plain Python float as weak); np.float32(s) keeps the computation float32
    data = np.array([0.25, 0.5], dtype=np.float32)
    seen = []

    def f(s):
        y = data * s
        seen.append(plain_dtype(y))
        return np.sum(y ** 2)

    g = pb.grad(f)(1.5)  # (NumPy 1.26's value-based casting keeps float32 data float32)
    assert seen[-1] == (data * np.float64(1.5)).dtype.type and type(g) is np.float64
    g32 = pb.grad(f)(np.float32(1.5))
    assert seen[-1] == np.float32 and type(g32) is np.float32
    # (f is quadratic in s: a wide step is exact, and float32's rounding stays small to it)
    want = central_differences(lambda s: f(s[0]), np.array([1.5]), eps=0.1)[0]
    assert g == pytest.approx(want, rel=1e-6 if data.dtype != (data * np.float64(1.5)).dtype
                              else 1e-5) and g32 == pytest.approx(want, rel=1e-5)


def plain_dtype(y):
    return y.dtype.type
