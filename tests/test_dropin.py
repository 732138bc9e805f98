"""NumPy as people write it, differentiated unchanged: arrays built with np.array and its
kin from tracked parts, writes into arrays (x[i] = v, x += v, out=), lists of tracked
values given to NumPy's functions, and size-1 outputs. Every function here is plain NumPy
code (no pb. call inside), checked against finite differences of itself on plain arrays."""

import math

import numpy as np
import pytest
import scipy.special

import pullback as pb
from tests.conftest import central_differences, pullback_cycles

from .rules.numpy.test_indexing import INDICES, X

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
A = np.array([0.3, -0.5, 0.9])
M = np.arange(1.0, 7.0).reshape(2, 3) / 7.0


# ---------------------------------------------------------------------------- construction

@pytest.mark.parametrize("build", [
    lambda x: np.array(x),
    lambda x: np.asarray(x),
    lambda x: np.asanyarray(x),
    lambda x: np.ascontiguousarray(x.T),
    lambda x: np.array([x[0], x[1] * x[2], 1.0]),
    lambda x: np.array([[x[0], 2.0], [x[1], x[2] ** 2]]),
    lambda x: np.asarray([x, np.ones(3), [1.0, x[0], 2.0]]),
    lambda x: np.array((x[0], x[1]), dtype=np.float64),
    lambda x: np.array(x, ndmin=3),
    lambda x: np.array(x, order="F", copy=True),
    *([lambda x: np.asarray(x, dtype=np.float64, copy=False)] if NUMPY2 else []),  # NumPy 2's
    *([lambda x: np.array([x[0], 1.0], like=x)] if NUMPY2 else []),  # (see README)
    lambda x: np.r_[x[0], 1.0, x, [2.0, x[1]]],
    lambda x: np.c_[x, x ** 2],
    lambda x: np.hstack(np.reshape(x, (3, 1))),
    lambda x: np.vstack(x),
    lambda x: np.column_stack(np.reshape(x, (1, 3))),
    lambda x: np.full((2, 3), x),                      # a tracked fill value, broadcast
    lambda x: np.full(4, x[0]),
    lambda x: np.full(3, [x[0], 1.0, x[1]]),
    lambda x: np.full_like(M, x),                      # a plain template's shape and dtype
], ids=lambda f: "")
def test_arrays_built_from_tracked_parts(build):
    pb.check_grads(lambda x: np.sum(np.sin(build(x))), A, order=2)


def test_constructors_keep_numpys_semantics():
    def f(x):
        assert np.asarray(x) is x                      # no copy, as for an array
        assert np.array(x) is not x
        assert np.array(x, ndmin=2).shape == (1, 3)
        assert np.array([x[0], 1.0]).dtype == np.float64
        assert np.asarray(x, dtype=np.float32).dtype == np.float32
        if NUMPY2:  # copy=False means "never copy" from NumPy 2 on
            with pytest.raises(ValueError, match="avoid copy"):
                np.array([x[0], 1.0], copy=False)
        assert type(np.array(x, dtype=int)) is np.ndarray   # integers carry no gradient
        assert np.full(2, x[0], dtype=np.float32).dtype == np.float32
        assert type(np.full_like(np.ones(2, int), x[0])) is np.ndarray  # cast, as NumPy
        assert np.full(2, 3.0).flags.writeable and np.full_like(M, 1).dtype == M.dtype
        assert type(np.int64(x[2])) is np.int64
        return np.sum(x * np.int64(x[2] * 10 + 0.5))

    pb.check_grads(f, A)


def test_plain_calls_go_to_numpy():
    assert np.array([1, 2]).dtype == np.array([1, 2], dtype=None).dtype
    assert np.asarray([1.0]).flags.writeable and not np.array(1.0).shape
    with pytest.raises(ValueError):
        np.array([[1.0], [1.0, 2.0]])          # NumPy's own error for ragged lists
    assert pb.registered_rules() and np.sum.__wrapped__ is not None


def test_scipy_rosen_equals_its_hand_written_derivatives():
    optimize = pytest.importorskip("scipy.optimize")
    x = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
    np.testing.assert_allclose(pb.grad(optimize.rosen)(x), optimize.rosen_der(x), rtol=1e-12)
    np.testing.assert_allclose(pb.hessian(optimize.rosen)(x), optimize.rosen_hess(x),
                               rtol=1e-12, atol=1e-12)


def test_calls_that_cannot_be_intercepted_name_the_fix():
    with pytest.raises(TypeError, match=r"np.dot\(A, x\) or A @ x"):
        pb.grad(lambda x: np.sum(np.ones((2, 3)).dot(x)))(A)
    with pytest.raises(TypeError, match="math.exp.*np.exp"):
        pb.grad(lambda x: math.exp(x[0]))(A)

    def into_plain(x):
        a = np.zeros(3)
        a[:] = x
        return np.sum(a)

    with pytest.raises((TypeError, ValueError)) as info:
        pb.grad(into_plain)(A)
    chain = [info.value, info.value.__context__, info.value.__cause__]
    assert any("np.zeros_like(x)" in str(e) for e in chain if e is not None)


def _piecewise_scalar(t):
    # the scalar code np.vectorize exists for: a Python branch per element
    if t < 0.0:
        return t * t
    return np.sin(t) + t


