"""Code that cannot be followed, refused in pullback's words: a number taken out of the
graph coming back into it, a loss that is not an array, pandas, the mutation guard's
read-only arrays, compiled code and validations meeting tracked values. Each message says
what happened, where, and the fix; code that can be followed gives the gradient of finite
differences of the same code on plain arrays."""

import re

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

# ---------------------------------------------------------------------------- x.item()


def _scipy_like_item(t):  # SciPy's optimizer wrapper: fx = np.asarray(fx).item()
    v = np.asarray(t * 3.0).item()
    return t[0] + v


def _tolist_back(t):
    return np.sum(t) * sum(t.tolist())


def _item_times_two_back(t):
    v = 2.0 * t[1].item() - 1.0                  # Python arithmetic keeps it marked
    return np.sum(t ** 2) + v


@pytest.mark.parametrize("losscheck", [True, False])
@pytest.mark.parametrize("f,how", [(_scipy_like_item, "x.item()"), (_tolist_back, "x.tolist()"),
                                   (_item_times_two_back, "x.item()")])
def test_a_number_taken_out_of_the_graph_is_refused_coming_back(f, how, losscheck):
    where = f"{re.escape(how)} at tests.test_dropin_refusals.{f.__name__} "
    with pytest.raises(ValueError, match=f"^pullback: {where}.*comes back into it at "
                       f"tests.test_dropin_refusals.{f.__name__}.*pb.stop_gradient"):
        pb.grad(f, losscheck=losscheck)(np.array([1.0, 2.0])[:2 if f is not _scipy_like_item
                                                              else 1])


def test_item_for_control_flow_and_logging_keeps_the_gradient():
    seen = []

    def f(t):
        seen.append(np.sum(t).item())            # logging: leaves, never comes back
        return np.sum(t ** 3) if np.sum(t).item() > 0 else -np.sum(t)

    x = np.array([0.5, -0.2, 0.9])
    np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-7)
    assert type(seen[0]) is not float and seen[0] == np.sum(x)   # a float, marked
    later = pb.grad(lambda t: np.sum(t * seen[0]))(x)   # its computation has ended
    np.testing.assert_allclose(later, np.full(3, seen[0]))


def test_the_fix_the_message_gives_works():
    def f(t):
        v = np.asarray(t * 3.0)[()] if t.ndim == 0 else np.asarray(t * 3.0)[0]
        return t[0] + v

    x = np.array([1.0])
    np.testing.assert_allclose(pb.grad(f)(x), [4.0])
    np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-7)


# ---------------------------------------------------------------------------- not arrays


@pytest.mark.parametrize("losscheck", [True, False])
def test_an_xarray_loss_is_refused_naming_its_type(losscheck):
    xr = pytest.importorskip("xarray")

    def f(t):
        return xr.DataArray(t * 2.0).sum()

    with pytest.raises(TypeError, match=r"returned a DataArray \(xarray\..*DataArray\).*"
                                        r"return the array it holds \(loss\.data\)"):
        pb.grad(f, losscheck=losscheck)(np.ones(3))
    x = np.array([1.0, 2.0, 3.0])
    g = pb.grad(lambda t: f(t).data)(x)
    np.testing.assert_allclose(g, central_differences(lambda t: float(f(t)), x), rtol=1e-7)


def test_pandas_is_refused_in_pullbacks_words():
    pd = pytest.importorskip("pandas")
    with pytest.raises(TypeError, match=r"^pullback: pandas \(pandas\..*\) got a tracked "
                                        r"value.*np\.sum\(x\), not pd\.Series\(x\)\.sum\(\)"):
        pb.grad(lambda t: pd.Series(t).sum())(np.ones(3))
