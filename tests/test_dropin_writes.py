"""Writes as NumPy does them: memory orders (what is a view and what a copy), views of 0-d
arrays, and an array written with itself; each program unchanged, its value against
NumPy's and its gradient against central differences of the same program on plain arrays.
"""

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

rng = np.random.default_rng(3)


def agrees(f, x):
    """``f``'s value and gradient at ``x`` are NumPy's and the finite differences'."""
    value, grad = pb.value_and_grad(f)(x.copy())
    np.testing.assert_allclose(value, f(x.copy()), rtol=1e-13, atol=1e-13)
    on_arrays = lambda x: f(np.array(x))  # noqa: E731 (a 0-d x + step is a NumPy scalar)
    np.testing.assert_allclose(grad, central_differences(on_arrays, x), rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------- memory orders

LAYOUTS = {  # each: a copy whose order decides whether the reshape after it is a view
    "x.copy()": lambda y: y.copy(),
    "x.copy('F')": lambda y: y.copy(order="F"),
    "x.copy('A')": lambda y: y.copy(order="A"),
    "x.copy('K')": lambda y: y.copy(order="K"),
    "np.copy": np.copy,
    "np.copy('C')": lambda y: np.copy(y, order="C"),
    "astype": lambda y: y.astype(np.float64),
    "astype('C')": lambda y: y.astype(np.float64, order="C"),
    "astype('F')": lambda y: y.astype(np.float64, order="F"),
    "astype('A')": lambda y: y.astype(np.float64, order="A"),
    "astype(copy=False)": lambda y: y.astype(np.float64, copy=False),
    "np.array": lambda y: np.array(y),  # (looked up when called: np.array's stand-in)
    "np.array('C')": lambda y: np.array(y, order="C"),
    "np.array('F')": lambda y: np.array(y, order="F"),
    "np.array(copy=True, 'A')": lambda y: np.array(y, copy=True, order="A"),
    "np.asarray": lambda y: np.asarray(y),
    "np.ascontiguousarray": lambda y: np.ascontiguousarray(y),
    "np.asfortranarray": lambda y: np.asfortranarray(y),
    "zeros_like + y": lambda y: np.zeros_like(y) + y,
    "full_like('C') + y": lambda y: np.full_like(y, 1.0, order="C") + y,
}
FLAT = {  # each: a flat view where the layout allows one, else a copy (or other order)
    "reshape(6)": lambda y: y.reshape(6),
    "reshape(-1, 'F')": lambda y: y.reshape(-1, order="F"),
    "reshape(-1, 'A')": lambda y: y.reshape(-1, order="A"),
    "ravel()": lambda y: y.ravel(),
    "ravel('A')": lambda y: y.ravel(order="A"),
    "ravel('K')": lambda y: y.ravel(order="K"),
    "flatten('K')": lambda y: y.flatten(order="K"),
}


@pytest.mark.parametrize("flat", FLAT, ids=list(FLAT))
@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_copies_keep_numpys_memory_order(layout, flat):
    def f(x):
        y = LAYOUTS[layout](x.reshape(2, 3).T)   # a Fortran-ordered view first
        v = FLAT[flat](y)
        v[1] = 100.0 * x[0]                      # lands in y where v is a view of it
        return np.sum(y * np.arange(1.0, 7.0).reshape(3, 2)) + np.sum(v * v)

    agrees(f, np.arange(6.0) + 0.5)


def test_the_issues_transposed_copy():
    def f(x):
        y = x.reshape(2, 3).T.copy()
        y.reshape(6)[1] = 100.0                  # NumPy: a view, the write lands in y
        return np.sum(y)

    assert pb.value_and_grad(f)(np.arange(6.0))[0] == 112.0
    agrees(f, np.arange(6.0))


def test_writes_into_stacked_fortran_ordered_arrays():
    def f(x):
        a = x.reshape(2, 3).T.copy().T.T         # Fortran order, (3, 2)
        s = np.stack([a, np.sin(a)])             # NumPy's layout: neither C nor F
        s *= s[::-1]
        s[0, 1:] = a[:2]
        return np.sum(s * s) + np.sum(a)

    agrees(f, rng.standard_normal(6))


# ---------------------------------------------------------------------------- 0-d arrays

ZERO_D = {
    "np.full, y[None][0] = 5": lambda x: _full_write(x),
    "copy, y.reshape(-1)[0] += 1": lambda x: _reshaped_write(x),
    "y += y, then y[None][0]": lambda x: _doubled(x),
    "np.full_like, y[...] = ...": lambda x: _full_like(x),
}


def _full_write(x):
    y = np.full((), x)
    y[None][0] = 5.0
    return y * 1.0


def _reshaped_write(x):
    y = x.copy()
    y.reshape(-1)[0] += np.sin(x)
    return y * x


def _doubled(x):
    y = x.copy()
    y += y                                       # still a 0-d array, as NumPy's
    v = y[None]
    v[0] *= x
    return y + np.sum(v)


def _full_like(x):
    y = np.full_like(x, 2.0)
    z = np.full((), x * 3.0)
    y[...] = z * x
    z[None, None][0, 0] = 1.0
    return y + z


@pytest.mark.parametrize("program", ZERO_D, ids=list(ZERO_D))
def test_writes_through_views_of_0d_arrays(program):
    agrees(ZERO_D[program], np.array(0.3))


def test_the_issues_0d_write_gives_numpys_value():
    assert pb.value_and_grad(_full_write)(np.array(0.3)) == (5.0, 0.0)


# ---------------------------------------------------------------------------- self-writes

SELF = {
    "y[::-1] = y": "y[::-1] = y",
    "y[...] = y": "y[...] = y",
    "y[:] = y": "y[:] = y",
    "np.copyto(y, y)": "np.copyto(y, y)",
    "y[[3, 2, 1, 0]] = y": "y[[3, 2, 1, 0]] = y",
    "z = y[::-1]; z[:] = y": "z = y[::-1]; z[:] = y",
    "y[1:] = y[:-1]": "y[1:] = y[:-1]",
    "y[::-1][:] = y": "y[::-1][:] = y",
    "y += y": "y += y",
    "y.T[...] = y": "y.T[...] = y",
}


@pytest.mark.parametrize("line", SELF, ids=list(SELF))
def test_an_array_written_with_itself(line):
    if line == "y[[3, 2, 1, 0]] = y" and np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("NumPy 1.26 writes an integer-list index element by element, reading "
                    "what it overwrote; pullback gives NumPy 2's result, y read first")
    namespace = {"np": np}
    exec(f"def f(x):\n    y = np.sin(x)\n    {SELF[line]}\n"
         "    return np.sum(y * np.arange(1.0, 5.0)) + np.sum(y * y)", namespace)
    agrees(namespace["f"], rng.standard_normal(4))


def test_an_array_built_from_a_list_is_c_ordered():
    def f(x):
        a = x.reshape(2, 3).T
        s = np.array([a, a * 2.0])
        s.reshape(-1)[1] = 100.0 * x[0]          # NumPy: a view of the C-ordered s
        return np.sum(s)

    agrees(f, np.arange(6.0) + 0.5)