@pytest.mark.parametrize("call", [
    lambda x: np.vectorize(_piecewise_scalar)(x),
    lambda x: np.vectorize(lambda a, b: a * b if a > b else a - b)(x, x[0]),  # broadcast
    lambda x: np.vectorize(lambda a, p: a ** p, excluded={1})(x, 3),
    lambda x: np.vectorize(lambda a, scale=1.0: a * scale)(x, scale=x[1]),  # a keyword
    lambda x: np.multiply(*np.vectorize(lambda a: (a * a, np.exp(a)))(x)),  # two outputs
    lambda x: np.vectorize(_piecewise_scalar, otypes=[float])(x),
    lambda x: np.vectorize(otypes=[float])(_piecewise_scalar)(x),           # a decorator
    lambda x: np.vectorize(_piecewise_scalar)(x[0, 1]) * x,                 # a 0-d value
    lambda x: np.vectorize(lambda t: 0.0 if t < 0.0 else t ** 3)(x),        # constant parts
    lambda x: np.vectorize(lambda r: np.sum(r * r) if r[0] > 0 else np.sum(r),
                           signature="(n)->()")(x),                          # rows
    lambda x: np.vectorize(lambda a, b: a @ b, signature="(m,n),(n)->(m)")(
        np.stack([x, x ** 2]), x[0]),                                        # a broadcast loop
    lambda x: (lambda top, flipped: top[:, None] * flipped)(*np.vectorize(
        lambda r: (np.max(r), r[::-1]), signature="(n)->(),(n)")(x.T)),        # two outputs
], ids=lambda f: "")
def test_vectorize_takes_tracked_values(call):
    x = np.array([[0.5, -1.5, 2.0], [-0.2, 1.1, 0.3]])
    out, _ = pb.vjp(call, x)
    np.testing.assert_array_equal(out, call(x))
    pb.check_grads(lambda x: np.sum(np.sin(call(x))), x, order=2)


def test_vectorize_keeps_numpys_semantics():
    x = np.array([0.5, 2.0, -1.0])
    first_int = np.vectorize(lambda t: 0 if t < 1.0 else t)  # NumPy: the first result's dtype
    seen = []
    pb.grad(lambda x: (seen.append(first_int(x)), np.sum(x))[1])(x)
    assert seen[0].dtype == first_int(x).dtype and type(seen[0]) is np.ndarray  # a constant
    assert isinstance(np.vectorize(abs), np.vectorize)
    assert np.vectorize(_piecewise_scalar, otypes=[float])(np.ones((0, 2))).shape == (0, 2)
    empty = pb.grad(lambda x: np.sum(np.vectorize(_piecewise_scalar, otypes=[float])(x[:0])))
    np.testing.assert_array_equal(empty(x), np.zeros(3))
    rows = np.vectorize(lambda r: r, signature="(n)->()")  # returns a row, not a number
    with pytest.raises(ValueError, match="output 0 of the function has 1 dimension"):
        pb.grad(lambda x: np.sum(rows(x)))(x)
    pairs = np.vectorize(lambda a, b: a @ b, signature="(n),(n)->()")
    with pytest.raises(ValueError, match="inconsistent size for core dimension 'n'"):
        pb.grad(lambda x: np.sum(pairs(x, x[:2])))(x)


# ---------------------------------------------------------------------------- writes

@pytest.mark.parametrize("label,index", INDICES, ids=[label for label, _ in INDICES])
def test_setitem_of_every_index_form(label, index):
    def f(x, v):
        y = x * 1.0
        y[index] = v * v
        return np.sum(np.sin(y) * x)

    v = np.random.default_rng(0).uniform(0.5, 1.5, np.empty(X)[index].shape)
    x = np.random.default_rng(1).uniform(-1.0, 1.0, X)
    pb.check_grads(f, x, v, order=2)


def test_setitem_broadcasts_and_takes_plain_values():
    def f(x):
        y = x * np.ones((2, 3))
        y[:, 1] = x[0] * x[2]                 # the example
        y[0] = 5.0
        y[y > 0.6] = 0.0
        y[..., ::2] = x[:2, None]             # broadcast along the last axis
        y[[1, 1], [0, 0]] = [x[0], x[1]]      # a repeated index: the last write wins
        return np.sum(y ** 3)

    pb.check_grads(f, A, order=2)


def test_in_place_operators():
    def f(x):
        y = x * 1.0
        alias = y                             # NumPy: every name for y sees the writes
        y += x
        y -= 1.0
        y *= x
        y /= 3.0
        y **= 2.0
        y[1:] += x[:-1]                       # __setitem__ of an in-place result
        m = np.outer(y, x)
        m @= np.eye(3) + 0.5
        assert alias is y
        return np.sum(m) + np.sum(alias)

    pb.check_grads(f, A, order=2)


def test_earlier_values_keep_what_they_saved():
    def f(x):
        y = np.sin(x)
        z = y * y                             # recorded before the write
        y[0] = 2.0 * x[1]
        w = y * y
        y += 1.0
        return np.sum(z) + np.sum(w * x) + np.sum(y)

    pb.check_grads(f, A, order=2)


@pytest.mark.parametrize("buffer", [
    np.zeros_like, np.ones_like, np.empty_like, lambda x: np.full_like(x, 2.0),
    lambda x: x.copy(), np.copy, lambda x: np.array(x),
], ids=["zeros_like", "ones_like", "empty_like", "full_like", "copy", "np.copy", "array"])
def test_buffers_filled_in_a_loop(buffer):
    def f(x):
        out = buffer(x)
        for i in range(len(x)):
            out[i] = np.sin(x[i]) * x[i - 1]
        return np.sum(out ** 2)

    pb.check_grads(f, A, order=2)


def test_buffer_rows_and_a_tracked_fill_value():
    def f(x):
        out = np.empty_like(x * M)
        for i in range(2):
            out[i] = x * (i + 1.0)
        return np.sum(out ** 2) + np.sum(np.full_like(x, x[0] ** 2))

    pb.check_grads(f, A, order=2)


def test_writes_through_views_change_the_base():
    def f(x):
        y = x * np.ones((2, 3))
        v = y[:, 1:]
        v[0] = x[1:] ** 2                     # NumPy: y changes too
        v *= 3.0
        v[1, 0] = 7.0
        total = np.sum(v)
        t = y.T
        t[0] = x[:2]
        total = total + np.sum(t)
        y.reshape(6)[::2] *= x[0]
        return np.sum(y ** 3) + total

    pb.check_grads(f, A, order=2)
    np.testing.assert_allclose(pb.value_and_grad(f)(A)[0], f(A.copy()))


