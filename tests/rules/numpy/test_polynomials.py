import warnings

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences

from ..spec import Spec

_X = np.array([-1.0, -0.4, 0.2, 0.9, 1.5, 2.2])  # polyfit's sample points, as a constant


def _points(rng, shape):
    return np.sort(rng.uniform(-2.0, 2.0, shape)) + np.arange(shape[0]) * 0.3


def _spread(rng, shape):
    # distinct roots, far enough apart for the derivative to be moderate
    return np.arange(shape[0]) * 1.3 - 1.0 + rng.uniform(-0.2, 0.2, shape)


_PAIRS = [((3,), (3,)), ((2,), (4,)), ((4,), (2,)), ((), (3,))]

# numpy.polynomial's families: (module, the prefix of its der and int, its class)
FAMILIES = [(np.polynomial.polynomial, "poly", "Polynomial"),
            (np.polynomial.chebyshev, "cheb", "Chebyshev"),
            (np.polynomial.legendre, "leg", "Legendre"),
            (np.polynomial.laguerre, "lag", "Laguerre"),
            (np.polynomial.hermite, "herm", "Hermite"),
            (np.polynomial.hermite_e, "herme", "HermiteE")]


def _family_specs(module, prefix, cls_name):
    der, integ, cls = getattr(module, prefix + "der"), getattr(module, prefix + "int"), \
        getattr(module, cls_name)
    return [
        Spec(der, [(4,), (1,)], kwargs={"m": [0, 1, 2, 5], "scl": [1, -2.0]}),
        Spec(der, [(4, 3), (3, 4)], kwargs={"m": [2], "axis": [0, -1]},
             name=f"{pb.name_of(der)}(axis)"),
        # m at least the number of coefficients: NumPy's c[:1] * 0 (whose axis hermeder
        # leaves first), also of no coefficients
        Spec(der, [(4, 1), (4, 0), (2, 2)], kwargs={"m": [2], "axis": [-1]},
             name=f"{pb.name_of(der)}(m past the degree, axis)"),
        Spec(der, [((4,), ())], call=lambda c, scl: der(c, 2, scl),
             name=f"{pb.name_of(der)}(scl)"),
        Spec(integ, [(3,), (1,)], kwargs={"m": [0, 1, 3], "lbnd": [0, 0.5], "scl": [1, -2.0]}),
        Spec(integ, [(3, 2), (2, 3)], kwargs={"m": [2], "k": [[], [1.0, -2.0]], "axis": [0, 1]},
             name=f"{pb.name_of(integ)}(axis)"),
        Spec(integ, [((3,), (), ())], call=lambda c, k, scl: integ(c, 2, [k], 0.5, scl),
             name=f"{pb.name_of(integ)}(k, scl)"),
        Spec(integ, [((3,), ())], call=lambda c, k: integ(c, k=k),
             name=f"{pb.name_of(integ)}(scalar k)"),
        Spec(der, [(4,)], call=lambda c: cls(c, domain=[0, 2]).deriv(2).coef,
             name=f"{cls_name}.deriv"),
        Spec(integ, [(4,)], call=lambda c: cls(c, domain=[-1, 2]).integ(2, k=[1.0], lbnd=0.5).coef,
             name=f"{cls_name}.integ"),
    ]

