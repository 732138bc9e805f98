import collections

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

from ..spec import Spec

integrate = pytest.importorskip("scipy.integrate")
sl = pytest.importorskip("scipy.linalg")

odeint = integrate.odeint
TOL = {"rtol": 1e-10, "atol": 1e-10}  # solver tolerances: the finite differences see its error
FIRST_ORDER = "the adjoint pullback runs odeint on plain values: first order only"


def _times(rng, shape):
    """Increasing times from 0, at least 0.2 apart."""
    return np.cumsum(np.concatenate([[0.0], rng.uniform(0.2, 0.5, shape[0] - 1)]))


def _small(rng, shape):
    return 0.5 * rng.standard_normal(shape)


def linear(y, t, a):
    return a @ y


def neural(y, t, w, b):
    return np.tanh(w @ y + b)


def forced(y, t, k, power):
    # depends on the time, and on an integer that is not differentiated
    return -k * y + np.sin(3.0 * t) ** power


SPECS = [
    Spec(odeint, [((3,), (3, 3), (4,)), ((2,), (2, 2), (2,))],
         domain=("real", _small, _times), order=1, why=FIRST_ORDER, rtol=1e-5,
         call=lambda y0, a, t: odeint(linear, y0, t, args=(a,), **TOL),
         name="scipy.integrate.odeint(linear: y0, A, t)"),
    Spec(odeint, [((2, 2), (2,), (2,)), ((3, 3), (3,), (3,))],
         domain=(_small, "real", "real"), order=1, why=FIRST_ORDER, rtol=1e-5,
         call=lambda w, b, y0: odeint(neural, y0, np.linspace(0.0, 1.0, 4), (w, b), **TOL),
         name="scipy.integrate.odeint(neural ODE: W, b, y0)"),
    Spec(odeint, [((), (3,)), ((2,), (3,))], domain=("positive", _times),
         order=1, why=FIRST_ORDER, rtol=1e-5,
         call=lambda k, t: odeint(forced, np.ones(np.shape(k)), t, args=(k, 2), **TOL),
         name="scipy.integrate.odeint(time-dependent, a constant in args)"),
    Spec(odeint, [((2,), (2, 2))], domain=("real", _small), order=1,
         why=FIRST_ORDER, rtol=1e-5,
         call=lambda y0, a: odeint(lambda t, y, a: a @ y, y0, [0.0, 0.5, 1.0], (a,),
                                   tfirst=True, **TOL),
         name="scipy.integrate.odeint(tfirst)"),
    # empty: an empty state, no times
    Spec(odeint, [((0,), (0, 0), (4,))], domain=("real", "real", _times),
         order=1, why=FIRST_ORDER, call=lambda y0, a, t: odeint(linear, y0, t, args=(a,)),
         name="scipy.integrate.odeint(an empty state)"),
    Spec(odeint, [((3,), (3, 3), (0,))], order=1, why=FIRST_ORDER,
         call=lambda y0, a, t: odeint(linear, y0, t, args=(a,)),
         name="scipy.integrate.odeint(no times)"),
    Spec(odeint, [((0, 0), (0,), (0,))], order=1, why=FIRST_ORDER,
         call=lambda w, b, y0: odeint(neural, y0, np.linspace(0.0, 1.0, 4), (w, b)),
         name="scipy.integrate.odeint(neural ODE, empty)"),
]

NONDIFF = []



def test_linear_solution_and_its_gradient_are_the_known_ones():
    rng = np.random.default_rng(1)
    a, y0, t = 0.5 * rng.standard_normal((3, 3)), rng.standard_normal(3), np.array([0.0, 0.7])
    y = odeint(linear, y0, t, args=(a,), **TOL)
    np.testing.assert_allclose(y[1], sl.expm(a * t[1]) @ y0, rtol=1e-8)
    # the gradient of sum(y(t1)) in y0 against finite differences of odeint itself
    pb.check_grads(lambda y0: odeint(linear, y0, t, args=(a,), **TOL)[1], y0, order=1,
                   rtol=1e-5)
    g = pb.grad(lambda y0: np.sum(odeint(linear, y0, t, args=(a,), **TOL)[1]))(y0)
    eps = 1e-6
    numeric = [(np.sum(odeint(linear, y0 + eps * e, t, args=(a,), **TOL)[1])
                - np.sum(odeint(linear, y0 - eps * e, t, args=(a,), **TOL)[1])) / (2 * eps)
               for e in np.eye(3)]
    np.testing.assert_allclose(g, numeric, rtol=1e-5)


def test_neural_ode_gradient_of_a_loss():
    rng = np.random.default_rng(2)
    w, b, y0 = 0.5 * rng.standard_normal((2, 2)), rng.standard_normal(2), rng.standard_normal(2)
    target = np.array([0.3, -0.2])
    t = np.linspace(0.0, 2.0, 5)

    def loss(w, b, y0):
        y = odeint(neural, y0, t, args=(w, b), **TOL)
        return np.sum((y[-1] - target) ** 2) + 0.1 * np.sum(y[2] ** 2)

    pb.check_grads(loss, w, b, y0, order=1, rtol=1e-5)