def _written_inside_a_gradient(grad_of):
    """Three programs whose inner gradient (``grad_of``) writes into an outer array that
    outer views look into: NumPy's views read the write, whatever level records it."""
    def outer_view(x):
        a = x * 1.0
        v = a[:2]

        def inner(y):
            a[0] = y * 2.0
            return np.sum(a * a)

        g = grad_of(inner)(x[1])
        return np.sum(v * v) + g

    def through_the_view(x):
        a = x * 1.0
        v, t = a[1:], a.reshape(3, 1)

        def inner(y):
            v[0] = y ** 2
            return np.sum(v * y)

        g = grad_of(inner)(x[0])
        return np.sum(t ** 3) + np.sum(v * x[1:]) + g

    def view_taken_inside(x):
        a = x * 1.0

        def inner(y):
            w = a[1:]
            a[1] = y * x[2]
            return np.sum(w * w) * y

        return grad_of(inner)(x[0]) + np.sum(a ** 2)

    return outer_view, through_the_view, view_taken_inside


def _differences_of(inner):
    """``pb.grad`` of a scalar function, by central differences, leaving what ``inner``
    writes as its call at ``y`` leaves it (a plain buffer cannot take a tracked value)."""
    def grad_inner(y):
        h = 1e-5
        g = (inner(y + h) - inner(y - h)) / (2 * h)
        inner(y)
        return g

    return grad_inner


@pytest.mark.parametrize("k", range(3))
def test_a_write_inside_an_inner_gradient_reaches_the_outer_views(k):
    f, plain_f = _written_inside_a_gradient(pb.grad)[k], _written_inside_a_gradient(
        _differences_of)[k]
    value, g = pb.value_and_grad(f)(A.copy())
    assert value == pytest.approx(plain_f(A.copy()), rel=1e-8)
    np.testing.assert_allclose(g, central_differences(plain_f, A.copy(), eps=1e-4),
                               rtol=1e-5, atol=1e-6)


def test_views_taken_before_a_write_into_their_base_see_it():
    def f(x):
        y = x * 1.0
        row = y[1:]
        s = np.sum(row * row)                 # computed before the write: the old values
        y[1] = 5.0 * x[0]                     # NumPy: row changes too
        t = y.reshape(3, 1)
        y += x ** 2                           # and row and t change again
        return s + np.sum(row * 3.0 * x[1:]) + np.sum(t * t)

    assert pb.value_and_grad(f)(A)[0] == pytest.approx(f(A.copy()), rel=1e-12)
    pb.check_grads(f, A, order=2)

    def recurrence(x):
        out = np.zeros((4, 3)) * x[0]
        out[0] = x
        for i in range(1, 4):
            out[i] = np.tanh(out[i - 1] * 2.0)   # reads a row view of out, then writes out
        return np.sum(out ** 2)

    assert pb.value_and_grad(recurrence)(A)[0] == pytest.approx(recurrence(A.copy()))
    pb.check_grads(recurrence, A, order=2)


@pytest.mark.parametrize("write", [
    lambda y: (lambda q, p: p.__iadd__(q * q))(*np.split(y, 2)),  # a leapfrog's half step
    lambda y: np.array_split(y, 3)[1].__setitem__(0, 7.0 * y[0]),
    lambda y: (lambda a, b: b.__imul__(a))(*np.hsplit(y.reshape(2, 2), 2)),
    pytest.param(lambda y: (lambda a, b: b.__iadd__(a))(*np.unstack(y.reshape(2, 2))),
                 marks=pytest.mark.skipif(not hasattr(np, "unstack"), reason="NumPy 2's")),
    lambda y: y.real.__setitem__(0, 3.0 * y[1]),
    lambda y: np.real(y)[1:].__imul__(2.0),
    lambda y: y.astype(y.dtype, copy=False).__setitem__(0, y[3] ** 2),
    lambda y: np.atleast_1d(y).__setitem__(0, y[1] * 2.0),
    lambda y: np.atleast_2d(y.reshape(2, 2)).__setitem__((0, 0), y[2]),
    lambda y: y.conj().__setitem__(0, 0.5 * y[2]),
    lambda y: y.view().__setitem__(1, y[0] ** 3),
    lambda y: np.squeeze(y).__setitem__(2, y[1]),
    lambda y: np.einsum("ij->ji", y.reshape(2, 2)).__setitem__((0, 1), 5.0 * y[0]),
    lambda y: np.lib.stride_tricks.sliding_window_view(y, 2, writeable=True).__setitem__(
        (1, 1), y[0] * y[3]),
    lambda y: np.atleast_1d(y, y[:2])[1].__setitem__(0, y[3] ** 2),
    lambda y: np.broadcast_arrays(y, 1.0)[0].__setitem__(0, y[2] * 2.0),
], ids=["split", "array_split", "hsplit", "unstack", ".real", "np.real", "astype(copy=False)",
        "atleast_1d", "atleast_2d", "conj of a real array", "view()", "squeeze",
        "einsum transpose", "sliding_window_view(writeable=True)", "atleast_1d of two",
        "broadcast_arrays of one shape"])
def test_writes_into_what_numpy_returns_as_a_view_or_the_array_itself(write):
    # each of these is a view of y (or y itself) in NumPy: the write changes y, and the
    # value and the gradient used to miss it
    def f(x):
        y = x * 1.0
        write(y)
        return np.sum(y ** 2)

    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert pb.value_and_grad(f)(x)[0] == pytest.approx(f(x.copy()), rel=1e-12)
    pb.check_grads(f, x, order=2)


@pytest.mark.parametrize("view", [
    lambda y: np.lib.stride_tricks.sliding_window_view(y, 2),
    lambda y: np.einsum("i->i", y),
    lambda y: np.broadcast_arrays(y, np.ones(1))[0],
    lambda y: np.atleast_1d(y, y[1:])[0],
    lambda y: np.atleast_1d(y[1:], y)[1],
], ids=["sliding_window_view", "einsum", "broadcast_arrays of one shape", "atleast_1d first",
        "atleast_1d second"])
