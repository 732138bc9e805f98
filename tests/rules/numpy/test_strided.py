import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import pullback as pb

X = np.arange(6.0) * 0.7 - 1.0


def _windows(x):  # overlapping windows of three: each element read up to three times
    s = x.strides[0]
    return np.sum(as_strided(x, shape=(len(x) - 2, 3), strides=(s, s)) ** 2
                  * np.arange(3 * (len(x) - 2)).reshape(-1, 3))


def _of_a_view(x):  # strides from a view's, reading every other column of x[1:, 1:]
    y = np.reshape(x, (2, 3))[:, 1:]
    return np.sum(np.sin(as_strided(y, shape=(2, 1), strides=(y.strides[0], 16))))


def _written_through(x):  # a write into the view reaches the array, as NumPy's
    y = x * 1.0
    v = as_strided(y, shape=(3,), strides=(2 * y.itemsize,))
    v[1] = 5.0 * x[0]
    v *= 2.0
    return np.sum(y * np.arange(6.0)) + np.sum(v ** 2)


@pytest.mark.parametrize("f", [_windows, _of_a_view, _written_through])
def test_as_strided_of_a_tracked_array_is_the_view_numpy_makes(f):
    value, _ = pb.value_and_grad(f)(X)
    np.testing.assert_allclose(value, f(X.copy()), rtol=1e-12)
    pb.check_grads(f, X, order=2)


def test_scipys_matrices_built_on_as_strided():
    linalg = pytest.importorskip("scipy.linalg")
    c, w = np.array([1.0, 2.0, -0.5, 0.3]), np.arange(16.0).reshape(4, 4)
    for f in (lambda c: np.sum(linalg.toeplitz(c) ** 2 * w),
              lambda c: np.sum(linalg.toeplitz(c, c[::-1] * 2) ** 3),
              lambda c: np.sum(linalg.circulant(c) @ c),
              lambda c: np.sum(linalg.hankel(c, c[::-1]) ** 2 * w)):
        np.testing.assert_allclose(pb.value_and_grad(f)(c)[0], f(c), rtol=1e-12)
        pb.check_grads(f, c, order=2)


def test_as_strided_refuses_what_has_no_derivative_and_keeps_writeable_false():
    with pytest.raises(ValueError, match=r"reads outside the 6 elements"):
        pb.grad(lambda x: np.sum(as_strided(x, shape=(7,), strides=(8,))))(X)
    with pytest.raises(ValueError, match=r"reads between its elements"):
        pb.grad(lambda x: np.sum(as_strided(x, shape=(2,), strides=(4,))))(X)

    def writes_into_a_read_only_view(x):
        y = x * 1.0
        as_strided(y, shape=(2,), strides=(8,), writeable=False)[0] = 1.0
        return np.sum(y)

    with pytest.raises(ValueError, match="read-only"):
        pb.grad(writes_into_a_read_only_view)(X)