def test_the_args_tuple_may_be_positional_or_a_keyword():
    a, y0 = np.array([[-1.0, 0.5], [0.0, -2.0]]), np.array([1.0, 2.0])
    t = [0.0, 1.0]
    by_keyword = pb.grad(lambda a: np.sum(odeint(linear, y0, t, args=(a,), **TOL)))(a)
    by_position = pb.grad(lambda a: np.sum(odeint(linear, y0, t, (a,), **TOL)))(a)
    np.testing.assert_array_equal(by_keyword, by_position)


def test_second_derivatives_raise():
    a, y0 = np.array([[-1.0, 0.5], [0.0, -2.0]]), np.array([1.0, 2.0])
    with pytest.raises(pb.NoRuleError, match="first order only"):
        pb.hessian(lambda y0: np.sum(odeint(linear, y0, [0.0, 1.0], args=(a,)) ** 2))(y0)


def test_full_output_has_no_rule():
    with pytest.raises(pb.NoRuleError, match="full_output"):
        pb.grad(lambda y0: np.sum(odeint(lambda y, t: -y, y0, [0.0, 1.0],
                                         full_output=True)[0]))(np.ones(2))


def test_a_list_in_args_is_read_as_an_array():
    # func gets the list as SciPy passes it; the adjoint differentiates it as an array
    w, y0 = np.array([[-0.5, 0.3], [0.2, -0.4]]), np.array([1.0, -1.0])
    t = np.linspace(0.0, 1.0, 3)
    for f in (lambda w: np.sum(odeint(neural, y0, t, args=(w, [0.3, -0.2]), **TOL) ** 2),
              lambda w: np.sum(odeint(neural, y0, t, args=(w, [w[0, 1], 0.5]), **TOL) ** 2)):
        np.testing.assert_allclose(pb.grad(f)(w), central_differences(f, w), rtol=1e-5)


def mlp(y, t, params):
    # autograd's ode_net: params a list of (W, b) tuples, passed as args=(params,)
    for w, b in params:
        outputs = np.dot(y, w) + b
        y = np.tanh(outputs)
    return outputs


def _layers(rng):
    return [(0.5 * rng.standard_normal((2, 4)), 0.1 * rng.standard_normal(4)),
            (0.5 * rng.standard_normal((4, 2)), 0.1 * rng.standard_normal(2))]


def _check_pytree(loss, params, rng):
    """The gradient of ``loss`` in the pytree ``params`` (a pytree of the same structure)
    along a random direction, against central differences of the same call."""
    grads = pb.grad(loss)(params)
    assert pb.tree_flatten(grads)[1] == pb.tree_flatten(params)[1]
    step = pb.tree_map(lambda a: rng.standard_normal(np.shape(a)), params)
    eps = 1e-6
    moved = [loss(pb.tree_map(lambda a, d, s=s: a + s * eps * d, params, step))
             for s in (1.0, -1.0)]
    along = sum(np.sum(g * d) for g, d in zip(pb.tree_flatten(grads)[0],
                                              pb.tree_flatten(step)[0]))
    np.testing.assert_allclose(along, (moved[0] - moved[1]) / (2 * eps), rtol=1e-5)


def test_args_may_be_a_pytree_as_scipy_passes_them_through():
    rng = np.random.default_rng(3)
    y0, t = np.array([1.0, -0.5]), np.linspace(0.0, 1.0, 4)
    params = _layers(rng)
    grads = pb.grad(lambda p: np.sum(odeint(mlp, y0, t, args=(p,), **TOL)))(params)
    assert type(grads) is list and type(grads[0]) is tuple and grads[0][1].shape == (4,)
    _check_pytree(lambda p: np.sum(odeint(mlp, y0, t, args=(p,), **TOL) ** 2), params, rng)
    _check_pytree(lambda p: np.sum(odeint(mlp, y0, t, (p,), **TOL)[-1]), params, rng)


Layer = collections.namedtuple("Layer", "w b")


def test_args_with_dicts_namedtuples_and_constants():
    rng = np.random.default_rng(4)
    y0, t = np.array([0.5, 1.0]), np.linspace(0.0, 1.0, 3)

    def f(y, t, p, name, scale):
        assert name == "damped" and isinstance(p["layer"], Layer)
        return -p["k"] * y + scale * np.tanh(p["layer"].w @ y + p["layer"].b)

    params = {"k": 0.7, "layer": Layer(0.5 * rng.standard_normal((2, 2)), np.array([0.1, 0.2]))}
    _check_pytree(lambda p: np.sum(odeint(f, y0, t, args=(p, "damped", 2), **TOL) ** 2),
                  params, rng)


def test_a_pytree_with_a_jacobian_given_as_dfun():
    rng = np.random.default_rng(5)
    y0, t = np.array([1.0, 2.0]), np.linspace(0.0, 1.0, 3)

    def f(y, t, p):
        return p[0]["a"] @ y

    def jac(y, t, p):
        return p[0]["a"]

    params = [{"a": np.array([[-1.0, 0.3], [0.2, -0.5]])}]
    _check_pytree(lambda p: np.sum(odeint(f, y0, t, (p,), Dfun=jac, **TOL) ** 2), params, rng)
