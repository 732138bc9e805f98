import numpy as np
import pytest

import pullback as pb
from pullback._engine import registry
from pullback._engine.records import times_singular
from pullback.rules.numpy.elementwise import SIGN_IS_PHASE, complex_sign, nan_to_num_copy

from ..spec import BINARY, UNARY, Args, Spec, check_constant, check_unreached


def _with_nonfinite(rng, shape):
    x = rng.standard_normal(shape)
    flat = x.reshape(-1)
    flat[: min(flat.size, 3)] = [np.nan, np.inf, -np.inf][: min(flat.size, 3)]
    return x


def _complex_with_nonfinite(rng, shape):
    # non-finite real parts at the front, imaginary parts at the back
    z = np.zeros(shape, dtype=complex)
    z.real, z.imag = _with_nonfinite(rng, shape), np.flip(_with_nonfinite(rng, shape))
    return z


SMALL = [(), (3,)]
COMPLEX_UNARY = [(), (2, 3)]
COMPLEX_BINARY = [((3,), (3,)), ((2, 1), (1, 3))]

SPECS = [
    Spec(np.add, BINARY, call=lambda x, y: x + y),
    Spec(np.subtract, BINARY, call=lambda x, y: x - y),
    Spec(np.multiply, BINARY, call=lambda x, y: x * y),
    Spec(np.true_divide, BINARY, domain=("real", "nonzero"), call=lambda x, y: x / y),
    Spec(np.power, BINARY, domain=("positive", "real"), call=lambda x, y: x ** y),
    Spec(np.power, UNARY, domain="real", call=lambda x: x ** np.arange(3) if np.ndim(x) else x ** 3,
         name="np.power(integer exponent)"),
    Spec(np.float_power, BINARY, domain=("positive", "real")),
    Spec(np.negative, call=lambda x: -x),
    Spec(np.positive, call=lambda x: +x),
    Spec(np.reciprocal, domain="nonzero"),
    Spec(np.absolute, domain="nonzero", call=lambda x: abs(x)),
    Spec(np.fabs, domain="nonzero"),
    Spec(np.exp),
    Spec(np.exp2),
    Spec(np.expm1),
    Spec(np.log, domain="positive"),
    Spec(np.log2, domain="positive"),
    Spec(np.log10, domain="positive"),
    Spec(np.log1p, domain="positive"),
    Spec(np.logaddexp, BINARY),
    Spec(np.logaddexp2, BINARY),
    Spec(np.sqrt, domain="positive"),
    Spec(times_singular, BINARY, domain=("nonzero", "real")),
    Spec(np.cbrt, domain="nonzero"),
    Spec(np.square),
    Spec(np.sin),
    Spec(np.cos),
    Spec(np.tan, domain="unit"),
    Spec(np.arcsin, domain="unit"),
    Spec(np.arccos, domain="unit"),
    Spec(np.arctan),
    Spec(np.arctan2, BINARY, domain="nonzero"),
    Spec(np.hypot, BINARY, domain="nonzero"),
    Spec(np.sinh),
    Spec(np.cosh),
    Spec(np.tanh),
    Spec(np.arcsinh),
    Spec(np.arccosh, domain="gt1"),
    Spec(np.arctanh, domain="unit"),
    Spec(np.deg2rad),
    Spec(np.radians),
    Spec(np.rad2deg),
    Spec(np.degrees),
    Spec(np.maximum, BINARY),
    Spec(np.minimum, BINARY),
    Spec(np.fmax, BINARY),
    Spec(np.fmin, BINARY),
    Spec(np.copysign, BINARY, domain="nonzero"),
    Spec(np.fmod, BINARY, domain=("real", "nonzero")),
    Spec(np.remainder, BINARY, domain=("real", "nonzero"), call=lambda x, y: x % y),
    Spec(np.heaviside, BINARY),
    Spec(np.ldexp, UNARY, call=lambda x: np.ldexp(x, 3)),
    Spec(np.ldexp, [(2, 3)], call=lambda x: np.ldexp(x, np.array([-2, 0, 5])),
         name="np.ldexp(an exponent per column)"),
    Spec(np.nextafter, BINARY),
    Spec(np.divmod, BINARY, domain=("real", "nonzero"), call=lambda x, y: np.divmod(x, y)[1]),
    # the quotient is a constant: the product's derivative is quotient * (remainder's)
    Spec(np.divmod, BINARY, domain=("real", "nonzero"), name="np.divmod(both outputs)",
         call=lambda x, y: np.multiply(*np.divmod(x, y))),
    Spec(np.frexp, UNARY, domain="nonzero", call=lambda x: np.frexp(x)[0]),
    Spec(np.frexp, UNARY, domain="nonzero", name="np.frexp(both outputs)",
         call=lambda x: np.frexp(x)[0] * np.frexp(x)[1]),
    Spec(np.i0, UNARY),
    Spec(np.i0, [(4,)], domain=lambda rng, s: rng.uniform(8.5, 12.0, s) * rng.choice([-1, 1], s),
         name="np.i0(beyond 8)"),
    # at 0 (and -0.0), where NumPy's |x| has abs's kink: i0''(0) = 1/2, not 0
    Spec(np.i0, [(3,)], domain=lambda rng, s: np.array([0.0, -0.0, 0.0])[:s[0]],
         name="np.i0(0)"),
    Spec(np.modf, UNARY, call=lambda x: np.modf(x)[0]),
    # the whole part is piecewise constant: its cotangent adds nothing
    Spec(np.modf, UNARY, name="np.modf(both outputs)", call=lambda x: np.multiply(*np.modf(x))),
    Spec(np.clip, [(2, 3)], kwargs={"a_min": [-0.5, None], "a_max": [0.5]}),
    Spec(np.clip, [((2, 3), (), (3,))], call=lambda x, lo, hi: np.clip(x, lo - 1, hi + 1),
         name="np.clip(tracked bounds)"),
    Spec(np.sinc),
    # finite replacements: the default +-1.8e308 would swamp finite differences
    Spec(np.nan_to_num, [(4,), (2, 3)], domain=_with_nonfinite,
         kwargs={"nan": [0.0, 2.0], "posinf": [5.0], "neginf": [-5.0]}),
    # tracked replacement values, given by position and by keyword
    Spec(nan_to_num_copy, [((4,), (), (), ())],
         domain=(_with_nonfinite, "real", "real", "real")),
    Spec(np.nan_to_num, [((4,), (), (), ())], domain=(_with_nonfinite, "real", "real", "real"),
         call=lambda x, a, b, c: np.nan_to_num(x, True, a, b, c),
         name="np.nan_to_num(tracked replacements)"),
    Spec(np.nan_to_num, [((2, 3), ())], domain=(_with_nonfinite, "real"),
         call=lambda x, a: np.nan_to_num(x, nan=a, posinf=5.0, neginf=a * 2),
         name="np.nan_to_num(tracked nan=)"),
    Spec(np.conjugate, SMALL),
    Spec(np.real, SMALL),
    Spec(np.imag, SMALL),
    Spec(np.angle, SMALL, domain="nonzero"),
]

