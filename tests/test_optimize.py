"""pb.optimize.minimize: SciPy's minimizers fed pullback's derivatives, on optima known in
closed form (or, where none is, a one-dimensional reduction solved without derivatives)."""

import sys
import warnings

import numpy as np
import pytest

import pullback as pb

optimize = pytest.importorskip("scipy.optimize")
from pullback.optimize import minimize  # noqa: E402


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


X0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])


@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B", "CG", "Newton-CG", "trust-ncg",
                                    "trust-exact", "trust-krylov", "trust-constr"])
def test_rosenbrock_minimum_is_at_ones(method):
    options = {"gtol": 1e-10, "maxiter": 5000} if method == "trust-constr" else None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. SciPy's "does not use Hessian information"
        result = minimize(rosenbrock, X0, method=method, tol=1e-10, options=options)
    # (from this X0 every method reaches the global minimum, not the 5-d local one)
    assert result.success, result.message
    np.testing.assert_allclose(result.x, np.ones(5), atol=1e-6)
    np.testing.assert_array_equal(result.x_flat, result.x)
    if method in {"Newton-CG", "trust-ncg", "trust-exact", "trust-krylov"}:
        assert result.nhev > 0  # second derivatives came from pullback


def test_default_method_and_a_convex_dogleg():
    result = minimize(rosenbrock, X0)  # SciPy picks BFGS
    np.testing.assert_allclose(result.x, np.ones(5), atol=1e-4)
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    convex = lambda x: 0.5 * x @ A @ x - x @ np.ones(2) + 0.1 * np.sum(x ** 4)
    result = minimize(convex, np.zeros(2), method="dogleg", options={"gtol": 1e-9})
    assert result.success and result.nhev > 0
    np.testing.assert_allclose(pb.grad(convex)(result.x), np.zeros(2), atol=1e-6)


def test_l_bfgs_b_with_bounds():
    # with x[0] <= 0.5, Rosenbrock's minimum is at x[0] = 0.5, x[1] = 0.25
    result = minimize(rosenbrock, np.array([-1.2, 1.0]), method="L-BFGS-B",
                      bounds=[(-2.0, 0.5), (None, None)], tol=1e-12)
    assert result.success, result.message
    np.testing.assert_allclose(result.x, [0.5, 0.25], atol=1e-6)


def test_value_and_gradient_in_one_pass():
    calls = []

    def counted(x):
        calls.append(isinstance(x, pb.Tracked))
        return rosenbrock(x)

    result = minimize(counted, X0, method="BFGS")
    assert all(calls)  # every call is the differentiated one: no separate value pass
    assert len(calls) == result.nfev == result.njev
    calls.clear()
    result = optimize.minimize(rosenbrock, X0, method="BFGS")  # finite differences
    assert result.nfev > 4 * result.njev


def test_slsqp_with_constraints():
    # on the circle x0**2 + x1**2 = 2, x0 + x1 is least at (-1, -1)
    circle = {"type": "eq", "fun": lambda x: x[0] ** 2 + x[1] ** 2 - 2.0}
    result = minimize(lambda x: x[0] + x[1], np.array([1.0, -0.5]), method="SLSQP",
                      constraints=circle, tol=1e-12)
    assert result.success, result.message
    np.testing.assert_allclose(result.x, [-1.0, -1.0], atol=1e-8)
    # Rosenbrock on the line x0 + x1 = 1: the same as minimising t -> f(t, 1 - t)
    tracked = []

    def line(x):
        tracked.append(isinstance(x, pb.Tracked))
        return x[0] + x[1] - 1.0

    result = minimize(rosenbrock, np.array([0.0, 0.0]), method="SLSQP", tol=1e-12,
                      constraints=[{"type": "eq", "fun": line}])
    reference = optimize.minimize_scalar(lambda t: rosenbrock(np.array([t, 1.0 - t])),
                                         bracket=(0.0, 1.0), tol=1e-12)
    np.testing.assert_allclose(result.x, [reference.x, 1.0 - reference.x], atol=1e-6)
    assert any(tracked)  # the constraint's Jacobian came from pullback


