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


# ---------------------------------------------------------------------------- the guard


def test_a_plain_buffer_filled_in_a_loop_names_the_buffer_and_the_fix():
    def rnn(inputs, W):  # np.add's derivative reads no value: the guard leaves h[t] free
        h = np.zeros((4, 3))
        for t in range(3):
            h[t + 1] = np.dot(inputs[t], W) + h[t]
        return np.sum(h[1:])

    with pytest.raises(TypeError, match=r"^pullback: a tracked value cannot become a plain "
                                        r"NumPy array.*a = np\.zeros_like\(x\)"):
        pb.grad(rnn, 1)(np.ones((3, 2)), np.ones((2, 3)))

    def gated(inputs, W):  # np.multiply's reads h[t]: the guard holds h, and says so
        h = np.ones((4, 3))
        for t in range(3):
            h[t + 1] = np.dot(inputs[t], W) * h[t]
        return np.sum(h[1:])

    with pytest.raises(ValueError, match=r"^pullback: test_dropin_refusals\.py:\d+ writes into "
                                         r"h \(an array of shape \(4, 3\)\), which is read-only"
                                         r".*np\.zeros_like\(x\).*pb\.held_by\(h\)"):
        pb.grad(gated, 1)(np.ones((3, 2)), np.ones((2, 3)))

    def tracked_buffer(inputs, W):  # the fix the message gives
        h = np.zeros_like(np.dot(inputs[:4], W)) * 0.0
        for t in range(3):
            h[t + 1] = np.dot(inputs[t], W) + h[t]
        return np.sum(h[1:] ** 2)

    inputs, W = np.random.default_rng(0).standard_normal((4, 2)), np.ones((2, 3))
    np.testing.assert_allclose(pb.grad(tracked_buffer, 1)(inputs, W),
                               central_differences(lambda W: tracked_buffer(inputs, W), W),
                               rtol=1e-6)


@pytest.mark.parametrize("failure", ["loss", "inside"])
def test_arrays_are_writeable_in_the_except_handler_of_a_failed_grad(failure):
    X = np.ones(3)

    def f(w):
        if failure == "inside":
            raise ValueError(f"no: {np.sum(w * X)}")   # the graph holds X by now
        return np.sum(np.log(w * X - 1.0))       # -inf: the loss is refused

    with np.errstate(divide="ignore"):
        out, _ = pb.vjp(lambda w: w * X, np.ones(3))
    assert pb.held_by(X) is not None             # (what the handler below must not meet)
    del out, _

    try:
        with np.errstate(divide="ignore"):
            pb.grad(f)(np.ones(3))
    except (ValueError, pb.LossError):
        X[...] = 2.0                             # regularise and try again
    assert pb.held_by(X) is None
    np.testing.assert_allclose(pb.grad(f)(np.ones(3)) if failure == "loss" else X, 2.0)


def test_a_library_changing_an_array_the_graph_uses_is_named():
    kernel_ridge = pytest.importorskip("sklearn.kernel_ridge")
    X = np.random.default_rng(0).standard_normal((6, 2))

    def f(y):  # KernelRidge adds alpha to K's diagonal in place, after a solve used K
        return np.sum(kernel_ridge.KernelRidge(alpha=1.0).fit(X, y).dual_coef_)

    with pytest.raises(ValueError, match=r"^pullback: sklearn\.linear_model\._ridge\.\w+ "
                                         r"\(_ridge\.py:\d+\) writes into K \(an array of "
                                         r"shape \(6, 6\)\), which the computation used "
                                         r"before.*pb\.rrule.*pb\.stop_gradient"):
        pb.grad(f)(np.ones(6))


# ---------------------------------------------------------------------------- messages


def test_a_positional_out_is_out():
    def clipped(a):
        out = np.zeros_like(a)
        assert np.clip(a, 0.5, 1.5, out) is out
        return np.sum(out * a)

    x = np.array([0.2, 1.0, 2.0])
    np.testing.assert_allclose(pb.grad(clipped)(x), central_differences(clipped, x), rtol=1e-7)

    def dotted(a):
        out = np.zeros_like(a)
        np.dot(np.arange(9.0).reshape(3, 3), a, out)
        return np.sum(np.cumsum(out, 0, None, None) ** 2)

    np.testing.assert_allclose(pb.grad(dotted)(x), central_differences(dotted, x), rtol=1e-7)
    with pytest.raises(TypeError, match=r"^pullback: np\.clip\(\.\.\., out=\.\.\.\) writes into "
                                        r"an existing plain array"):
        pb.grad(lambda a: np.sum(np.clip(a, 0.5, 1.5, np.zeros(3))))(x)


