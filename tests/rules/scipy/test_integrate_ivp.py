"""scipy.integrate.solve_ivp (rules/scipy/integrate_ivp.py): the rows call it as users do
and differentiate ``sol.y``; the derivatives are checked against central differences of
the same call, at tight tolerances of the solver (its error is what the differences see).
The adjoint runs on plain values: first order, as odeint's."""

import numpy as np
import pytest

import pullback as pb

from ..spec import Spec
from .test_integrate import _check_pytree, _layers, _small, mlp, neural

integrate = pytest.importorskip("scipy.integrate")
rules = pytest.importorskip("pullback.rules.scipy.integrate_ivp")

solve_ivp = integrate.solve_ivp
TOL = {"rtol": 1e-10, "atol": 1e-10}  # solver tolerances: the finite differences see its error
FIRST_ORDER = "the adjoint pullback runs solve_ivp on plain values: first order only"
TIMES = [0.0, 0.3, 0.8, 1.0]


def linear(t, y, a):
    return a @ y


def forced(t, y, k, power):
    # depends on the time, and on an integer that is not differentiated
    return -k * y + np.sin(3.0 * t) ** power


def _solution(fun, y0, args, **kw):
    return solve_ivp(fun, (0.0, 1.0), y0, args=args, **{**TOL, **kw}).y


SPECS = [
    Spec(rules.ivp_solution, [((3,), (3, 3)), ((2,), (2, 2))], domain=("real", _small),
         order=1, why=FIRST_ORDER, rtol=1e-5,
         call=lambda y0, a: _solution(linear, y0, (a,), t_eval=TIMES),
         name="scipy.integrate.solve_ivp(linear: y0, A)"),
    Spec(rules.ivp_solution, [((2, 2), (2,), (2,))], domain=(_small, "real", "real"),
         order=1, why=FIRST_ORDER, rtol=1e-5,
         call=lambda w, b, y0: _solution(lambda t, y, w, b: neural(y, t, w, b), y0, (w, b),
                                         t_eval=np.linspace(0.0, 1.0, 3)),
         name="scipy.integrate.solve_ivp(neural ODE: W, b, y0)"),
    Spec(rules.ivp_solution, [((), (3,)), ((2,), (2,))], domain=("positive", "real"),
         order=1, why=FIRST_ORDER, rtol=1e-5,
         call=lambda k, y0: _solution(forced, np.atleast_1d(y0), (k, 2), t_eval=TIMES),
         name="scipy.integrate.solve_ivp(time-dependent, a constant in args)"),
    # without t_eval the times are the solver's steps: the last is t_span's end
    Spec(rules.ivp_solution, [((2,), (2, 2))], domain=("real", _small), order=1,
         why=FIRST_ORDER, rtol=1e-5, call=lambda y0, a: _solution(linear, y0, (a,))[:, -1],
         name="scipy.integrate.solve_ivp(the final state)"),
    # backwards in time, and the implicit methods
    Spec(rules.ivp_solution, [((2,), (2, 2))], domain=("real", _small), order=1,
         why=FIRST_ORDER, rtol=1e-5,
         call=lambda y0, a, method: solve_ivp(linear, (1.0, -0.5), y0, args=(a,),
                                              t_eval=[1.0, 0.2, -0.5], method=method,
                                              **TOL).y,
         kwargs={"method": ["RK45", "DOP853", "Radau", "BDF", "LSODA"]},
         name="scipy.integrate.solve_ivp(backwards, method)"),
    Spec(rules.ivp_solution, [(2,)], order=1, why=FIRST_ORDER, rtol=1e-5,
         call=lambda y0: solve_ivp(lambda t, y: -y ** 3, (0.0, 1.0), y0, t_eval=TIMES,
                                   **TOL).y,
         name="scipy.integrate.solve_ivp(no args)"),
    Spec(rules.ivp_solution, [((2,), (2, 2))], domain="complex", order=1, why=FIRST_ORDER,
         rtol=1e-5, call=lambda y0, a: _solution(linear, y0, (a,), t_eval=TIMES),
         name="scipy.integrate.solve_ivp(complex)"),
    Spec(rules.ivp_solution, [((2,), (2, 2))], order=1, why=FIRST_ORDER,
         call=lambda y0, a: _solution(linear, y0, (a,), t_eval=[]),
         name="scipy.integrate.solve_ivp(no times)"),
]