# the complex-capable functions, checked against finite differences in both the real and
# the imaginary directions (ChainRules' convention: the gradient is dL/dRe z + i dL/dIm z)
SPECS += [Spec(f, COMPLEX_BINARY, domain="complex", name=f"np.{f.__name__}(complex)")
          for f in (np.add, np.subtract, np.multiply, np.true_divide, np.power,
                    np.float_power)]
SPECS += [Spec(f, COMPLEX_UNARY, domain="complex", name=f"np.{f.__name__}(complex)")
          for f in (np.negative, np.positive, np.reciprocal, np.exp, np.exp2, np.expm1,
                    np.log, np.log2, np.log10, np.log1p, np.sqrt, np.square, np.sin, np.cos,
                    np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
                    np.arcsinh, np.arccosh, np.arctanh, np.sinc)]
SPECS += [Spec(f, COMPLEX_UNARY, domain="complex", name=f"np.{f.__name__}(complex)")
          for f in (np.conjugate, np.real, np.imag, np.absolute, np.angle)]
SPECS += [Spec(np.nan_to_num, [(4,), (2, 3)], name="np.nan_to_num(complex)",
               domain=_complex_with_nonfinite,
               kwargs={"posinf": [5.0], "neginf": [-5.0]}),
          Spec(np.nan_to_num, [((2, 3), ())], domain=(_complex_with_nonfinite, "real"),
               call=lambda z, a: np.nan_to_num(z, True, a, -a, 3.0),
               name="np.nan_to_num(complex, tracked replacements)")]