SPECS = [
    Spec(np.polyadd, _PAIRS),
    Spec(np.polyadd, [((2,), (3,))], domain="complex", name="np.polyadd(complex)"),
    Spec(np.polysub, _PAIRS),
    Spec(np.polysub, [((3,), (2,))], domain="complex", name="np.polysub(complex)"),
    Spec(np.polymul, [((3,), (2,)), ((1,), (4,)), ((), (3,))], domain="nonzero"),
    Spec(np.polymul, [((3,), (2,))], domain="complex", name="np.polymul(complex)"),
    # polydiv: the quotient and the remainder, smooth where v's leading coefficient is not 0
    Spec(np.polydiv, [((4,), (2,)), ((3,), (3,)), ((5,), (3,)), ((2,), (4,)), ((), (1,)),
                      ((4,), ())], domain=("real", "nonzero")),
    Spec(np.polydiv, [((4,), (2,)), ((3,), (3,))], domain="complex",
         name="np.polydiv(complex)"),
    Spec(np.polydiv, [((4,), (3,))], domain=("real", "complex"),
         name="np.polydiv(real by complex)"),
    Spec(np.polyder, [(4,), (1,)], kwargs={"m": [0, 1, 2, 5]}),
    Spec(np.polyder, [(3,)], domain="complex", name="np.polyder(complex)"),
    Spec(np.polyint, [(3,), (1,)], kwargs={"m": [0, 1, 3]}),
    Spec(np.polyint, [()], kwargs={"m": [0]}, name="np.polyint(0-d, m=0)"),
    Spec(np.polyint, [(3,)], kwargs={"m": [2]}, call=lambda p, m: np.polyint(p, m, 2.5),
         name="np.polyint(k constant)"),
    # a tracked constant of integration: one, or one per integration
    Spec(np.polyint, [((3,), (2,)), ((3,), ()), ((2,), (1,))],
         call=lambda p, k: np.polyint(p, 2, k), name="np.polyint(k)"),
    Spec(np.polyint, [((3,), ())], call=lambda p, k: np.polyint(p, k=k),
         name="np.polyint(k by keyword)"),
    Spec(np.poly, [(3,), (1,)], name="np.poly(roots)"),
    Spec(np.poly, [(2,)], domain="complex", name="np.poly(complex roots)"),
    # a square matrix: its characteristic polynomial (through its eigenvalues)
    Spec(np.poly, [(3, 3), (1, 1)], domain=lambda rng, s: np.diag([1.0, 2.5, 4.0][:s[0]])
         + 0.3 * rng.standard_normal(s), name="np.poly(matrix)"),
    # roots: the eigenvalues of the companion matrix, complex in general
    Spec(np.roots, [(3,)], domain=lambda rng, s: np.poly(_spread(rng, (2,))),
         name="np.roots(real roots)"),
    Spec(np.roots, [(4,), (2,)], domain="nonzero", name="np.roots(random)"),
    Spec(np.roots, [(3,)], domain="complex", name="np.roots(complex)"),
    Spec(np.roots, [(3,)], call=lambda p: np.roots(np.concatenate([[0.0], p, [0.0, 0.0]])),
         domain="nonzero", name="np.roots(leading and trailing zeros)"),
    # polyfit: differentiable in x, y and w
    Spec(np.polyfit, [((6,), (6,)), ((6,), (6, 2))], domain=(_points, "real"),
         kwargs={"deg": [0, 1, 3]}),
    Spec(np.polyfit, [((6,), (6,), (6,))], domain=(_points, "real", "positive"),
         call=lambda x, y, w: np.polyfit(x, y, 2, w=w), name="np.polyfit(w)"),
    Spec(np.polyfit, [((6,),), ((6, 2),)], call=lambda y: np.polyfit(_X, y, 2, rcond=1e-10),
         name="np.polyfit(y, rcond)"),
    Spec(np.polyfit, [((6,), (6,), (6,)), ((6,), (6, 2), (6,))],
         domain=(_points, "real", "positive"), kwargs={"cov": [True, "unscaled"]},
         call=lambda x, y, w, cov: np.polyfit(x, y, 2, w=w, cov=cov), name="np.polyfit(cov)"),
    Spec(np.polyfit, [((6,), (6,))], domain=(_points, "real"), name="np.polyfit(full)",
         call=lambda x, y: np.polyfit(x, y, 2, full=True)[:2] + np.polyfit(x, y, 2,
                                                                             full=True)[3:4]),
    *[s for family in FAMILIES for s in _family_specs(*family)],
    Spec(np.polynomial.polynomial.polyder, [(3,)], domain="complex",
         name="np.polynomial.polynomial.polyder(complex)"),
]


@pytest.mark.parametrize("module,prefix,cls_name", FAMILIES)
def test_the_integral_of_zero_is_the_constant(module, prefix, cls_name):
    # NumPy's: a zero series of length 1 integrates to the constant alone (no new degree)
    integ = getattr(module, prefix + "int")
    out, pullback = pb.vjp(lambda c, k: integ(c, 2, [k, 3.0]), np.zeros(1), 0.0)
    np.testing.assert_array_equal(out, integ(np.zeros(1), 2, [0.0, 3.0]))
    assert [np.shape(ct) for ct in pullback(np.ones(np.shape(out)))] == [(1,), ()]


def test_polynomial_lbnd_is_a_constant():
    with pytest.raises(pb.NoRuleError, match="lbnd"):
        pb.grad(lambda b: np.sum(np.polynomial.polynomial.polyint([1.0, 2.0], lbnd=b)))(0.5)


def test_poly1d_arguments_are_refused():
    q = np.poly1d([1.0, 2.0])
    for func in (np.polyadd, np.polysub, np.polymul):
        with pytest.raises(TypeError, match="np.poly1d cannot hold tracked coefficients"):
            pb.grad(lambda p, func=func: np.sum(func(q, p)))(np.array([1.0, 3.0]))


def test_polymul_leading_zeros_are_dropped_and_get_no_gradient():
    a2 = np.array([1.0, -2.0, 0.5])

    def f(a1):
        return np.sum(np.polymul(a1, a2) ** 2)

    a1 = np.array([0.0, 0.0, 3.0, 1.0])
    assert np.polymul(a1, a2).shape == (4,)
    g = pb.grad(f)(a1)
    assert g[0] == g[1] == 0.0
    # the other coefficients: as if the zeros were not there
    np.testing.assert_allclose(g[2:], pb.grad(f)(a1[2:]))
    pb.check_grads(lambda t: np.polymul(np.concatenate([[0.0], t]), a2), a1[2:], order=2)