def test_resize_is_told_that_the_method_pads_with_zeros():
    with pytest.raises(TypeError, match=r"x\.resize\(new_shape\) changes .*pads with zeros.*"
                                        r"np\.pad"):
        pb.grad(lambda a: np.sum(a.copy().resize(5)))(np.ones(3))


def test_a_plain_buffers_message_comes_first():
    def fill(x):
        buffer = np.zeros(2)
        buffer[0] = x[0]
        return np.sum(buffer)

    with pytest.raises(ValueError, match=r"^pullback: float\(\) of a tracked value was refused"
                                         r"\. The line test_dropin_refusals\.py:\d+ .*"
                                         r"np\.zeros_like\(x\).*\(ValueError: setting an array "
                                         r"element with a sequence\.\)$"):
        pb.grad(fill)(np.ones(2))


# ---------------------------------------------------------------------------- libraries

LIBRARY = {  # (function of a tracked t, the message's start, library line, what happened)
    "compiled code (cKDTree)": (
        lambda t: np.sum(__import__("scipy.spatial").spatial.cKDTree(t.reshape(3, 2)).query(
            np.zeros(2))[0]),
        r"a tracked value reached compiled code in scipy\.spatial\._ckdtree\..*"
        r"\(_ckdtree\.pyx:\d+\).*pb\.rrule.*\(TypeError: "),
    "a validation (KernelRidge's alpha)": (
        lambda t: np.sum(__import__("sklearn.kernel_ridge").kernel_ridge.KernelRidge(
            alpha=t[0] ** 2).fit(np.ones((3, 2)), np.ones(3)).dual_coef_),
        r"sklearn\.utils\._param_validation\.\w+ \(_param_validation\.py:\d+\) refused a "
        r"tracked value: it checks its arguments .*pb\.stop_gradient.*\(InvalidParameterError"),
    "float() in a library (mean_squared_error)": (
        lambda t: __import__("sklearn.metrics").metrics.mean_squared_error(np.ones(6), t),
        r"float\(\) of a tracked value \(called by sklearn\.metrics\._regression\."
        r"mean_squared_error at _regression\.py:\d+\).*pb\.stop_gradient.*pb\.rrule"),
    "a plain array's method (X.dot(params))": (
        lambda t: np.sum(np.ones((2, 6)).dot(t)),
        r"a tracked value cannot become a plain NumPy array.*A\.dot\(x\): write np\.dot"),
    "a conversion in a library (gaussian_filter)": (
        lambda t: np.sum(__import__("scipy.ndimage").ndimage.gaussian_filter(t, 1.0)),
        r"a tracked value \(shape \(6,\), dtype float64\) reached scipy\.ndimage\._filters\."
        r"\w+ at _filters\.py:\d+.*pb\.rrule.*pb\.stop_gradient"),
}


@pytest.mark.parametrize("case", LIBRARY, ids=list(LIBRARY))
def test_code_that_cannot_be_followed_is_named_in_pullbacks_words(case):
    pytest.importorskip("sklearn")
    f, message = LIBRARY[case]
    with pytest.raises((TypeError, ValueError), match=f"^pullback: {message}"):
        pb.grad(f)(np.linspace(0.5, 1.5, 6))


LIBRARY_SOURCE = '''
import numpy as np


def fill(x):
    out = np.zeros(2)
    out[0] = x[0]                  # a plain array the library allocated
    return out


def check(x):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"x must be an ndarray, got {type(x).__name__}")
    return x
'''


@pytest.mark.parametrize("call,message", [
    ("fill", r"float\(\) of a tracked value was refused \(called by fakelib\.fill at "
             r"fakelib\.py:7\)\. fakelib\.fill \(fakelib\.py:7\) raised the error below in its "
             r"place: it writes a tracked value into a plain array it allocated.*pb\.rrule\)\. "
             r"\(ValueError: setting an array element with a sequence\.\)$"),
    ("check", r"fakelib\.check \(fakelib\.py:13\) refused a tracked value: it checks its "
              r"arguments .*pb\.stop_gradient.*\(TypeError: x must be an ndarray, got "
              r"Tracked\)$"),
])
def test_a_librarys_own_error_comes_after_pullbacks_sentence(call, message, tmp_path,
                                                              monkeypatch):
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "fakelib.py").write_text(LIBRARY_SOURCE)
    monkeypatch.syspath_prepend(str(site))
    fakelib = __import__("fakelib")
    with pytest.raises((TypeError, ValueError), match=f"^pullback: {message}"):
        pb.grad(lambda t: np.sum(getattr(fakelib, call)(t)))(np.ones(2))
    monkeypatch.delitem(__import__("sys").modules, "fakelib")