SPECS += [Spec(np.real_if_close, COMPLEX_UNARY, domain="complex",
               name="np.real_if_close(complex)"),
          Spec(np.real_if_close, SMALL, name="np.real_if_close(real)"),
          # imaginary parts within tol: the result is the real part
          Spec(np.real_if_close, SMALL, call=lambda x: np.real_if_close(x + 1e-20j),
               name="np.real_if_close(nearly real)"),
          Spec(np.real_if_close, SMALL, call=lambda x: np.real_if_close(x * (1 + 1e-20j)) ** 2,
               name="np.real_if_close(nearly real, squared)")]
SPECS += [Spec(np.angle, COMPLEX_UNARY, domain="complex", kwargs={"deg": [True]},
               name="np.angle(complex, deg)")]
# np.sign: a constant of a real input; NumPy 2's z / |z| of a complex one (NumPy 1's sign
# of the first nonzero part is piecewise constant: its row checks a zero gradient)
SPECS += [Spec(np.sign, UNARY, domain="nonzero", name="np.sign(real)"),
          Spec(np.sign, COMPLEX_UNARY, domain="complex", name="np.sign(complex)")]
if SIGN_IS_PHASE:
    SPECS += [Spec(complex_sign, COMPLEX_UNARY, domain="complex",
                   name="complex_sign (np.sign of complex input)")]

# extreme magnitudes, scaled so that value and first derivatives are of order 1: x^2 + y^2
# and a complex z * z underflow or overflow there, where the functions themselves do not.
# The second derivatives in the unscaled arguments (1 / r^2: 1e400) are not floats
EXTREME = "the second derivative in the unscaled argument, ~1e+-400, is no float"
SPECS += [Spec(np.arctan2, BINARY, domain="nonzero", kwargs={"s": [1e-200, 1e-160, 1e200]},
               call=lambda y, x, s: np.arctan2(s * y, s * x), name="np.arctan2(extreme)",
               order=1, why=EXTREME),
          Spec(np.angle, COMPLEX_UNARY, domain="complex", kwargs={"s": [1e-200, 1e200]},
               call=lambda z, s: np.angle(s * z), name="np.angle(extreme)", order=1,
               why=EXTREME)]
SPECS += [Spec(f, COMPLEX_UNARY, domain="complex", order=1, why=EXTREME,
               call=lambda z, f=f: 1e-200j * f(1e200 * z) if f in (np.arctan, np.arctanh)
               else f(1e200 * z), name=f"np.{f.__name__}(complex, 1e200)")
          for f in (np.arcsin, np.arccos, np.arctan, np.arcsinh, np.arctanh)]

_X, _Y = np.array([1.5, -2.5, 0.0]), np.array([1.0, 2.0, 3.0])
NONDIFF = {func: (_X,) if getattr(func, "nin", 1) == 1 else (_X, _Y) for func in [
    np.floor_divide, np.floor, np.ceil, np.rint, np.trunc, np.fix, np.round,
    np.around, np.equal, np.not_equal, np.less, np.less_equal, np.greater,
    np.greater_equal, np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.isnan, np.isinf, np.isfinite, np.signbit, np.spacing]}


def test_sign_of_a_real_input_is_a_constant():
    check_constant(np.sign, Args((_X,)))
    z = np.array([0.3 + 0.4j, 0j])
    grad = pb.grad(lambda z: np.sum(np.real(np.sign(z)) + np.imag(np.sign(z))))(z)
    assert grad[1] == 0  # at 0: gradient 0, as for abs
    if not SIGN_IS_PHASE:  # NumPy 1: piecewise constant
        assert grad[0] == 0


def test_divide_aliases_are_one_rule():
    assert np.divide is np.true_divide and np.abs is np.absolute
    assert np.mod is np.remainder and np.conj is np.conjugate
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(pb.grad(lambda x: np.sum(np.divide(x, 4.0)))(x), [0.25, 0.25])
    np.testing.assert_allclose(pb.grad(lambda x: np.sum(np.abs(x)))(x), [1.0, -1.0])


# ---------------------------------------------------------------------------- conventions

def _grad_and_second(f, x):
    g = pb.grad(lambda x: np.sum(f(x)))
    return g(x), pb.grad(lambda x: np.sum(g(x)))(x)


@pytest.mark.parametrize("f", [np.abs, np.fabs])
def test_abs_at_zero_has_zero_gradient(f):
    x = np.array([0.0, 1.5, -2.0])
    g, g2 = _grad_and_second(f, x)
    np.testing.assert_array_equal(g, [0.0, 1.0, -1.0])
    np.testing.assert_array_equal(g2, [0.0, 0.0, 0.0])