def test_views_numpy_returns_see_a_later_write_into_their_base(view):
    def f(x):
        y = x * 1.0
        v = view(y)
        y[0] = 10.0 * x[1]
        return np.sum(v ** 2 * 1.5)

    assert pb.value_and_grad(f)(A)[0] == pytest.approx(f(A.copy()), rel=1e-12)
    pb.check_grads(f, A, order=2)


def test_a_sliding_window_is_read_only_as_numpys():
    def f(x):
        y = x * 1.0
        np.lib.stride_tricks.sliding_window_view(y, 2)[0, 1] = 100.0
        return np.sum(y)

    with pytest.raises(ValueError, match="read-only"):
        f(A.copy())
    with pytest.raises(ValueError, match="pullback: assignment destination is read-only"):
        pb.grad(f)(A)


def test_an_array_given_twice_is_one_array_for_its_writes():
    # f(w, w) and a pytree holding w twice: a write through one name is seen by the other,
    # as in NumPy; the gradients of the two together are the derivative in w
    def f(a, b):
        a *= 2.0
        b[0] = a[1] * a[2]
        return np.sum(a * b)

    def tied(t):
        t["a"][1:] += 1.0
        return np.sum(t["a"] * t["b"] ** 2)

    x = np.array([1.0, 2.0, 3.0])
    once = lambda w: f(w, w)  # noqa: E731  (on plain arrays: one array, two names)
    value, (ga, gb) = pb.value_and_grad(f, argnums=(0, 1))(x, x)
    assert value == pytest.approx(once(x.copy()))
    pb.check_grads(once, x, order=2)
    np.testing.assert_allclose(ga + gb, pb.grad(once)(x))
    value, g = pb.value_and_grad(tied)({"a": x, "b": x})
    assert value == pytest.approx(tied({"a": (c := x.copy()), "b": c}))
    np.testing.assert_allclose(g["a"] + g["b"],
                               pb.grad(lambda w: tied({"a": w, "b": w}))(x))
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])  # the caller's array is left alone


def test_a_broadcast_view_reads_a_write_into_its_base_again():
    # each element of the base appears twice in the view: its cotangent adds up (the last
    # one used to win)
    def f(x):
        y = x * 1.0
        b = np.broadcast_to(y, (2, 2, 2))
        y[0, 0] = 10.0 * x[1, 1]
        return np.sum(b * b * x)

    x = A[:2].repeat(2).reshape(2, 2)
    assert pb.value_and_grad(f)(x)[0] == pytest.approx(f(x.copy()))
    pb.check_grads(f, x, order=2)


@pytest.mark.parametrize("write", [
    lambda z: z.real.__setitem__(slice(None), 2.0),
    lambda z: z.imag.__imul__(3.0),
], ids=["into .real", "into .imag"])
def test_writes_into_the_parts_of_a_complex_array_are_refused(write):
    # they used to fail on an index out of bounds, or read the base's bytes as the parts (a
    # write into z while z.real is alive is followed: test_views_of_a_complex_arrays_parts_...)
    def f(x):
        z = x * (1.0 + 0.5j)
        write(z)
        return np.sum(np.abs(z) ** 2)

    with pytest.raises(TypeError, match=r"real or imaginary part.*z = v \+ 1j \* z\.imag"):
        pb.grad(f)(np.array([1.0, 2.0, 3.0]))


def test_x_flat_and_np_ndenumerate_of_a_tracked_array():
    def f(x):
        total = 0.0
        for i, v in enumerate(x.flat):
            total = total + v * i
        for (row, _), v in np.ndenumerate(x):
            total = total + v * row
        y = x * 1.0
        y.flat[2] = 10.0 * x[1, 1]
        y.flat[3:5] = x.flat[:2]
        return total + np.sum(y ** 2) + np.sum(x.flat[::2])

    x = np.arange(1.0, 7.0).reshape(2, 3)
    assert pb.value_and_grad(f)(x)[0] == pytest.approx(f(x.copy()))
    pb.check_grads(f, x, order=2)


def test_what_scipy_passes_np_array_and_np_broadcast_arrays():
    # SciPy's xp.asarray passes copy=np._CopyMode.IF_NEEDED; scipy.stats broadcasts a view
    # of an array the guard holds read-only (NumPy's own call then failed to mark its views)
    def f(x):
        scale = np.asarray(1.5)
        y = np.array(x, copy=np._CopyMode.IF_NEEDED) / scale
        q, s = np.broadcast_arrays(x, np.atleast_1d(scale))
        a, b = np.broadcast_arrays(np.atleast_1d(scale), np.arange(2.0))
        return np.sum(y * q * s) + np.sum(np.array(x, copy=np._CopyMode.ALWAYS) * a * b)

    pb.check_grads(f, np.array([1.0, 2.0]), order=2)


@pytest.mark.filterwarnings("error")  # no warning where the ufunc does not run
def test_a_ufuncs_where_as_users_write_it():
    b = np.array([0.0, 2.0, 0.0, 4.0])

    def safe_divide(a):  # the left-out entries keep out's values, tracked ones too
        return np.sum(np.divide(a, b, out=np.zeros_like(a), where=b != 0) ** 2)

    def safe_log(p):
        filled = np.log(p, out=p * 0.5, where=p > 0.5)
        return np.sum(filled * p) + np.sum(np.sqrt(p - 0.3, out=np.ones_like(p),
                                                   where=p > 0.3))

    def divisor(d):  # a divisor of zero where it is left out: no NaN from 0 * inf
        return np.sum(np.divide(np.arange(4.0), d * (d > 1), out=np.zeros_like(d),
                                where=d > 1) ** 2)

    x = np.array([1.0, 2.0, 3.0, 4.0])
    for f, at in [(safe_divide, x), (safe_log, np.array([0.2, 2.0, 3.0, 0.4])),
                  (divisor, np.array([0.5, 2.0, 3.0, 0.2]))]:
        assert pb.value_and_grad(f)(at)[0] == pytest.approx(f(at.copy()))
        pb.check_grads(f, at, order=2)
    with pytest.raises(TypeError, match="writes into an existing plain array"):
        pb.grad(lambda a: np.sum(np.divide(a, b, out=np.zeros(4), where=b != 0)))(x)


