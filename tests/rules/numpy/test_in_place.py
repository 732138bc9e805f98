import numpy as np

from ..spec import Spec

# each call writes into a tracked buffer made from the first argument, as user code does
# (y = x * 1.0; np.copyto(y, v)), and returns the buffer


def _every_other(shape):
    return np.arange(int(np.prod(shape))).reshape(shape) % 2 == 0


def _copyto(a, v, **kwargs):
    y = a * 1.0
    np.copyto(y, v, **kwargs)
    return y


def _put(a, ind, v, mode="raise"):
    y = a * 1.0
    np.put(y, ind, v, mode=mode)
    return y


def _put_method(a, ind, v):
    y = a * 1.0
    y.put(ind, v)
    return y


def _putmask(a, v):
    y = a * 1.0
    np.putmask(y, _every_other(np.shape(a)), v)
    return y


def _place(a, v):
    y = a * 1.0
    np.place(y, _every_other(np.shape(a)), v)
    return y


def _put_along_axis(a, v, axis):
    y = a * 1.0
    index = np.array([[0], [2]]) if axis == 1 else np.array([[1, 0, 1]])
    np.put_along_axis(y, index, v, axis=axis)
    return y


def _fill_diagonal(a, v, wrap=False):
    y = a * 1.0
    np.fill_diagonal(y, v, wrap=wrap)
    return y


SPECS = [
    Spec(np.copyto, [((3,), (3,)), ((2, 3), (3,)), ((2, 3), ())], call=_copyto),
    Spec(np.copyto, [((3,), (3,)), ((2, 3), (3,))], name="np.copyto(where=)",
         call=lambda a, v: _copyto(a, v, where=_every_other(np.shape(a)))),
    # repeated indices: the last write wins; v shorter than the indices is repeated
    Spec(np.put, [((6,), (2,))], call=lambda a, v: _put(a, [1, 4, 1], v)),
    Spec(np.put, [((2, 3), (3,))], name="np.put(2-D)", call=lambda a, v: _put(a, [1, 4, 1], v)),
    Spec(np.put, [((6,), (2,))], name="np.put(mode=)", kwargs={"mode": ["wrap", "clip"]},
         call=lambda a, v, mode: _put(a, [7, -8, 2], v, mode)),
    Spec(np.put, [((2, 3), (2,))], name="x.put", call=lambda a, v: _put_method(a, [0, 5], v)),
    Spec(np.putmask, [((6,), (6,)), ((6,), (4,)), ((6,), ())], call=_putmask),
    Spec(np.putmask, [((2, 3), (2,))], name="np.putmask(2-D)", call=_putmask),
    Spec(np.place, [((6,), (3,)), ((6,), (2,)), ((6,), (5,))], call=_place),
    Spec(np.place, [((2, 3), (2,))], name="np.place(2-D)", call=_place),
    Spec(np.put_along_axis, [((2, 3), (2, 1))], call=lambda a, v: _put_along_axis(a, v, 1)),
    Spec(np.put_along_axis, [((2, 3), (1, 3))], name="np.put_along_axis(axis=0)",
         call=lambda a, v: _put_along_axis(a, v, 0)),
    Spec(np.fill_diagonal, [((3, 3), ()), ((3, 3), (3,)), ((2, 3), (2,))],
         call=_fill_diagonal),
    Spec(np.fill_diagonal, [((5, 2), (2,))], name="np.fill_diagonal(wrap=True)",
         call=lambda a, v: _fill_diagonal(a, v, wrap=True)),
]


def test_a_tracked_value_written_into_a_plain_array_is_refused_naming_the_function():
    import pytest

    import pullback as pb

    named = r"np\.\w+ writes a tracked value into a plain array[\s\S]*np\.zeros_like"
    # (NumPy dispatches np.fill_diagonal on its array alone: the plain array's write refuses)
    plain_write = r"plain array's a\[i\] = x \(make the buffer tracked: a = np\.zeros_like"
    for write, message in ((lambda a, x: np.copyto(a, x), named),
                           (lambda a, x: np.put(a, [0], x), named),
                           (lambda a, x: np.putmask(a, a == 0, x), named),
                           (lambda a, x: np.place(a, a == 0, x), named),
                           (lambda a, x: np.fill_diagonal(a, x), plain_write)):
        def f(x, write=write):
            a = np.zeros((2, 2))
            write(a, x)
            return np.sum(a)

        with pytest.raises(TypeError, match=message):
            pb.grad(f)(np.array(1.0))


def test_numpys_checks_hold_for_a_tracked_target():
    import pytest

    import pullback as pb

    def casts_complex_into_float(x):
        y = x * 1.0
        np.copyto(y, x * 1j)
        return np.sum(y)

    with pytest.raises(TypeError, match="Cannot cast"):
        pb.grad(casts_complex_into_float)(np.ones(2))

    def out_of_bounds(x):
        y = x * 1.0
        np.put(y, [5], 1.0)
        return np.sum(y)

    with pytest.raises(IndexError):
        pb.grad(out_of_bounds)(np.ones(2))


def test_add_at_and_subtract_at_into_a_tracked_array_are_writes():
    import pullback as pb

    indices = np.array([0, 2, 2, 1])

    def assembled(x):  # repeated indices add up, as NumPy's
        a = np.zeros(4) * x[0]
        np.add.at(a, indices, x ** 2)
        np.subtract.at(a, [3, 3], x[:2])
        np.add.at(a, 1, x[3])
        return np.sum(a * np.arange(1.0, 5.0) ** 2)

    def assembled_2d(x):
        A = np.zeros((3, 2)) * x[0]
        np.add.at(A, ([0, 2, 0], [1, 0, 1]), x[:3])
        np.add.at(A, [1], x[:2])
        return np.sum(A ** 2)

    x = np.array([0.5, -1.0, 2.0, 0.3])
    for f in (assembled, assembled_2d):
        np.testing.assert_allclose(pb.value_and_grad(f)(x)[0], f(x.copy()), rtol=1e-12)
        pb.check_grads(f, x, order=2)