def test_trust_constr_with_a_nonlinear_constraint_on_a_pytree():
    # the point of the unit sphere nearest (2, 2, 1) is (2, 2, 1) / 3
    target = np.array([2.0, 2.0, 1.0])
    fun = lambda p: np.sum((p["xy"] - target[:2]) ** 2) + (p["z"] - target[2]) ** 2
    sphere = optimize.NonlinearConstraint(lambda p: np.sum(p["xy"] ** 2) + p["z"] ** 2, 1.0,
                                          1.0)
    result = minimize(fun, {"xy": np.array([0.5, 0.1]), "z": 0.2}, method="trust-constr",
                      constraints=sphere, options={"gtol": 1e-10, "xtol": 1e-12})
    np.testing.assert_allclose(result.x["xy"], target[:2] / 3, atol=1e-6)
    np.testing.assert_allclose(result.x["z"], target[2] / 3, atol=1e-6)


def test_pytree_x0_keeps_structure_and_dtypes():
    seen = []

    def fun(p):
        seen.append((type(p), np.dtype(p["w"].dtype), np.shape(p["pair"][1])))
        return (np.sum((p["w"] - 1.0) ** 2) + (p["pair"][0] + 2.0) ** 2
                + np.sum((p["pair"][1] - np.arange(4.0).reshape(2, 2)) ** 2))

    x0 = {"w": np.zeros(3, dtype=np.float32), "pair": (0.5, np.zeros((2, 2)))}
    result = minimize(fun, x0, method="BFGS")
    assert set(seen) == {(dict, np.dtype(np.float32), (2, 2))}
    assert result.x["w"].dtype == np.float32 and isinstance(result.x["pair"], tuple)
    assert isinstance(result.x["pair"][0], float) and result.x_flat.shape == (8,)
    np.testing.assert_allclose(result.x["w"], np.ones(3), atol=1e-5)
    np.testing.assert_allclose(result.x["pair"][0], -2.0, atol=1e-6)
    np.testing.assert_allclose(result.x["pair"][1], np.arange(4.0).reshape(2, 2), atol=1e-6)
    np.testing.assert_array_equal(x0["w"], np.zeros(3))  # x0 untouched


@pytest.mark.parametrize("scalar", [np.float32(0.0), np.float16(0.0), np.float64(0.0)],
                         ids=["float32", "float16", "float64"])
def test_a_numpy_scalar_leaf_comes_back_as_a_numpy_scalar_of_its_dtype(scalar):
    # it came back as a Python float; only Python numbers do
    fun = lambda p: (p["s"] - 1.5) ** 2 + np.sum((p["w"] + 0.5) ** 2)
    result = minimize(fun, {"s": scalar, "w": np.zeros(2)}, method="BFGS")
    assert type(result.x["s"]) is type(scalar)
    np.testing.assert_allclose(result.x["s"], 1.5, rtol=1e-3)
    alone = minimize(lambda s: (s - 1.5) ** 2, scalar, method="BFGS").x
    assert type(alone) is type(scalar)
    assert type(minimize(lambda s: (s - 1.5) ** 2, np.int64(0)).x) is np.float64


def test_pytree_bounds():
    fun = lambda p: np.sum((p["a"] - 3.0) ** 2) + (p["b"] + 1.0) ** 2
    x0 = {"a": np.zeros(2), "b": 0.0}
    bounds = {"a": (None, np.array([1.0, 5.0])), "b": optimize.Bounds(0.0, 2.0)}
    result = minimize(fun, x0, method="L-BFGS-B", bounds=bounds, tol=1e-12)
    np.testing.assert_allclose(result.x["a"], [1.0, 3.0], atol=1e-6)
    np.testing.assert_allclose(result.x["b"], 0.0, atol=1e-8)
    flat = optimize.Bounds([-np.inf, -np.inf, 0.0], [1.0, 5.0, 2.0])
    again = minimize(fun, x0, method="L-BFGS-B", bounds=flat, tol=1e-12)
    np.testing.assert_allclose(again.x_flat, result.x_flat, atol=1e-8)
    with pytest.raises(ValueError, match=r"bounds must have x0's structure; at x0 x0 has keys"):
        minimize(fun, x0, method="L-BFGS-B", bounds={"a": (0, 1)})
    with pytest.raises(ValueError, match=r"\(None for no bound\); x0\['b'\] got 3"):
        minimize(fun, x0, method="L-BFGS-B", bounds={"a": (0, 1), "b": 3.0})


def test_args_pass_through_undifferentiated():
    rng = np.random.default_rng(0)
    A, y = rng.standard_normal((10, 3)), rng.standard_normal(10)
    seen = []

    def residual(w, A, y, label):
        seen.append((isinstance(A, pb.Tracked), label))
        return np.sum((A @ w - y) ** 2)

    result = minimize(residual, np.zeros(3), args=(A, y, "fit"), method="Newton-CG",
                      tol=1e-12)
    np.testing.assert_allclose(result.x, np.linalg.lstsq(A, y, rcond=None)[0], atol=1e-8)
    assert set(seen) == {(False, "fit")}