@pytest.mark.parametrize("p", [[1.5, -3.0, 0.0], [1.0, -3.0, 2.0, 0.0], [2.0, 1.0, 3.0, 0.0]],
                         ids=["one other root", "real roots", "complex roots"])
def test_a_zero_constant_term_moves_the_roots(p):
    # a tracked constant term at 0: the root at 0 (and the others) move with it, to second
    # order; the real roots sorted, as NumPy's order of the perturbed polynomials' roots is
    # not that of the zero root's (a test, not a spec row: Dask has no np.roots)
    p = np.array(p)
    w = 3.0 ** np.arange(len(p) - 1)

    def loss(p):
        roots = np.roots(p)
        if np.iscomplexobj(roots):
            return np.sum(np.abs(roots - 0.3) ** 2 * w)
        return np.sum(np.sort(roots) * w)

    np.testing.assert_allclose(pb.grad(loss)(p), central_differences(loss, p), rtol=1e-6)
    pb.check_grads(loss, p, order=2)


def test_roots_at_a_repeated_root_have_an_infinite_derivative():
    # (x - 1)^2: the companion matrix is defective, the roots move like sqrt(perturbation):
    # the gradient of one root is huge (or NaN), not a finite limit
    p = np.array([1.0, -2.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            g = pb.grad(lambda p: np.roots(p)[0].real)(p)
        except (np.linalg.LinAlgError, pb.LossError):
            return
    assert not np.all(np.isfinite(g)) or np.max(np.abs(g)) > 1e6


def test_polyfit_warns_as_numpy_on_a_rank_deficient_fit():
    x = np.array([1.0, 1.0, 1.0, 2.0])
    with pytest.warns(Warning, match="poorly conditioned"):
        pb.grad(lambda y: np.sum(np.polyfit(x, y, 3)))(np.arange(4.0))


def test_polynomial_code_as_users_write_it():
    x = np.linspace(-1.0, 1.0, 7)

    def loss(y):
        c = np.polyfit(x, y, 3)
        smooth = np.polyval(np.polyder(c), x)
        area = np.polyval(np.polyint(c), 1.0) - np.polyval(np.polyint(c), -1.0)
        return np.sum(smooth ** 2) + area ** 2 + np.sum(np.polymul(c, c))

    pb.check_grads(loss, np.cos(3 * x), order=2)


def test_polydiv_remainder_leading_zeros_are_dropped_and_get_no_gradient():
    v = np.array([1.0, 0.0, 1.0])
    u = np.array([1.0, 2.0, 1.0, 5.0])  # (x + 2)(x^2 + 1) + 3: the remainder is 0 x + 3
    assert np.polydiv(u, v)[1].shape == (1,)
    g = pb.grad(lambda u: np.sum(np.polydiv(u, v)[1]))(u)
    # the constant coefficient's gradient alone (it is linear in u, for a fixed v)
    other = u + np.array([0.0, 0.0, 0.5, 0.0])  # a remainder 0.5 x + 3: nothing dropped
    np.testing.assert_allclose(g, pb.grad(lambda u: np.polydiv(u, v)[1][-1])(other))


def test_polynomial_division_as_users_write_it():
    x = np.linspace(-1.0, 1.0, 5)

    def loss(u, v):
        q, r = np.polydiv(u, v)
        back = np.polyadd(np.polymul(q, v), r)  # u again
        return np.sum(np.polyval(q, x) ** 2) + np.sum(r ** 2) * np.sum(back * u)

    u, v = np.array([0.5, -1.0, 2.0, 0.3, 1.5]), np.array([1.5, 0.4, -0.7])
    pb.check_grads(loss, u, v, order=2)
    # complex coefficients: the gradient of a real loss (the module's convention)
    pb.check_grads(lambda u, v: np.sum(np.abs(np.polydiv(u, v)[0]) ** 2) + np.real(
        np.sum(np.polydiv(u, v)[1])), u + 0.5j * u[::-1], v - 0.3j, order=2)


def test_polyint_of_a_plain_polynomial_with_tracked_constants():
    # NumPy dispatches np.polyint on the polynomial only: tracked k reach the rule anyway
    p = np.array([1.0, -2.0, 3.0])
    f = lambda k: np.sum(np.polyint(p, 2, k) ** 2)  # noqa: E731
    k = np.array([0.5, -1.0])
    np.testing.assert_allclose(pb.grad(f)(k), central_differences(f, k), rtol=1e-6)
    g = lambda k: np.sum(np.polyint(np.array([1.0, 2.0]), k=k[0]) * [1.0, 2.0, 3.0])  # noqa
    np.testing.assert_allclose(pb.grad(g)(k[:1]), central_differences(g, k[:1]), rtol=1e-6)
