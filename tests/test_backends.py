"""The spec table on arrays of other libraries: every row's value and gradient with each
array argument on a CuPy-like device (``tests/_fakecupy.py``) and as a Dask array must
match NumPy's (the NumPy gradients are the ones the generic test checks against finite
differences), and the gradient keeps the argument's type. On the CuPy-like device the
backward pass reads nothing back to the host (no device sync)."""

import numpy as np
import pytest

import pullback as pb

from . import _fakecupy as fake
from .rules.test_registry import CASES

# Rows whose functions CuPy does not offer through NumPy's dispatch (the function does not
# dispatch, or CuPy has no function of that name), so a user could not call them on CuPy
# arrays either. Each entry: row label -> why.
_SCIPY = "a SciPy function that converts its input with np.asarray (CuPy's are in cupyx.scipy)"
NOT_ON_CUPY: dict[str, str] = {}


def _random_like(x, rng):
    x = np.asarray(x)
    r = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        r = r + 1j * rng.standard_normal(x.shape)
    return np.asarray(r.astype(x.dtype) if x.dtype.kind in "fc" else np.zeros(x.shape))


def _reference(case):
    """f, its NumPy arguments, its NumPy value, a random cotangent and NumPy's gradient."""
    spec = case.spec
    call, kw = spec.call or spec.func, case.kw

    def f(*xs):
        return call(*xs, **kw)

    f.__qualname__ = case.id
    args = case.args()
    out, vjp_fn = pb.vjp(f, *args)
    rng = np.random.default_rng(1)
    ct = pb.tree_map(lambda o: _random_like(o, rng), out)
    return f, args, out, ct, vjp_fn(ct)


def _compare(got, want, what, case, array_type):
    for g, w in zip(pb.tree_flatten(got)[0], pb.tree_flatten(want)[0]):
        if isinstance(w, np.ndarray) or np.ndim(w) or isinstance(w, (float, complex)):
            assert isinstance(g, array_type), (
                f"{case.id}: {what} is a {type(g).__name__}, not a {array_type.__name__}")
        np.testing.assert_allclose(_host(g), w, rtol=1e-9, atol=1e-12,
                                   err_msg=f"{case.id}: {what} differs from NumPy's")


def _host(x):
    if isinstance(x, fake.FakeArray):
        return fake.to_host(x)
    if hasattr(x, "compute"):
        return np.asarray(x.compute())
    return x


def _on_device_kwargs(f, case):
    """``f`` with the row's array keywords (``where=`` masks, ``q=``) on the device too."""
    spec = case.spec
    call, kw = spec.call or spec.func, fake.to_device(case.kw)

    def on_device(*xs):
        return call(*xs, **kw)

    on_device.__qualname__ = case.id
    return on_device


CUPY_CASES = [c for c in CASES if c.spec.label not in NOT_ON_CUPY]


@pytest.mark.parametrize("case", CUPY_CASES, ids=[c.id for c in CUPY_CASES])
def test_rule_on_a_cupy_like_device(case):
    f, args, want_out, ct, want_grads = _reference(case)
    out, vjp_fn = pb.vjp(_on_device_kwargs(f, case), *fake.to_device(args))
    _compare(out, want_out, "the value", case, fake.FakeArray)
    before = fake.syncs
    grads = vjp_fn(fake.to_device(ct))
    assert fake.syncs == before, f"{case.id}: the backward pass read the device " \
        f"{fake.syncs - before} time(s)"
    _compare(grads, want_grads, "the gradient", case, fake.FakeArray)