def test_np_asfortranarray_and_np_require_of_tracked_values():
    def f(x):
        fortran = np.asfortranarray(x)
        assert getattr(fortran, "value", fortran).flags.f_contiguous
        assert fortran.shape == x.shape
        return (np.sum(fortran ** 2) + np.sum(np.require(x * 2.0, requirements="CW") ** 3)
                + np.sum(np.require(x, np.float64, ["F", "A"]) * x))

    pb.check_grads(f, np.arange(6.0).reshape(2, 3), order=2)
    assert np.shape(pb.grad(lambda x: np.sum(np.asfortranarray(x)))(np.array(2.0))) == ()


def test_out_given_a_tuple_of_tracked_buffers():
    # np.divmod(..., out=(q, r)) into two tracked buffers (it said they were plain)
    def f(x):
        q, r = np.zeros_like(x), np.zeros_like(x)
        np.divmod(x, 0.4, out=(q, r))
        total = np.sum(r ** 2) + np.sum(q)
        np.modf(x * 3.0, out=(q, r))
        return total + np.sum(r ** 2) + np.sum(q * x)

    x = np.array([1.1, 2.3])
    assert pb.value_and_grad(f)(x)[0] == pytest.approx(f(x.copy()))
    pb.check_grads(f, x, order=2)


def test_a_flattened_copy_is_a_copy():
    def f(x):
        y = x.reshape(2, 2) * 1.0
        z = y.flatten()
        z[0] = 100.0 * x[3]  # NumPy: y stays as it was
        y[1, 1] = 3.0  # and z too
        return np.sum(y) + np.sum(z ** 2)

    assert pb.value_and_grad(f)(A[:2].repeat(2))[0] == pytest.approx(f(A[:2].repeat(2)))
    pb.check_grads(f, A[:2].repeat(2), order=2)


def test_writes_into_inputs_and_nested_derivatives():
    def f(x):
        x[0] = x[1] * x[2]
        x += 1.0
        return np.sum(x ** 3)

    pb.check_grads(f, A, order=2)
    np.testing.assert_allclose(pb.hessian(f)(A), pb.jacobian(pb.grad(f))(A))
    np.testing.assert_allclose(pb.jacobian(lambda x: (x[0:1].__setitem__(0, 1.0), x)[1])(A),
                               np.diag([0.0, 1.0, 1.0]))  # x[0:1] is a view of x


def test_write_errors():
    with pytest.raises(ValueError, match="read-only"):
        pb.grad(lambda x: (np.broadcast_to(x, (2, 3)).__setitem__(0, 1.0), 0.0)[1])(A)
    w = pb.param(A.copy())
    with pytest.raises(TypeError, match="param.*no_grad"):
        w[0] = 1.0
    with pytest.raises(TypeError, match="param"):
        w += 1.0
    with pytest.raises(TypeError, match="tracked value"):
        pb.grad(lambda x: (x.__setitem__(x[0], 1.0), np.sum(x))[1])(A)


def test_a_param_changes_in_place_inside_no_grad():
    w = pb.param(np.array([1.0, 2.0]))
    np.sum(w ** 2).backward()
    with pb.no_grad():
        w -= 0.25 * w.grad
        w[0] = 3.0
    assert isinstance(w, pb.Param)
    np.testing.assert_array_equal(w.value, [3.0, 1.0])
    w.grad = np.zeros(2)
    np.sum(w ** 2).backward()
    np.testing.assert_array_equal(w.grad, [6.0, 2.0])


# ---------------------------------------------------------------------------- lists

@pytest.mark.parametrize("f", [
    lambda a: np.sum([1.0, a * a, 2.0]),
    lambda a: np.mean([np.sin(a), a ** 2, np.cos(a)]),
    lambda a: np.max([a, 2 * a]),
    lambda a: np.std([a, a ** 2, 1.0]),
    lambda a: np.var([[a, 1.0], [a ** 3, 2.0]], axis=0)[0],
    lambda a: np.linalg.norm([a, 3.0]),
    lambda a: np.prod((a, a + 1.0, 2.0)),
    lambda a: np.dot([a, 2.0, 1.0], [a, 1.0, np.exp(a)]),
    lambda a: np.sum(np.matmul([[a, 1.0], [2.0, a]], np.array([a, 1.0]))),
    lambda a: np.sum(np.concatenate([[a, 1.0], np.ones(2), [a ** 2]])),
    lambda a: np.sum(np.concatenate([np.ones(2) * a, [a ** 2, 1.0]]) ** 2),
    lambda a: np.sum(np.where([True, False], [a, 1.0], [2.0, a * a])),
], ids=lambda f: "")
def test_numpy_functions_take_lists_holding_tracked_values(f):
    pb.check_grads(f, 0.7, order=2)


def _jacobian_by_differences(f, x, h=1e-6):
    return np.stack([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)], -1)


