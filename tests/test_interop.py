"""Other array libraries and libraries of units, unchanged while pullback differentiates:
each result (its values, its type, its units) computed during a differentiation (a live
``pb.param``: NumPy's stand-ins in place) equals the one computed with NumPy's own
functions. These libraries are the ``interop`` extra; each test skips without its
library."""

import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pullback as pb


def _during_and_outside(compute):
    """``compute()`` during a differentiation and outside one."""
    keep = pb.param(np.zeros(1))
    try:
        during = compute()
    finally:
        del keep
        gc.collect()
    return during, compute()


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    unit_a, unit_b = getattr(a, "unit", getattr(a, "units", None)), getattr(
        b, "unit", getattr(b, "units", None))
    assert str(unit_a) == str(unit_b)
    values = [getattr(v, "value", getattr(v, "magnitude", v)) for v in (a, b)]
    np.testing.assert_array_equal(np.asarray(values[0]), np.asarray(values[1]))


def test_astropy_quantities_keep_their_units():
    u = pytest.importorskip("astropy.units")

    def compute():
        q = np.array([1.0, 2.0, 3.0]) * u.m
        return (np.dot(q, q), np.linalg.norm(q), np.where(q > 1.5 * u.m, q, 0 * u.m),
                np.interp(2.5 * u.s, [1.0, 2.0, 3.0] * u.s, q), np.fft.fft(q),
                np.concatenate([q, q]), np.mean(q), np.stack([q, q]))

    during, outside = _during_and_outside(compute)
    _same(during, outside)
    assert str(during[0].unit) == "m2"


def test_unyt_arrays_keep_their_units():
    unyt = pytest.importorskip("unyt")

    def compute():
        a = unyt.unyt_array([1.0, 2.0, 3.0], "m")
        return np.concatenate([a, a]), np.dot(a, a), np.linalg.norm(a), np.sum(a)

    during, outside = _during_and_outside(compute)
    _same(during, outside)
    assert str(during[0].units) == "m" and str(during[1].units) == "m**2"


def test_pint_quantities_keep_their_units():
    pint = pytest.importorskip("pint")
    ureg = pint.UnitRegistry()

    def compute():
        q = ureg.Quantity(np.array([1.0, 2.0, 3.0]), "m")
        return (np.dot(q, q), np.concatenate([q, q]), np.linalg.norm(q), np.mean(q),
                np.stack([q, q]))

    during, outside = _during_and_outside(compute)
    _same(during, outside)
    assert str(during[0].units) == "meter ** 2"


def test_pandas_gives_its_own_results():
    pd = pytest.importorskip("pandas")

    def compute():
        df = pd.DataFrame({"k": [1, 2, 1, 2, 3], "v": [0.5, 1.5, 2.5, 3.5, 4.5]})
        grouped = df.groupby("k")["v"].describe()
        return (grouped.to_numpy(), np.asarray(df["v"]), np.sum(df["v"]),
                np.concatenate([df["v"].to_numpy(), df["v"].to_numpy()]),
                type(np.sqrt(df["v"])), np.mean(df["v"]))

    during, outside = _during_and_outside(compute)
    _same(during, outside)


def test_xarray_gives_its_own_results():
    xr = pytest.importorskip("xarray")

    def compute():
        da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("x", "y"))
        both = xr.concat([da, da], dim="x")
        return (type(np.sin(da)), np.sin(da).values, da.mean("x").values,
                np.asarray(both), float(np.sum(da)))

    during, outside = _during_and_outside(compute)
    _same(during, outside)


def test_a_gaussian_process_imported_before_pullback_differentiates():
    pytest.importorskip("sklearn")
    # scikit-learn binds scipy.linalg's cholesky and cho_solve when it is imported
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, WhiteKernel
        import numpy as np
        import pullback as pb

        rng = np.random.default_rng(0)
        X = rng.uniform(0.0, 5.0, (20, 1))
        y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(20)
        gp = GaussianProcessRegressor(RBF(1.0) + WhiteKernel(0.1), optimizer=None).fit(X, y)
        pb.check_grads(gp.log_marginal_likelihood, np.log([0.8, 0.2]), order=1)
    """)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