def test_user_derivatives_override():
    calls = {"jac": 0, "hess": 0}
    fun = lambda p: np.sum((p["x"] - 2.0) ** 2)

    def jac(p):
        calls["jac"] += 1
        assert not isinstance(p["x"], pb.Tracked)
        return {"x": 2 * (p["x"] - 2.0)}

    def hess(p):
        calls["hess"] += 1
        return 2 * np.eye(2)

    result = minimize(fun, {"x": np.zeros(2)}, method="trust-exact", jac=jac, hess=hess)
    np.testing.assert_allclose(result.x["x"], [2.0, 2.0])
    assert calls["jac"] > 0 and calls["hess"] > 0
    finite = minimize(fun, {"x": np.zeros(2)}, method="BFGS", jac="2-point")
    assert finite.nfev > 2 * finite.njev
    np.testing.assert_allclose(finite.x["x"], [2.0, 2.0], atol=1e-6)


def test_derivative_free_methods_get_no_gradient():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = minimize(rosenbrock, np.array([-1.2, 1.0]), method="Nelder-Mead",
                          options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000})
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)


def test_callback_sees_x0_structure():
    xs, results = [], []
    fun = lambda p: np.sum((p["x"] - 1.0) ** 2)
    minimize(fun, {"x": np.zeros(2)}, method="BFGS", callback=lambda xk: xs.append(xk))
    assert xs and all(set(x) == {"x"} for x in xs)

    def record(intermediate_result):
        results.append(intermediate_result)

    minimize(fun, {"x": np.zeros(2)}, method="BFGS", callback=record)
    assert results and all(set(r.x) == {"x"} for r in results)


def test_list_of_numbers_is_an_array_as_in_scipy():
    result = minimize(rosenbrock, [-1.2, 1.0], method="BFGS")
    assert isinstance(result.x, np.ndarray)
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-5)


def test_errors():
    with pytest.raises(TypeError, match="real numbers; leaf 0 of x0 has dtype complex128"):
        minimize(lambda x: np.sum(np.abs(x)), np.ones(2, dtype=complex))
    with pytest.raises(ValueError, match="x0 with at least one number"):
        minimize(lambda x: 0.0, {})


def test_missing_scipy_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(ImportError, match=r"pip install pullback\[scipy\]"):
        minimize(rosenbrock, X0)


def _fd_gradient(f, x, eps=1e-6):
    return np.array([(f(x + e) - f(x - e)) / (2 * eps) for e in np.eye(x.size) * eps])


def test_an_objective_of_one_element_counts_as_a_scalar():
    fun = lambda x: (x - 3.0) ** 2 * np.exp(x / 4)   # shape (1,), as pb.grad accepts
    for method in ("BFGS", "trust-exact", "Newton-CG"):
        result = minimize(fun, np.array([0.0]), method=method)
        np.testing.assert_allclose(result.x, [3.0], atol=1e-5)
    result = minimize(fun, np.array([1.0]), method="BFGS", options={"maxiter": 1})
    np.testing.assert_allclose(result.jac, _fd_gradient(lambda x: fun(x)[0], result.x_flat),
                               rtol=1e-6)
    with pytest.raises(TypeError, match=r"real scalar; it returned a value of shape \(2,\)"):
        minimize(lambda x: (np.sum(x ** 2) * np.ones(2), 2 * x), np.ones(2), jac=True)


@pytest.mark.parametrize("method", ["Newton-CG", "trust-exact", "trust-krylov"])
def test_jac_true_gets_second_derivatives_of_the_value(method):
    def fun_and_grad(x):  # jac=True: (value, gradient)
        return rosenbrock(x), optimize.rosen_der(np.asarray(x))

    options = {"xtol": 1e-10} if method == "Newton-CG" else None
    result = minimize(fun_and_grad, X0, method=method, jac=True, options=options)
    np.testing.assert_allclose(result.x, np.ones(5), atol=1e-5)
    from pullback.optimize import Flat, second_derivatives

    hess, hessp = second_derivatives(fun_and_grad, Flat(X0), method.lower(), True, None, None,
                                     optimize.HessianUpdateStrategy)
    x, p = X0 * 0.9, np.arange(5.0)
    fd = np.array([(optimize.rosen_der(x + e) - optimize.rosen_der(x - e)) / 2e-6
                   for e in np.eye(5) * 1e-6]).T
    np.testing.assert_allclose(hessp(x, p) if hessp else hess(x) @ p, fd @ p, rtol=1e-6)