@pytest.mark.parametrize("join", [
    lambda t: np.concatenate([[t[0]], np.exp(t[1:])]),
    lambda t: np.concatenate(([t[0], 1.0], t[1:])),
    lambda t: np.concatenate([[[t[0], t[1]]], t[None, 1:]], axis=None),
    lambda t: np.concatenate([[[t[0], t[1]]], t[None, 1:]], axis=0),
    lambda t: np.stack([[t[0], 1.0], t[1:]]),
    lambda t: np.stack([[t[0], 1.0], t[1:]], axis=1),
    lambda t: scipy.special.logsumexp([t[0], t[1] * t[2], 0.0]),
    lambda t: scipy.special.logsumexp([[t[0], 1.0], [t[1], t[2]]], axis=1, b=[2.0, 1.0]),
    lambda t: scipy.special.softmax([t[0], t[1], 0.0]),
    lambda t: scipy.special.log_softmax((t[0], t[1] ** 2, t[2])),
], ids=lambda f: "")
def test_lists_holding_tracked_values_read_as_one_array_in_jacobians_and_hessians(join):
    # a list entry's cotangent under the batch axes of a Jacobian and at a second nesting
    # level (an ordinal model's cutpoints: np.cumsum(np.concatenate([[t[0]], np.exp(t[1:])])))
    t = np.array([0.3, -0.5, 0.9])
    np.testing.assert_allclose(pb.jacobian(join)(t), _jacobian_by_differences(join, t),
                               rtol=1e-6, atol=1e-8)

    def f(t):
        return np.sum(np.cos(np.cumsum(join(t))))

    grad = _jacobian_by_differences(f, t, 1e-5)  # central differences, then again
    hessian = _jacobian_by_differences(lambda t: _jacobian_by_differences(f, t, 1e-5), t, 1e-4)
    np.testing.assert_allclose(pb.grad(f)(t), grad, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pb.hessian(f)(t), hessian, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", [
    lambda x: x * round(x[0]) + x * round(x[1], 1),    # piecewise constant: plain numbers
    lambda x: divmod(x, 0.7)[1] * divmod(x, 0.7)[0],    # the builtin divmod is np.divmod
    lambda x: divmod(3.0, x)[1] + divmod(x[0] + 0.3, x)[1],
], ids=["round", "divmod", "rdivmod"])
def test_python_builtins_on_tracked_values(f):
    # (values away from the jumps of round and of the quotient)
    pb.check_grads(lambda x: np.sum(f(x)), np.array([2.3, 1.7, 2.9]), order=2)
    assert type(round(pb.param(A)[0])) is int  # as round(np.float64(x))


def _sorted_in_place(x):
    y = x * 1.0
    y.sort()                                      # ndarray.sort, in place
    return y * np.arange(3.0)


def _partitioned_in_place(x):
    y = x * 2.0
    y.partition(1)
    return y[1:]


def _filled(x):
    y = np.empty_like(x)
    y.fill(x[0])
    return y * x


@pytest.mark.parametrize("f", [
    _sorted_in_place, _partitioned_in_place, _filled,
    lambda x: x.take([0, 0, 2]) ** 2,
    lambda x: x.compress([True, False, True]) ** 2,
    lambda x: x[np.sort(x).searchsorted(0.0)] * x,
    lambda x: x[x.argpartition(1)[:2]] ** 2,
], ids=["sort", "partition", "fill", "take", "compress", "searchsorted", "argpartition"])
def test_ndarray_methods_of_tracked_values(f):
    pb.check_grads(lambda x: np.sum(np.sin(f(x))), A, order=2)
    assert pb.param(A).nbytes == A.nbytes and pb.param(A).itemsize == A.itemsize


def test_a_type_error_inside_a_dispatched_call_is_the_callers_own():
    # a tracked argument is dispatched: a TypeError then comes from the call (here the
    # user's function), not from NumPy's conversion of a list, and is not retried
    def refuses(t):
        raise TypeError("the user's own error")

    with pytest.raises(TypeError, match="^the user's own error$"):
        pb.grad(lambda x: np.sum(np.piecewise(x, [x > 0], [refuses, 0.0])))(A)
    with pytest.raises(TypeError, match="^the user's own error$"):
        pb.grad(lambda x: np.sum(np.apply_along_axis(refuses, 0, x)))(A)


def test_a_mean_of_per_batch_losses():
    batches = [np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([3.0, 0.0])]

    def loss(w, b):
        return np.sum((w * b - 1.0) ** 2)

    pb.check_grads(lambda w: np.mean([loss(w, b) for b in batches]), A[:2], order=2)


def test_a_list_given_to_a_function_without_a_rule_says_so():
    @pb.primitive
    def doubled(points):
        return np.asarray(points) * 2.0

    with pytest.raises(pb.NoRuleError, match="no derivative rule for .*doubled"):
        pb.grad(lambda a: np.sum(doubled([a, 1.0])))(0.5)
    # a ufunc given only lists: NumPy converts them in C, with no hook
    with pytest.raises(TypeError, match=r"np.array\(\[x, 1.0\]\) first"):
        pb.grad(lambda a: np.sum(np.multiply([a, 1.0], 2.0)))(0.5)


# ---------------------------------------------------------------------------- out=

def test_out_into_tracked_arrays():
    def f(x):
        y = np.zeros_like(x)
        np.add(x, 1.0, out=y)                 # a ufunc
        np.arctan(y, y)                       # out given positionally
        s = np.zeros_like(x[0])
        np.sum(x ** 2, out=s)                 # a reduction
        w = np.zeros_like(x[:2])
        np.dot(M, x * y, out=w)               # np.dot
        return np.sum(y ** 2) + s + np.sum(w ** 2)

    pb.check_grads(f, A, order=2)


def test_out_into_a_plain_array_is_refused():
    with pytest.raises(TypeError, match="existing plain array.*a = a \\+ t"):
        pb.grad(lambda x: np.sum(np.add(x, 1.0, out=np.zeros(3))))(A)


# ---------------------------------------------------------------------------- size-1 outputs

def test_size_one_outputs_are_scalars():
    def f(x):
        return x[:1] ** 2 * x[1]              # shape (1,)

    pb.check_grads(lambda x: f(x)[0], A)
    np.testing.assert_allclose(pb.grad(f)(A), pb.grad(lambda x: f(x)[0])(A))
    w = pb.param(A.copy())
    np.reshape(np.sum(w ** 2), (1, 1)).backward()
    np.testing.assert_allclose(w.grad, 2 * A)
    with pytest.raises(pb.LossError):
        pb.grad(lambda x: x[:1] * np.inf)(A)
    with pytest.raises(TypeError, match="shape \\(2,\\)"):
        pb.grad(lambda x: x[:2])(A)


def test_a_gradient_through_writes_leaves_no_reference_cycles():
    def f(x):
        y = x * 1.0
        y[0] = x[1] ** 2
        y += 1.0
        return np.sum(y ** 2)

    for fn in (pb.grad(f), pb.hessian(f), pb.grad(lambda x: np.sum(np.tanh(x) ** 2))):
        assert pullback_cycles(fn, A) == []


