"""scipy.integrate.quad and quad_vec (rules/scipy/integrate_quad.py): the rows call them as
users do; the derivatives are checked against central differences of the same call, at
tight tolerances of the integrator (its error is what the differences see)."""

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

from ..spec import Spec
from .test_integrate import _check_pytree, _layers

integrate = pytest.importorskip("scipy.integrate")
rules = pytest.importorskip("pullback.rules.scipy.integrate_quad")

quad, quad_vec = integrate.quad, integrate.quad_vec
TOL = {"epsabs": 1e-13, "epsrel": 1e-13}


def _lower(rng, shape):
    return rng.uniform(-0.5, 0.2, shape)


def _upper(rng, shape):
    return rng.uniform(0.8, 1.5, shape)


def damped(x, w):
    return np.sum(np.sin(w * x) / (1.0 + w ** 2)) * np.exp(-0.5 * x)


def gaussian(x, k, c):
    return np.exp(-k * (x - c) ** 2)


def bumps(x, w):
    return np.sin(w * x) * np.exp(-x * w ** 2) + w * x ** 2


def layered(x, p):
    # args a pytree: a dict holding a (W, b, power) tuple, the power an integer constant
    w, b, power = p["layer"]
    return np.sum(np.tanh(w * x + b)) ** power * np.exp(-p["k"] * x)


SPECS = [
    Spec(rules.quad_integral, [((), (), (3,)), ((), (), ())], domain=(_lower, _upper, "real"),
         call=lambda a, b, w: quad(damped, a, b, args=(w,), **TOL)[0],
         name="scipy.integrate.quad(a, b, args=(w,))"),
    # the limits the other way round: a minus sign
    Spec(rules.quad_integral, [((), (3,))], domain=(_upper, "real"),
         call=lambda b, w: quad(damped, b, -0.3, args=w, **TOL)[0],
         name="scipy.integrate.quad(b > a, args=w)"),
    Spec(rules.quad_integral, [((), (), ())], domain=("positive", "positive", "real"),
         call=lambda a, k, c: quad(gaussian, a, np.inf, args=(k, c), **TOL)[0],
         name="scipy.integrate.quad(a, inf)"),
    Spec(rules.quad_integral, [((), (2,))], domain=("positive", "real"),
         call=lambda k, w: quad(layered, -1.0, 1.0, args=({"k": k, "layer": (w, 0.1, 2)},),
                                **TOL)[0],
         name="scipy.integrate.quad(args a pytree)"),
    # a kink at 0.5, given as a break point
    Spec(rules.quad_integral, [((), ())], domain=("positive", "real"),
         call=lambda k, c: quad(lambda x, k, c: np.abs(x - 0.5) * k + c * x, 0.0, 2.0,
                                args=(k, c), points=[0.5], **TOL)[0],
         name="scipy.integrate.quad(points)"),
    Spec(rules.quad_integral, [((), ())], domain=("positive", "real"),
         call=lambda k, c: quad(gaussian, -1.0, 2.0, args=(k, c), full_output=1, **TOL)[0],
         name="scipy.integrate.quad(full_output)"),
    Spec(rules.quad_vec_integral, [((), (), (3,))], domain=(_lower, _upper, "real"),
         call=lambda a, b, w: quad_vec(bumps, a, b, args=(w,), **TOL)[0],
         name="scipy.integrate.quad_vec(a, b, args=(w,))"),
    Spec(rules.quad_vec_integral, [(2,)],
         call=lambda w, norm: quad_vec(lambda x, w: np.outer(w, [x, x ** 2]), 0.0, 1.0,
                                       args=(w,), norm=norm, **TOL)[0],
         kwargs={"norm": ["max", "2"]}, name="scipy.integrate.quad_vec(norm, 2-d value)"),
    Spec(rules.quad_vec_integral, [(2,)], domain="complex",
         call=lambda w: quad_vec(lambda x, w: np.exp(w * x), 0.0, 1.0, args=(w,), **TOL)[0],
         name="scipy.integrate.quad_vec(complex)"),
]


def test_quad_vec_to_infinity():
    # (no row: on Dask arrays, SciPy's own call takes half a minute)
    def loss(v):
        return np.sum(quad_vec(lambda x, w: np.exp(-(w * x) ** 2), v[0], np.inf, args=(v[1:],),
                               **TOL)[0] ** 2)

    v = np.array([0.8, 0.5, 1.3])
    np.testing.assert_allclose(pb.grad(loss)(v), central_differences(loss, v), rtol=1e-6)
    pb.check_grads(loss, v, order=2)