def test_bounds_of_one_pair_and_a_non_numeric_x0_say_what_to_write():
    f = lambda x: np.sum((x - 1.0) ** 2)  # noqa: E731
    with pytest.raises(ValueError, match=r"Bounds\(lo, hi\), or \[\(lo, hi\)\] \* x0\.size"):
        pb.minimize(f, np.zeros(2), bounds=(0.0, 0.5))
    with pytest.raises(TypeError, match="an array of floats"):
        pb.minimize(f, None)
    np.testing.assert_allclose(pb.minimize(f, np.zeros(2), bounds=[(0.0, 0.5)] * 2).x, 0.5)


def _loss(p):
    return np.sum((p["w"] - 3.0) ** 2) + p["b"] ** 2


def _d0():
    return {"w": np.zeros(2), "b": 1.0}


def _refused(f, x0, **kwargs):
    return lambda: minimize(f, x0, **kwargs)


_ROSEN_0 = np.array([-1.2, 1.0])


@pytest.mark.parametrize("call, error, message", [
    (_refused(rosenbrock, _ROSEN_0, jac="yes"), ValueError, r"jac must be None .*got 'yes'"),
    (_refused(rosenbrock, _ROSEN_0, jac=5), TypeError, r"jac must be None .*'cs'; got 5"),
    (_refused(None, _ROSEN_0), TypeError, r"objective function first, then x0 \(got NoneType"),
    (_refused("rosen", _ROSEN_0), TypeError, r"objective function first, then x0 \(got str"),
    (_refused(rosenbrock, []), ValueError, "x0 with at least one number"),
    (_refused(rosenbrock, {"a": np.zeros(0)}), ValueError, "x0 with at least one number"),
    (_refused(rosenbrock, [[1.0, 2.0], [3.0]]), ValueError, "x0 is a ragged list"),
    (_refused(rosenbrock, _ROSEN_0, method=5), TypeError, "method must be the name .* got int"),
    (_refused(rosenbrock, _ROSEN_0, callback=5), TypeError, "callback must be a function"),
    (_refused(rosenbrock, _ROSEN_0, callback=lambda: None), TypeError,
     r"calls callback\(x\) .* <lambda> takes \(\)"),
    (_refused(rosenbrock, _ROSEN_0, method="trust-constr", callback=lambda x: None), TypeError,
     r"calls callback\(x, state\)"),
    (_refused(rosenbrock, _ROSEN_0, constraints=5), TypeError,
     "constraints must be a constraint .* got int"),
    (_refused(rosenbrock, _ROSEN_0, constraints=[None]), TypeError,
     "constraint 0 is a NoneType"),
    (_refused(rosenbrock, _ROSEN_0, constraints={"type": "eq", "fun": "a"}), TypeError,
     "constraint 0's fun must be a function of x .* got str"),
    (_refused(rosenbrock, _ROSEN_0, constraints={"type": "eq", "fun": lambda x: x[0],
                                                 "jac": "a"}), TypeError,
     "constraint 0's jac must be a function .* leave it out"),
    (_refused(rosenbrock, _ROSEN_0, bounds=5), TypeError, "bounds=5 is not SciPy's form"),
    (_refused(rosenbrock, _ROSEN_0, bounds=[(0, 1, 2)] * 2), ValueError,
     r"one \(lo, hi\) pair per variable .* entry 0 is \(0, 1, 2\)"),
    (_refused(rosenbrock, _ROSEN_0, bounds={"a": (0, 1)}), TypeError,
     "bounds is a dict, but x0 is an array"),
    (_refused(_loss, _d0(), bounds={"w": (np.zeros(3), 1), "b": None}), ValueError,
     r"lower bound for x0\['w'\] has shape \(3,\), which does not broadcast to .* \(2,\)"),
    (_refused(_loss, _d0(), bounds={"w": (0, "x"), "b": None}), TypeError,
     r"upper bound for x0\['w'\] is 'x'"),
])
def test_misuse_is_refused_at_the_call(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_param_or_a_tracked_x0_is_refused_before_optimizing():
    calls = []

    def fun(w):
        calls.append(w)
        return np.sum(w ** 2)

    with pytest.raises(TypeError, match=r"x0 is a pb\.param; .* pass the param's \.value"):
        minimize(fun, pb.param(np.ones(3)))
    with pytest.raises(TypeError, match=r"x0\['w'\] is a pb\.param"):
        minimize(lambda p: fun(p["w"]), {"w": pb.param(np.ones(3))})
    with pytest.raises(TypeError, match=r"x0 is a tracked value .* pb\.stop_gradient\(x0\)"):
        pb.grad(lambda a: minimize(fun, a).fun)(np.ones(3))
    assert not calls


@pytest.mark.parametrize("jac, error, message", [
    (lambda p: np.ones(3), ValueError,
     r"the gradient jac returned must have x0's structure; at x0 x0 has keys \['b', 'w'\], "
     "the gradient jac returned is a ndarray"),
    (lambda p: {"w": np.ones(3), "b": 1.0}, ValueError,
     r"jac returned has shape \(3,\) at x0\['w'\]; x0\['w'\] has shape \(2,\)"),
    (lambda p: None, TypeError, r"jac returned is None \(is a return statement missing\?\)"),
    (lambda p: {"w": np.ones(2), "b": "a"}, TypeError, r"jac returned is a str at x0\['b'\]"),
    (lambda p: {"w": np.ones(2) * 1j, "b": 0.0}, TypeError,
     r"jac returned is complex \(complex128\) at x0\['w'\]"),
])
def test_a_wrong_gradient_from_jac_names_jac_and_the_leaf(jac, error, message):
    with pytest.raises(error, match=message):
        minimize(_loss, _d0(), jac=jac)


def test_a_wrong_gradient_or_product_from_fun_or_hessp_is_named():
    with pytest.raises(ValueError, match=r"fun returned \(jac=True\) has shape \(3,\) at x0;"):
        minimize(lambda x: (np.sum(x ** 2), np.ones(3)), np.ones(2), jac=True)
    with pytest.raises(ValueError, match=r"hessp returned has shape \(1,\) at x0\['w'\]"):
        minimize(_loss, _d0(), method="Newton-CG",
                 hessp=lambda p, v: {"w": np.ones(1), "b": v["b"]})


def test_a_gradient_with_its_keys_in_another_order_is_matched_by_key():
    # jac's dict has x0's keys in another insertion order: matched by key, not by position
    def jac(p):
        return {"b": 2.0 * p["b"], "w": 2.0 * (p["w"] - 3.0)}

    def fun_and_grad(p):
        return _loss(p), jac(p)

    reference = minimize(_loss, _d0(), method="BFGS")
    for result in (minimize(_loss, _d0(), method="BFGS", jac=jac),
                   minimize(fun_and_grad, _d0(), method="BFGS", jac=True)):
        assert result.success, result.message
        np.testing.assert_allclose(result.x_flat, reference.x_flat, atol=1e-6)
        np.testing.assert_allclose(result.jac, _fd_gradient(
            lambda z: _loss({"w": z[:2], "b": z[2]}), result.x_flat), atol=1e-6)


@pytest.mark.parametrize("cfun, message", [
    (lambda x: None, r"constraint 0's fun \(<lambda>\) returned None \(is a return"),
    (lambda x: (x[0], "a"), r"constraint 0's fun \(<lambda>\) returned a str"),
    (lambda x: (), r"constraint 0's fun \(<lambda>\) returned an empty tuple"),
    (lambda x: x[0].astype(int), r"constraint 0's fun \(<lambda>\) has an output of dtype int64"),
])
def test_a_constraint_returning_no_numbers_is_refused_and_named(cfun, message):
    with pytest.raises(TypeError, match=message):
        minimize(rosenbrock, np.array([-1.2, 1.0]), constraints=[{"type": "ineq", "fun": cfun}])


def test_pytree_bounds_on_one_leaf_and_a_trust_constr_callback():
    # x0 with one leaf under a dict takes bounds in its structure too
    result = minimize(lambda p: np.sum((p["w"] - 3.0) ** 2), {"w": np.zeros(2)},
                      method="L-BFGS-B", bounds={"w": (None, np.array([1.0, 5.0]))})
    np.testing.assert_allclose(result.x["w"], [1.0, 3.0], atol=1e-6)
    seen = []
    minimize(_loss, _d0(), method="trust-constr", callback=lambda x, state: seen.append(x),
             options={"maxiter": 5})
    assert seen and all(set(x) == {"w", "b"} for x in seen)