def test_writes_in_the_tracker_face():
    w = pb.param(np.array([1.0, 2.0, 3.0]))
    h = w * 1.0
    h[0] = w[1] * w[2]
    h *= w
    np.sum(h).backward()   # w0 w1 w2 + w1^2 + w2^2
    np.testing.assert_allclose(w.grad, [6.0, 7.0, 8.0])


@pytest.mark.parametrize("view", [lambda w: w[1:], lambda w: w.T, lambda w: w.reshape(3, 1)],
                         ids=["w[1:]", "w.T", "reshape"])
def test_a_view_of_a_param_sees_a_write_into_the_param_inside_no_grad(view):
    # an optimizer's step written as w[1] = v inside no_grad, while a graph holds w: the
    # view taken before reads the new values, as NumPy's and PyTorch's views do
    def loss(w):
        return np.sum(np.sin(view(w)) * 2.0)

    w0 = np.array([1.0, 2.0, 3.0])
    w = pb.param(w0.copy())
    keep = np.sum(w * 1.0)  # a graph that holds w's array read-only
    v = view(w)
    with pb.no_grad():
        w[1] = 7.0
    out = np.sum(np.sin(v) * 2.0)
    out.backward()
    moved = np.array([1.0, 7.0, 3.0])
    assert out.value == pytest.approx(loss(moved))
    h = 1e-6
    expected = [(loss(moved + h * e) - loss(moved - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(w.grad, expected, rtol=1e-7, atol=1e-9)
    del keep


@pytest.mark.parametrize("write", [
    lambda h: np.copyto(h, 7.0),
    lambda h: np.put(h, [0], 7.0),
    lambda h: np.putmask(h, h > 1.0, 0.0),
    lambda h: np.place(h, h > 1.0, [0.0]),
    lambda h: np.put_along_axis(h, np.array([0]), 7.0, axis=0),
    lambda h: h.__imul__(3.0),
    lambda h: h.__setitem__(0, 7.0),
], ids=["copyto", "put", "putmask", "place", "put_along_axis", "*=", "h[0] ="])
def test_a_write_inside_no_grad_into_a_computed_value_is_refused(write):
    # np.exp's pullback saved h: the write would change the gradient of the loss computed
    # from h before it, or (h *= 3) leave h a constant without a word
    def f(w):
        h = np.exp(w)
        loss = np.sum(h * np.array([1.0, 2.0, 3.0]))
        with pb.no_grad():
            write(h)
        return loss

    with pytest.raises(TypeError, match="inside pb.no_grad.. .*cannot be recorded|inside "
                                        "pb.no_grad.. writes into a tracked value"):
        pb.grad(f)(A)


def test_a_users_pullback_that_writes_into_its_cotangent_changes_no_other():
    @pb.primitive
    def doubled(x):
        return 2.0 * x

    @pb.rrule(doubled)
    def doubled_rule(x):
        def doubled_pullback(g):
            g *= 2.0  # in place: the cotangent given is also b's, below
            return (g,)

        return doubled(x), doubled_pullback

    def f(a, b):
        return np.sum((doubled(a) + b) * np.array([5.0, -5.0, 2.0]))

    pb.check_grads(f, A, A[::-1].copy(), order=1)


def test_a_primitive_that_writes_into_its_argument_is_refused():
    # the softmax idiom x -= x.max() in a pb.primitive's body would change, under the graph,
    # the tracked value the primitive was given
    @pb.primitive
    def softmax(x):
        x -= np.max(x)
        e = np.exp(x)
        return e / np.sum(e)

    @pb.rrule(softmax)
    def softmax_rule(x):
        y = softmax(x)
        return y, lambda g: (y * (g - np.sum(g * y)),)

    with pytest.raises(TypeError, match="softmax_rule writes into one of its arguments.*"
                                        r"x = x - np.max\(x\)"):
        pb.grad(lambda x: np.sum(softmax(x * 1.0) * np.arange(3.0)))(A)


def test_nan_to_num_without_a_copy_writes_into_its_argument():
    def f(x):
        y = np.log(x)                        # NaN where x < 0
        v = y[1:]                            # a view: sees the replacement too
        np.nan_to_num(y, copy=False, nan=0.5)
        return np.sum(y * x) + np.sum(v ** 2)

    x = np.array([2.0, -1.0, 3.0])
    with np.errstate(invalid="ignore"):
        value, g = pb.value_and_grad(f)(x)
        assert value == pytest.approx(f(x.copy()))
        h = 1e-6
        numeric = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(g, numeric, rtol=1e-6)


# ---------------------------------------------------------------------------- list constants

_C = [1 + 1j, 2j, 3 - 0.5j]
_M = [[1 + 1j, 2j, 0.3], [3 - 0.5j, 1, 1j], [0.2j, 1, 1 + 2j]]


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.abs(x * _C) ** 2 * [1.0, 2.0, 3.0]),
    lambda x: np.sum(np.abs(tuple(_C) * x - 1.0) ** 2),
    lambda x: np.sum(np.abs(np.matmul(_M, x)) ** 2 * [1.0, 2.0, 3.0]),
    lambda x: np.sum(np.abs(np.einsum("ij,j->i", _M, x)) ** 2),
    lambda x: np.abs(np.inner(x, _C)) ** 2,
    lambda x: np.sum(np.abs(np.convolve(x, _C))),
    lambda x: np.sum(np.abs(np.add(x, _C) * np.conj(_C)) ** 2),
    lambda x: np.sum(np.real(x @ _M) * [[1.0], [2.0], [0.5]]),
])
def test_a_complex_constant_written_as_a_list_is_the_array_numpy_makes_of_it(f):
    # NumPy reads the list as an array: its complex entries are conjugated in the backward
    # pass as an array's are
    np.testing.assert_allclose(pb.grad(f)(A.copy()), central_differences(f, A.copy()),
                               rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------- casts NumPy refuses

def _add_1j(y, x):
    y += 1j * x[0]


def _times_complex(y, x):
    y *= 1 + 2j


def _add_out(y, x):
    np.add(y, 1j, out=y)


def _putmask_complex(y, x):
    np.putmask(y, [True, False], 2j * x[:2])


def _place_complex(y, x):
    np.place(y, [True, False], 2j * x[:2])


@pytest.mark.parametrize("write", [_add_1j, _times_complex, _add_out, _putmask_complex,
                                   _place_complex])
def test_a_write_numpy_refuses_for_its_cast_is_refused(write):
    def f(x):
        y = x[:2] * 2.0
        write(y, x)
        return np.sum(y * y)

    with pytest.raises(TypeError) as plain_error:
        f(A.copy())
    assert "cast" in str(plain_error.value).lower()
    with pytest.raises(TypeError, match="(?i)cast"):
        pb.grad(f)(A.copy())


@pytest.mark.parametrize("dtype, casting", [(np.float32, "safe"), (np.float32, "no"),
                                            (np.int64, "same_kind"), (np.float32, "equiv")])
def test_astype_follows_numpys_casting_rule(dtype, casting):
    def f(x):
        return np.sum(x.astype(dtype, casting=casting) * 2.0)

    with pytest.raises(TypeError) as plain_error:
        f(A.copy())
    assert "cast" in str(plain_error.value)
    with pytest.raises(TypeError, match=f"^pullback: .*casting='{casting}'"):
        pb.grad(f)(A.copy())
    g = lambda x: np.sum(np.real(x.astype(np.complex128, casting="safe") ** 2))  # noqa: E731
    np.testing.assert_allclose(pb.grad(g)(A.copy()), central_differences(g, A.copy()),
                               rtol=1e-5)


# ---------------------------------------------------------------------------- z.real and z.imag

def _rescaled_by_its_real_part(z):
    y = z.copy()
    for k in range(len(y)):
        s = np.sum(y.real ** 2)  # read, not kept: the graph holds the view
        y[k] = y[k] * (1.0 + s)
    return np.sum(np.abs(y) ** 2)


def _parts_kept_across_writes(z):
    y = z * 1.0
    im, re = y.imag, y.real[1:]
    a = np.sum(im * re[0])
    y[1] = y[0] * 2j  # NumPy: im and re read the write
    y += z ** 2
    return a + np.sum(im ** 2) + np.sum(re * im[1:]) + np.sum(np.abs(y))


@pytest.mark.parametrize("f", [_rescaled_by_its_real_part, _parts_kept_across_writes])
def test_views_of_a_complex_arrays_parts_read_a_write_into_it(f):
    z = np.array([0.3 + 0.5j, 0.7 - 0.2j, 1.1 + 0.1j])
    value, g = pb.value_and_grad(f)(z.copy())
    assert value == pytest.approx(f(z.copy()), rel=1e-12)
    np.testing.assert_allclose(g, central_differences(f, z.copy()), rtol=1e-6, atol=1e-8)


def _parts_set(z):
    y = np.zeros_like(z)
    y.real = np.real(z)  # NumPy's idiom: fill the parts of a complex buffer
    y.imag = 2.0 * np.imag(z) * np.real(z)
    return np.sum(np.abs(y) ** 2)


def _real_of_a_real_array_set(x):
    y = np.zeros_like(x)
    y.real = x ** 2  # a real array's real part is the array
    return np.sum(y * x)


def _flat_set(x):
    y = np.ones((2, 3))  * x[0]
    y.flat = x  # repeated over y's elements, as NumPy's
    return np.sum(y ** 2 * np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("f, x", [
    (_parts_set, np.array([0.3 + 0.5j, 0.7 - 0.2j, 1.1 + 0.1j])),
    (_real_of_a_real_array_set, A), (_flat_set, A)])
def test_setting_real_imag_and_flat_writes_as_numpy_does(f, x):
    value, g = pb.value_and_grad(f)(x.copy())
    assert value == pytest.approx(f(x.copy()), rel=1e-12)
    np.testing.assert_allclose(g, central_differences(f, x.copy()), rtol=1e-6, atol=1e-8)


def test_setting_the_imaginary_part_of_a_real_array_is_numpys_error():
    def f(x):
        y = x * 1.0
        y.imag = x
        return np.sum(y)

    with pytest.raises(TypeError):
        f(A.copy())
    with pytest.raises(TypeError, match=r"^pullback: y\.imag = v of a real array"):
        pb.grad(f)(A.copy())


def test_a_list_of_tracked_values_given_to_a_scipy_function_is_right_or_refused():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(0)
    a, q = rng.standard_normal((3, 3)) + 3 * np.eye(3), rng.standard_normal((3, 2))

    def f(x, a=a):
        return np.sum(scipy_linalg.solve_sylvester(a, [[x[0], x[1]], [x[2], x[3]]], q) ** 2)

    x = rng.standard_normal(4)
    np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-6)
    # a stack of a's broadcasts the list: its cotangent gains an axis, which pairing the
    # list's entries by the first axis would misread (it did, silently)
    stack = np.stack([a, a + np.eye(3)])
    with pytest.raises(ValueError, match=r"got a list holding tracked values as argument 1.*"
                                         r"shape \(2, 2, 2\).*np\.array\(the list\)"):
        pb.grad(lambda x: f(x, stack))(x)


def test_clip_and_round_methods_take_numpys_positional_out():
    def f(x):
        clipped, rounded = np.zeros_like(x), np.zeros_like(x)
        x.clip(0.0, 1.0, clipped)
        x.round(1, rounded)
        return np.sum(clipped * x) + np.sum(rounded * x)

    x = np.array([0.31, 1.52, -0.23])
    value, g = pb.value_and_grad(f)(x.copy())
    assert value == pytest.approx(f(x.copy()))
    np.testing.assert_allclose(g, central_differences(f, x.copy()), rtol=1e-6, atol=1e-8)