def test_the_result_is_scipys_with_y_tracked():
    a, y0 = np.array([[-1.0, 0.5], [0.0, -2.0]]), np.array([1.0, 2.0])
    want = solve_ivp(linear, (0.0, 1.0), y0, args=(a,), t_eval=TIMES)
    got = solve_ivp(linear, (0.0, 1.0), pb.param(y0), args=(a,), t_eval=TIMES)
    assert type(got) is type(want) and got.keys() == want.keys()
    assert isinstance(got.y, pb.Tracked) and type(got.t) is np.ndarray and got.sol is None
    np.testing.assert_array_equal(pb.stop_gradient(got.y), want.y)
    for key in ("t", "status", "message", "success", "nfev", "t_events"):
        np.testing.assert_equal(got[key], want[key])


def test_args_as_a_list_of_layers():
    # autograd's ode_net's parameters: a list of (W, b) tuples, given as args=(params,)
    rng = np.random.default_rng(3)
    y0 = np.array([1.0, -0.5])
    params = _layers(rng)

    def fun(t, y, params):
        return mlp(y, t, params)

    grads = pb.grad(lambda p: np.sum(solve_ivp(fun, (0.0, 1.0), y0, args=(p,)).y))(params)
    assert type(grads) is list and type(grads[0]) is tuple and grads[0][1].shape == (4,)
    _check_pytree(lambda p: np.sum(solve_ivp(fun, (0.0, 1.0), y0, t_eval=TIMES, args=(p,),
                                             **TOL).y ** 2), params, rng)


def test_a_jacobian_and_vectorized_take_the_args_too():
    rng = np.random.default_rng(5)
    y0 = np.array([1.0, 2.0])
    params = {"a": np.array([[-1.0, 0.3], [0.2, -0.5]])}

    def fun(t, y, p):
        return p["a"] @ y

    def jac(t, y, p):
        return p["a"]

    _check_pytree(lambda p: np.sum(solve_ivp(fun, (0.0, 1.0), y0, method="Radau", jac=jac,
                                             args=(p,), t_eval=TIMES, **TOL).y ** 2),
                  params, rng)
    _check_pytree(lambda p: np.sum(solve_ivp(fun, (0.0, 1.0), y0, method="BDF",
                                             vectorized=True, args=(p,), t_eval=TIMES,
                                             **TOL).y ** 2), params, rng)


def test_second_derivatives_raise():
    a, y0 = np.array([[-1.0, 0.5], [0.0, -2.0]]), np.array([1.0, 2.0])
    with pytest.raises(pb.NoRuleError, match="first order only"):
        pb.hessian(lambda y0: np.sum(solve_ivp(linear, (0.0, 1.0), y0, args=(a,)).y ** 2))(y0)


@pytest.mark.parametrize("kw, message", [
    ({"dense_output": True}, "dense_output=True.*t_eval="),
    ({"events": lambda t, y, a: y[0]}, "events=.*no rule"),
    ({"t_eval": "tracked"}, "tracked t_eval.*T in args"),
    ({"t_span": "tracked"}, "tracked t_span.*T in args"),
])
def test_refusals_name_the_argument_and_the_fix(kw, message):
    a = np.array([[-1.0, 0.5], [0.0, -2.0]])

    def loss(y0):
        given = {k: (np.stack([y0[0] * 0.0, y0[0] * 0.0 + 1.0]) if v == "tracked" else v)
                 for k, v in kw.items()}
        return np.sum(solve_ivp(linear, given.pop("t_span", (0.0, 1.0)), y0, args=(a,),
                                **given).y)

    with pytest.raises(pb.NoRuleError, match=message):
        pb.grad(loss)(np.array([1.0, 2.0]))