def test_complex_abs_at_zero_has_zero_gradient():
    z = np.array([0j, 3 + 4j])
    np.testing.assert_allclose(pb.grad(lambda z: np.sum(np.abs(z)))(z), [0, 0.6 + 0.8j])


def test_complex_abs_at_zero_has_zero_second_derivative():
    # as abs of a real x at 0 (a minimum): second derivative 0, in every direction (the
    # curvature elsewhere is the spec rows' np.absolute(complex))
    z = np.array([0j, 3 + 4j])
    for v in (np.array([1.0 + 0j, 0j]), np.array([1j, 0j])):
        np.testing.assert_array_equal(pb.hvp(lambda z: np.sum(np.abs(z)), (z,), (v,))[0], [0, 0])


@pytest.mark.parametrize("f", [np.maximum, np.minimum, np.fmax, np.fmin])
def test_ties_share_the_gradient(f):
    x = np.array([1.0, 2.0, -3.0])
    gx, gy = pb.grad(lambda x, y: np.sum(f(x, y)), argnums=(0, 1))(x, x.copy())
    np.testing.assert_array_equal(gx, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(gy, [0.5, 0.5, 0.5])


@pytest.mark.parametrize("f", [np.fmax, np.fmin])
def test_fmax_fmin_nan_loses(f):
    x, y = np.array([1.0, np.nan]), np.array([np.nan, 2.0])
    gx, gy = pb.grad(lambda x, y: np.sum(f(x, y)), argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(gx, [1.0, 0.0])
    np.testing.assert_array_equal(gy, [0.0, 1.0])


_FLAT = np.array([1.0, -1.0, 2.0, -3.0])  # entries a selection may leave out
_OTHER = np.array([0.0, 0.5, 2.0, 0.0])  # ties at 2.0


@pytest.mark.parametrize("f, args", [
    (np.maximum, (_FLAT, _OTHER)),
    (np.minimum, (_FLAT, _OTHER)),
    (np.fmax, (_FLAT, _OTHER)),
    (np.fmin, (_FLAT, _OTHER)),
    (np.fmax, (_FLAT, np.array([np.nan, 0.5, np.nan, 1.0]))),  # a NaN loses
    (np.fmin, (np.array([np.nan, 0.5, np.nan, 1.0]), _FLAT)),
    (np.copysign, (_FLAT, _OTHER - 0.25)),  # constant in the sign's source
    (np.heaviside, (_FLAT * np.array([1.0, 1.0, 0.0, 1.0]), _OTHER + 0.3)),  # h0 at x == 0
    (np.nextafter, (_FLAT, _OTHER + 0.3)),
    (np.fmod, (np.array([0.5, -2.5, 7.0, 0.0]), np.array([3.0, 3.0, -2.0, 1.5]))),
    (np.remainder, (np.array([0.5, 2.5, 7.0, 0.0]), np.array([3.0, 3.0, -2.0, 1.5]))),
    (lambda x, lo, hi: np.clip(x, lo, hi), (_FLAT, _OTHER - 1.0, _OTHER + 0.7)),
    (lambda x, y: np.where(x > 0, x, y), (_FLAT, _OTHER)),
    (lambda x: np.nan_to_num(x, posinf=5.0), (np.array([1.0, np.inf, np.nan, -2.0]),)),
], ids=["maximum", "minimum", "fmax", "fmin", "fmax-nan", "fmin-nan", "copysign",
        "heaviside", "nextafter", "fmod", "remainder", "clip", "where", "nan_to_num"])
def test_an_infinite_cotangent_reaches_only_what_the_output_depends_on(f, args):
    # an element a selection leaves out gets exactly 0, even from an inf or NaN cotangent
    with np.errstate(invalid="ignore"):
        assert check_unreached(f, *args) > 0


@pytest.mark.parametrize("f", [
    lambda x: np.sqrt(np.maximum(x, 0.0)), lambda x: np.sqrt(-np.minimum(-x, 0.0)),
    lambda x: np.sqrt(np.fmax(x, 0.0)), lambda x: np.sqrt(np.clip(x, 0.0, None)),
    lambda x: np.sqrt(np.fmod(np.maximum(x, 0.0), 3.0)),
], ids=["maximum", "minimum", "fmax", "clip", "fmod"])
def test_selections_under_a_singular_function_are_exact(f):
    # sqrt(maximum(x, 0)) at x = -1: maximum is flat there, sqrt'(0) = inf, gradient 0;
    # elsewhere finite differences of the same function
    x = np.array([-1.0, 4.0, -2.5, 0.25])
    with np.errstate(divide="ignore", invalid="ignore"):
        grad = pb.grad(lambda x: np.sum(f(x)))(x)
    numeric = (f(x + 1e-7) - f(x - 1e-7)) / 2e-7
    np.testing.assert_array_equal(grad[[0, 2]], 0.0)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6)


_SELECTIONS = [np.maximum, np.minimum, np.fmax, np.fmin, np.copysign, np.heaviside,
               np.nextafter, np.fmod, np.remainder]


@pytest.mark.parametrize("func", _SELECTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("const", [0, 0.0, 2, -1.5])
@pytest.mark.parametrize("side", [0, 1])
def test_a_python_constant_on_either_side_of_a_selection(func, const, side):
    # the rules of the functions that select (not table rows) take Python constants too
    def f(x):
        return func(x, const) if side == 0 else func(const, x)

    x = np.array([0.7, 1.3])
    with np.errstate(all="ignore"):
        value = f(x)
        if not np.all(np.isfinite(value)):
            return  # (fmod(x, 0) is nan)
        numeric = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
        (g,) = pb.vjp(f, x)[1](np.ones(2))
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def _safe(x):
    return np.where(x < 100, x, 0.0)


@pytest.mark.parametrize("f, x", [
    (lambda x: np.where(x < 100, np.exp(_safe(x)), 0.0), [1000.0, 1.0]),
    (lambda x: np.where(x < 100, np.cosh(_safe(x)), 0.0), [1000.0, 1.0]),
    (lambda x: np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0), [-1.0, 0.5, 2.0]),
    (lambda x: np.where(x < 100, x * np.exp(_safe(x)), 0.0), [1000.0, 1.0]),
], ids=["exp", "cosh", "x-log-x", "x-exp"])
def test_the_double_where_keeps_an_overflowing_branch_out(f, x):
    # an inf or NaN in the branch np.where does not take reaches the gradient through a
    # product or a row that is not singular (0 * inf); the documented fix is to keep the
    # branch's input where it is finite (docs/conventions.md): finite differences
    x = np.array(x)
    grad = pb.grad(lambda x: np.sum(f(x)))(x)
    numeric = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
    assert grad[0] == 0
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("singular", [np.sqrt, np.arcsin, lambda z: z ** 0.5],
                         ids=["sqrt", "arcsin", "power"])
def test_a_singular_point_leaves_the_other_second_derivatives_alone(singular):
    # z0 sits where the derivative is infinite; f is smooth in z1..z3, whose block of the
    # Hessian must match nested finite differences (the zero cotangent of z0's slot met
    # the infinite derivative in the second pass: NaN in H[2, 2], though f is linear in z2)
    def f(z):
        return singular(z[0]) * z[2] + singular(z[1]) * z[3]

    z = np.array([1.0 if singular is np.arcsin else 0.0, 0.5, 2.0, 3.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        H = pb.hessian(f)(z)
        Hv = pb.hvp(f, (z,), (np.eye(4)[1],))[0]
    h, numeric = 1e-4, np.zeros((3, 3))
    for i, j in np.ndindex(3, 3):
        ei, ej = np.eye(4)[i + 1] * h, np.eye(4)[j + 1] * h
        numeric[i, j] = (f(z + ei + ej) - f(z + ei - ej) - f(z - ei + ej)
                         + f(z - ei - ej)) / (4 * h * h)
    np.testing.assert_allclose(H[1:, 1:], numeric, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(Hv[1:], numeric[0], rtol=1e-5, atol=1e-6)


def test_sqrt_derivative_at_zero_is_inf():
    with np.errstate(divide="ignore"):
        assert pb.grad(np.sqrt)(0.0) == np.inf


@pytest.mark.parametrize("f, want, want2", [
    (lambda x: np.where(x > 0, np.sqrt(x), 0.0), [0, 0, 0.25], [0, 0, -1 / 32]),
    (lambda x: np.where(x > 0, np.log(x), 0.0), [0, 0, 0.25], [0, 0, -1 / 16]),
    (lambda x: np.where(x > 0, x ** 0.5, 0.0), [0, 0, 0.25], [0, 0, -1 / 32]),
    (lambda x: np.where(x != 0, 1 / x, 0.0), [-1, 0, -1 / 16], [-2, 0, 2 / 64]),
], ids=["sqrt", "log", "power", "reciprocal"])
def test_where_hides_the_branch_not_taken(f, want, want2):
    # a zero cotangent gives zero even where the local derivative is inf or NaN
    x = np.array([-1.0, 0.0, 4.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        g, g2 = _grad_and_second(f, x)
    np.testing.assert_allclose(g, want)
    np.testing.assert_allclose(g2, want2)


def test_power_at_zero_base():
    # d x**y / dy = log(x) x**y -> 0 at x = 0 (y > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        assert pb.grad(lambda y: 0.0 ** y)(2.0) == 0.0
        gx, gy = pb.grad(lambda x, y: np.sum(x ** y), argnums=(0, 1))(
            np.zeros(3), np.array([0.5, 1.0, 2.0]))
        # x ** 0 is constant: derivative 0 at x = 0, not 0 * inf
        g0 = pb.grad(lambda x: np.sum(x ** np.arange(3)))(0.0)
    np.testing.assert_array_equal(gx, [np.inf, 1.0, 0.0])
    np.testing.assert_array_equal(gy, [0.0, 0.0, 0.0])
    assert g0 == 1.0


def test_clip_at_bounds_passes_gradient_to_x():
    x = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    g = pb.grad(lambda x: np.sum(np.clip(x, -0.5, 0.5)))(x)
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0])
    lo, hi = np.array(-0.5), np.array(0.5)
    glo, ghi = pb.grad(lambda lo, hi: np.sum(np.clip(x, lo, hi)), argnums=(0, 1))(lo, hi)
    assert (glo, ghi) == (1.0, 1.0)


@pytest.mark.parametrize("f", [np.hypot, np.arctan2])
def test_hypot_and_arctan2_at_the_origin_have_zero_gradient(f):
    assert pb.grad(f, argnums=(0, 1))(0.0, 0.0) == (0.0, 0.0)


# sinc near zero, to second order: the points around |x| = 1e-3 and 0 itself
SPECS += [Spec(np.sinc, [(5,)], domain=lambda rng, s: np.array([0.0, 1e-5, 9e-4, 1.1e-3, 0.3]),
               name="np.sinc(near 0)")]


def test_sinc_has_zero_gradient_at_zero():
    assert pb.grad(np.sinc)(0.0) == 0.0


def test_heaviside_gradient_goes_to_h0_at_zero():
    x = np.array([-1.0, 0.0, 2.0])
    gx, gh = pb.grad(lambda x, h: np.sum(np.heaviside(x, h)), argnums=(0, 1))(x, 0.5)
    np.testing.assert_array_equal(gx, [0.0, 0.0, 0.0])
    assert gh == 1.0


# ---------------------------------------------------------------------------- complex, integers

@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.abs(np.exp(1j * x) + 0.5) ** 2),
    lambda x: np.sum(np.real(np.exp(1j * x) * np.conj(np.sin(x + 2j * x)))),
    lambda x: np.sum(np.imag(np.log(x + 1j * x ** 2))),
    lambda x: np.sum(np.angle(np.cos(x) + 1j * x)),
    lambda x: np.sum(np.sqrt(x + 1j) * np.conj(np.square(x - 2j))).real,
], ids=["abs-exp", "real-conj", "imag-log", "angle", "sqrt-square"])
def test_complex_intermediates_of_real_input(f):
    x = np.array([0.3, -1.2, 2.0])
    pb.check_grads(f, x, order=2)


def test_tracked_float_with_integer_arrays():
    n = np.arange(4)
    assert (n ** 2).dtype.kind == "i"  # untracked integers just compute
    w = np.array([1.5, -0.5, 2.0, 3.0])
    np.testing.assert_array_equal(pb.grad(lambda w: np.sum(w * n))(w), n.astype(float))
    np.testing.assert_allclose(pb.grad(lambda w: np.sum(w ** n))(w), n * w ** (n - 1.0))
    np.testing.assert_allclose(pb.grad(lambda w: np.sum(n / w))(w), -n / w ** 2)
    with pytest.raises(TypeError, match="dtype int"):
        pb.grad(lambda n: np.sum(n * w))(n)


SCALAR_COMPLEX = [
    lambda x: np.angle(x * 1j + 1.0),
    lambda x: np.angle(x * 1j + 1.0, deg=True),
    lambda x: np.real(x * (1 + 2j)) ** 2,
    lambda x: np.imag(x * (1 + 2j)) ** 2,
    lambda x: np.imag(x * 1j) * x,
    lambda x: np.real(np.conj(x * (1 + 2j)) * (x * 3j + 1.0)),
    lambda x: np.real(np.conjugate(x + 2j) * 1j) * x,
    lambda x: np.abs(x * (1 + 2j) + 1.0),
    lambda x: np.abs(x + 1j) ** 3,
]
SCALAR_COMPLEX_IDS = ["angle", "angle-deg", "real", "imag", "imag-times-x", "conj",
                      "conjugate", "abs", "abs-cubed"]


@pytest.mark.parametrize("f", SCALAR_COMPLEX, ids=SCALAR_COMPLEX_IDS)
@pytest.mark.parametrize("x", [0.5, np.float64(0.5)], ids=["float", "float64"])
def test_complex_python_scalars_of_real_input(f, x):
    # x * 1j on a scalar is a Python complex, or a NumPy scalar whose products with 1j are
    pb.check_grads(f, x, order=3)
    np.testing.assert_allclose(pb.hessian(f)(x), pb.grad(pb.grad(f))(x))


@pytest.mark.parametrize("f", [
    lambda z: np.angle(z), lambda z: np.real(z) ** 2, lambda z: np.imag(z) ** 2,
    lambda z: np.real(np.conj(z) * z * z), lambda z: np.abs(z) ** 3,
    lambda z: z.real ** 2 + z.imag ** 3,
], ids=["angle", "real", "imag", "conj", "abs", "attributes"])
def test_python_complex_input(f):
    pb.check_grads(f, 0.5 + 1j, order=3)


_TWO_ARGUMENT_ROWS = sorted(
    (f for f, row in registry.rules.items()
     if isinstance(f, np.ufunc) and f.nin == 2 and type(row).__name__ == "Elementwise"),
    key=lambda f: f.__name__)


@pytest.mark.parametrize("func", _TWO_ARGUMENT_ROWS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("const", [0, 0.0, 2, -1.5])
@pytest.mark.parametrize("side", [0, 1])
@pytest.mark.filterwarnings("ignore:floating point number truncated")  # (yn of order -1.5)
def test_a_python_constant_on_either_side_of_a_row(func, const, side):
    # a derivative computed with a Python scalar must have NumPy's semantics (1 / 0 is
    # inf, not ZeroDivisionError); away from singular points it matches finite differences
    def f(x):
        return func(x, const) if side == 0 else func(const, x)

    if registry.rules[func].derivs[side] is None:  # (a Bessel function's order)
        with pytest.raises(pb.NoRuleError, match=f"argument {side}"):
            pb.grad(lambda x: np.sum(f(x)), losscheck=False)(np.array([0.7, 1.3]))
        return
    with np.errstate(all="ignore"):
        for x in (np.array([0.0, 1.0]), 0.0):  # singular points: no exception
            out, vjp_fn = pb.vjp(f, x)
            vjp_fn(np.ones(np.shape(out)))
        x = np.array([0.7, 1.3])
        value = f(x)
        if value.dtype.kind != "f" or not np.all(np.isfinite(value)):
            return  # outside the function's real domain there (np.power(-1.5, x))
        numeric = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
        (g,) = pb.vjp(f, x)[1](np.ones(2))
    np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)


def test_division_by_a_python_number_keeps_a_long_doubles_precision():
    # 1 / 3.0 at float64 precision would be some 500 long double ulps off
    x = np.longdouble(1) + np.longdouble(2) ** -60
    assert pb.grad(lambda x: x / 3.0)(x) == 1 / np.longdouble(3)


def test_complex_sqrt_at_zero_is_a_branch_point():
    # docs/conventions.md: no finite choice exists, unlike the real sqrt's one-sided +inf
    with np.errstate(all="ignore"):
        g = pb.grad(lambda z: np.real(np.sqrt(z)))(np.complex128(0.0))
        assert np.isnan(g.real) or np.isnan(g.imag) or np.isinf(abs(g))
        assert pb.grad(lambda x: np.sqrt(x))(0.0) == np.inf