def test_the_error_estimate_and_the_report_stay_plain():
    w = np.array([0.5, -1.0, 2.0])
    want = quad(damped, 0.0, 1.0, args=(w,), full_output=1)
    got = quad(damped, 0.0, 1.0, args=(pb.param(w),), full_output=1)
    assert isinstance(got[0], pb.Tracked) and len(got) == len(want)
    assert type(got[1]) is float and got[1] == want[1] and got[2].keys() == want[2].keys()
    y, err = quad(damped, 0.0, 1.0, args=(pb.param(w),))
    assert type(err) is float
    res, err = quad_vec(bumps, 0.0, 1.0, args=(pb.param(w),))
    assert isinstance(res, pb.Tracked) and type(err) is float
    res, err, info = quad_vec(bumps, 0.0, 1.0, args=(pb.param(w),), full_output=True)
    assert info.success and not isinstance(info.integrals, pb.Tracked)


def test_args_as_a_list_of_layers():
    # autograd's ode_net's parameters: a list of (W, b) tuples, given as args=(params,)
    rng = np.random.default_rng(0)
    params = _layers(rng)

    def mlp(x, params):
        y = np.array([x, 1.0 - x])
        for w, b in params:
            y = np.tanh(y @ w + b)
        return np.sum(y ** 2)

    grads = pb.grad(lambda p: quad(mlp, 0.0, 1.0, args=(p,))[0])(params)
    assert type(grads) is list and type(grads[0]) is tuple and grads[0][1].shape == (4,)
    _check_pytree(lambda p: quad(mlp, 0.0, 1.0, args=(p,), **TOL)[0], params, rng)
    _check_pytree(lambda p: np.sum(quad_vec(lambda x, p: np.stack([mlp(x, p), x]), 0.0, 1.0,
                                            args=(p,), **TOL)[0] ** 2), params, rng)


def test_a_list_of_numbers_in_args_is_read_as_an_array():
    def f(x, c):
        return c[0] * np.exp(c[1] * x)

    for loss in (lambda k: quad(f, 0.0, 1.0, args=([k[0], 0.5],), **TOL)[0] ** 2,
                 lambda k: quad(f, 0.0, 1.0, args=([0.3, k[1]],), **TOL)[0]):
        k = np.array([0.7, -0.4])
        np.testing.assert_allclose(pb.grad(loss)(k), central_differences(loss, k), rtol=1e-6)


def test_nested_integrals_differentiate():
    # dblquad integrates quad's result with quad: the inner rule is differentiated by the
    # outer one's pullback
    def area(w):
        return integrate.dblquad(lambda y, x, w: np.exp(-w * x * y), 0.0, 1.0, 0.0, 1.0,
                                 args=(w,), epsabs=1e-12, epsrel=1e-12)[0]

    w = np.array(0.7)
    np.testing.assert_allclose(pb.grad(area)(w), central_differences(area, w), rtol=1e-6)


def test_hessian_in_the_limits_and_args():
    def loss(v):
        return quad(gaussian, v[0], v[1], args=(v[2], 0.3), **TOL)[0] ** 2

    v = np.array([-0.2, 1.1, 0.8])
    want = np.stack([central_differences(lambda u, i=i: pb.grad(loss)(u)[i], v)
                     for i in range(3)])
    np.testing.assert_allclose(pb.hessian(loss)(v), want, rtol=1e-6, atol=1e-9)


def test_a_call_with_nothing_tracked_is_scipys_own():
    w = np.array([0.5, 1.0])

    def f(v):
        plain = quad(damped, 0.0, 1.0, args=(w,))  # nothing tracked: SciPy's call
        assert type(plain[0]) is float
        return v * plain[0]

    assert pb.grad(f)(1.0) == quad(damped, 0.0, 1.0, args=(w,))[0]


@pytest.mark.parametrize("call, message", [
    (lambda w: quad(gaussian, 0.0, 1.0, args=(w, 0.0), weight="cos", wvar=2.0),
     r"weight='cos'.*write the weight into the integrand"),
    (lambda w: quad(lambda x, w: w * x, 0.0, 1.0, args=(w,), complex_func=True),
     "complex_func=True.*real and imaginary parts"),
    (lambda w: quad(gaussian, w - np.inf, 1.0, args=(1.0, 0.0)),
     r"tracked limit a = -inf.*plain number"),
    (lambda w: quad_vec(bumps, 0.0, w + np.inf, args=(1.0,)), "tracked limit b = inf"),
])
def test_refusals_name_the_argument_and_the_fix(call, message):
    with pytest.raises(pb.NoRuleError, match=message):
        pb.grad(lambda w: call(w)[0])(np.float64(0.5))
