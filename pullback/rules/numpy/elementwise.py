"""Elementwise functions, declared as data: each row names the function and its local
derivative for each argument, as a function of the answer and the arguments.

Conventions (docs/conventions.md): abs'(0) = 0; ties of maximum/minimum/fmax/fmin share
the gradient equally; sqrt'(0) = +inf, and on rows marked ``singular`` (a derivative
infinite at a finite point of the domain) a zero cotangent still gives zero where the
derivative is infinite or NaN; clip at a bound passes the gradient to x.
Complex rows give the holomorphic derivative f'(z) and the engine conjugates it
(ChainRules); the non-holomorphic ones (conj, real, imag, angle, sign) are rules.

A function that passes its cotangent to some elements and not others (maximum's winner,
heaviside's h0, clip) selects with np.where, not by a product with a 0/1 mask: an element
that gets nothing gets exactly 0, also where the cotangent is inf or NaN (a product would
give NaN there, 0 * inf, where the derivative is 0). Such functions are rules, not rows,
as the engine multiplies a row's cotangent by its local derivative.
"""

from typing import Any

import numpy as np

from ...extend import (
    MINUS_ONE,
    ONE,
    Tracked,
    composite,
    elementwise,
    is_foreign,
    nondifferentiable,
    on_backend,
    plain,
    primitive,
    rrule,
)
from .._util import zero_of

LN2 = np.log(2.0)
LN10 = np.log(10.0)
RAD_PER_DEG = np.pi / 180.0
DEG_PER_RAD = 180.0 / np.pi


def _nonzero(d):
    """``d`` with its zeros replaced by ones: a denominator for a 0/0 whose convention is 0."""
    return np.where(d == 0, 1, d)


def _abs_deriv(ans, x):
    if np.iscomplexobj(plain(x)):
        # d|z|: the cotangent of z is g * z / |z|; the engine conjugates. At z = 0 (the
        # cone's tip, a minimum) gradient 0 and second derivative 0, as abs of a real x:
        # np.where, so that z / 1 there is no derivative of its own
        return np.where(np.equal(plain(ans), 0), 0, np.conjugate(x) / _nonzero(ans))
    return np.sign(x)  # abs'(0) = 0


def _power_dbase(ans, x, y):
    if not (isinstance(y, Tracked) and not y.traced):  # (a pb.jit trace's: a constant)
        # x ** 0 is the constant 1: its derivative is 0 even at x = 0 (no 0 * inf there)
        return y * np.power(x, on_backend(np.where(np.equal(y, 0), 0, np.subtract(y, 1)), x))
    return y * np.power(x, y - 1)


def _power_dexponent(ans, x, y):
    # d x**y / dy = log(x) x**y; at x = 0 the limit for y > 0 is 0
    return np.where(x == 0, 0, np.log(_nonzero(x)) * ans)


def _arctan2_dy(ans, y, x):
    # x / (x^2 + y^2) as (x / r) / r, r = hypot(x, y): x^2 + y^2 underflows below 1e-154
    # and overflows above 1e154, r does not; 0 at the origin
    r = _nonzero(np.hypot(x, y))
    return x / r / r


def _arctan2_dx(ans, y, x):
    r = _nonzero(np.hypot(x, y))
    return -y / r / r


def _one_plus_square_root(x):
    """``sqrt(1 + x^2)`` without overflow: hypot(1, x) for a real x, and for a complex one
    sqrt(1 + ix) sqrt(1 - ix), its principal branch (the same cuts, 1 at 0)."""
    if not np.iscomplexobj(plain(x)):
        return np.hypot(1.0, x)
    return np.sqrt(1 + x * IMAG_UNIT) * np.sqrt(1 - x * IMAG_UNIT)


def _reciprocal_of_one_plus(x, sign):
    """``1 / (1 + sign * x^2)``; for |x| > 1 as ``w^2 / (w^2 + sign)``, w = 1 / x, where a
    complex x^2 would overflow to inf - inf = NaN (|x| ~ 1e200)."""
    if not np.iscomplexobj(plain(x)):  # (a real x * x overflows to inf: 1 / inf = 0)
        return 1 / (1 + sign * (x * x))
    big = np.abs(plain(x)) > 1
    w = 1 / np.where(big, x, 1)
    small = np.where(big, 0, x)
    return np.where(big, w * w / (w * w + sign), 1 / (1 + sign * (small * small)))


elementwise(np.add, ONE, ONE)
elementwise(np.subtract, ONE, MINUS_ONE)
elementwise(np.multiply, lambda ans, x, y: y, lambda ans, x, y: x)
# (np.true_divide: a constant y may be a Python 0, whose 1 / y raises where NumPy's is inf;
# the one of ans's dtype keeps a long double's precision where y is a Python number)
elementwise(np.true_divide, lambda ans, x, y: np.true_divide(ans.dtype.type(1), y),
            lambda ans, x, y: -ans / y, singular=True)
elementwise(np.power, _power_dbase, _power_dexponent, singular=True)
elementwise(np.float_power, _power_dbase, _power_dexponent, singular=True)
elementwise(np.negative, MINUS_ONE)
elementwise(np.positive, ONE)
elementwise(np.reciprocal, lambda ans, x: -ans * ans, singular=True)
elementwise(np.absolute, _abs_deriv)
elementwise(np.fabs, lambda ans, x: np.sign(x))  # fabs'(0) = 0
# exp and its kin are not singular rows, though they overflow: a singular row's check
# doubles an exp node's backward (3.3 to 6.6 us on 8 x 8), and exp is on small_mlp's path.
# So an overflowed branch np.where did not take gives 0 * inf = NaN there, as in JAX and
# PyTorch; the fix is the double where, np.exp(np.where(x < 100, x, 0.0)) (conventions.md)
elementwise(np.exp, lambda ans, x: ans)
elementwise(np.exp2, lambda ans, x: ans * LN2)
elementwise(np.expm1, lambda ans, x: ans + 1)
elementwise(np.log, lambda ans, x: 1 / x, singular=True)
elementwise(np.log2, lambda ans, x: 1 / (x * LN2), singular=True)
elementwise(np.log10, lambda ans, x: 1 / (x * LN10), singular=True)
elementwise(np.log1p, lambda ans, x: 1 / (1 + x), singular=True)
elementwise(np.logaddexp, lambda ans, x, y: np.exp(x - ans), lambda ans, x, y: np.exp(y - ans))
elementwise(np.logaddexp2, lambda ans, x, y: np.exp2(x - ans),
            lambda ans, x, y: np.exp2(y - ans))
elementwise(np.sqrt, lambda ans, x: 0.5 / ans, singular=True)  # sqrt'(0) = +inf


elementwise(np.cbrt, lambda ans, x: 1 / (3 * ans * ans), singular=True)
elementwise(np.square, lambda ans, x: 2 * x)
elementwise(np.sin, lambda ans, x: np.cos(x))
elementwise(np.cos, lambda ans, x: -np.sin(x))
elementwise(np.tan, lambda ans, x: 1 + ans * ans)
# sqrt(1 - x) sqrt(1 + x), not sqrt(1 - x * x): the same principal branch (the same cuts,
# 1 at 0), exact near x = +-1, and no overflow of a complex x * x (|x| ~ 1e200)
elementwise(np.arcsin, lambda ans, x: 1 / (np.sqrt(1 - x) * np.sqrt(1 + x)), singular=True)
elementwise(np.arccos, lambda ans, x: -1 / (np.sqrt(1 - x) * np.sqrt(1 + x)), singular=True)
elementwise(np.arctan, lambda ans, x: _reciprocal_of_one_plus(x, 1), singular=True)
elementwise(np.arctan2, _arctan2_dy, _arctan2_dx)
elementwise(np.hypot, lambda ans, x, y: x / _nonzero(ans),  # 0 at the origin, like norm
            lambda ans, x, y: y / _nonzero(ans))
elementwise(np.sinh, lambda ans, x: np.cosh(x))
elementwise(np.cosh, lambda ans, x: np.sinh(x))
elementwise(np.tanh, lambda ans, x: 1 - ans * ans)
elementwise(np.arcsinh, lambda ans, x: 1 / _one_plus_square_root(x), singular=True)
# sqrt(x - 1) sqrt(x + 1), not sqrt(x * x - 1): the principal branch for complex x
elementwise(np.arccosh, lambda ans, x: 1 / (np.sqrt(x - 1) * np.sqrt(x + 1)), singular=True)
elementwise(np.arctanh, lambda ans, x: _reciprocal_of_one_plus(x, -1), singular=True)
elementwise(np.deg2rad, lambda ans, x: RAD_PER_DEG)
elementwise(np.radians, lambda ans, x: RAD_PER_DEG)
elementwise(np.rad2deg, lambda ans, x: DEG_PER_RAD)
elementwise(np.degrees, lambda ans, x: DEG_PER_RAD)


# ---------------------------------------------------------------------------- selections

def _winner(g, first, tie):
    """The cotangent of one argument of maximum, minimum, fmax or fmin: ``g`` where that
    argument is the one returned (``first``), half of it at a tie (ties share), and
    exactly 0 elsewhere, also where ``g`` is inf or NaN (np.where, not a 0/1 product;
    the engine casts the cotangent to the argument's dtype)."""
    ct = np.where(first, g, 0.0)
    if tie.__class__ is not np.ndarray and is_foreign(tie) or np.any(tie):
        ct = np.where(tie, 0.5 * g, ct)
    return ct


def _extremum_rule(func, first):
    """The rule of ``func`` (maximum, minimum, fmax, fmin), whose answer is its first
    argument where ``first(a, b)`` holds for the plain arguments."""

    def extremum_rule(x1, x2, /):
        def extremum_pullback(g):
            a, b = plain(x1), plain(x2)
            tie = np.equal(a, b)
            return (lambda: _winner(g, first(a, b), tie),
                    lambda: _winner(g, first(b, a), tie))

        return func(x1, x2), extremum_pullback

    return extremum_rule


rrule(np.maximum, batched=True)(_extremum_rule(np.maximum, np.greater))
rrule(np.minimum, batched=True)(_extremum_rule(np.minimum, np.less))
# as maximum and minimum, but a NaN loses: fmax(x, nan) = x
rrule(np.fmax, batched=True)(_extremum_rule(np.fmax, lambda a, b: np.isnan(b) | np.greater(a, b)))
rrule(np.fmin, batched=True)(_extremum_rule(np.fmin, lambda a, b: np.isnan(b) | np.less(a, b)))


@rrule(np.copysign, batched=True)
def copysign_rule(x1, x2, /):
    def copysign_pullback(g):
        # copysign(x, y) = |x| sign(y): +-1 in x, abs'(0) = 0 (exactly 0 at x = 0), and
        # piecewise constant in y, which gives only the sign
        x = plain(x1)
        ct = g * (np.sign(x) * np.copysign(1.0, plain(x2)))
        return np.where(np.equal(x, 0), zero_of(g), ct), None

    return np.copysign(x1, x2), copysign_pullback


def _remainder_rule(func):
    """fmod or remainder: x - n * y with n = trunc(x / y) (fmod) or floor(x / y)
    (remainder), an integer piecewise constant in x and y."""

    def remainder_rule(x1, x2, /):
        ans = func(x1, x2)

        def remainder_pullback(g):
            def divisor_cotangent():
                # -n, read off exactly; where n is 0 the answer is x alone: exactly 0
                n = np.round((plain(x1) - plain(ans)) / plain(x2))
                return np.where(np.equal(n, 0), zero_of(g), -n * g)

            return g, divisor_cotangent

        return ans, remainder_pullback

    return remainder_rule


rrule(np.fmod, batched=True)(_remainder_rule(np.fmod))
rrule(np.remainder, batched=True)(_remainder_rule(np.remainder))


@rrule(np.heaviside, batched=True)
def heaviside_rule(x1, x2, /):
    def heaviside_pullback(g):
        # heaviside(x, h0) is piecewise constant in x (a jump at 0: derivative 0 there too)
        # and equals h0 where x == 0: a rule rather than a constant, so that h0 gets its
        # gradient, there alone
        return None, lambda: np.where(np.equal(plain(x1), 0), g, zero_of(g))

    return np.heaviside(x1, x2), heaviside_pullback


@rrule(np.ldexp, batched=True)
def ldexp_rule(x, n, /):
    def ldexp_pullback(g):
        # ldexp(x, n) = x * 2**n, the exponent n an integer (a constant); g * 2**n as one
        # scaling, which stays finite where 2**n alone would not (a subnormal's frexp)
        return (np.ldexp(g, n), None)

    return np.ldexp(x, n), ldexp_pullback


@rrule(np.nextafter, batched=True)
def nextafter_rule(x1, x2, /):
    def nextafter_pullback(g):
        # x moved by one unit in the last place towards y: the identity in x, and piecewise
        # constant in y, which gives only the direction (no cotangent, not g * 0)
        return g, None

    return np.nextafter(x1, x2), nextafter_pullback
# divmod(x, y) is (floor_divide(x, y), remainder(x, y)), NumPy's own pair, each with its rule
composite(np.divmod, lambda x, y, /: (np.floor_divide(x, y), np.remainder(x, y)))


def frexp_impl(x, /):
    # frexp(x) = (m, e) with x = m * 2**e: the exponent e is piecewise constant (an integer)
    # and the mantissa m = ldexp(x, -e) moves with x at the rate 2**-e (1 at x = 0, e = 0)
    exponent = np.frexp(plain(x))[1]
    return np.ldexp(x, -exponent), exponent


composite(np.frexp, frexp_impl)


# np.i0, the modified Bessel function of order 0: NumPy's own Chebyshev series in |x| run
# on tracked values (np.piecewise and arithmetic have rules), so the derivative is that of
# the series, which approximates i1. NumPy takes |x| with np.abs, whose convention
# abs'(0) = 0 would make every derivative at 0 vanish (i0''(0) = 1/2); i0 is even and
# analytic, so |x| taken with the one-sided derivative 1 at 0 is exact at every order
_i0: Any = getattr(np.i0, "_pb_original", np.i0)  # NumPy's dispatched function
_i0_series = _i0._implementation.__globals__  # numpy.lib's module: its _i0_1 and _i0_2


def i0_impl(x):
    u = np.where(plain(x) >= 0, x, -x)
    return np.piecewise(u, [plain(u) <= 8.0], [_i0_series["_i0_1"], _i0_series["_i0_2"]])


composite(np.i0, i0_impl)


@rrule(np.modf, batched=True)
def modf_rule(x, /):
    # modf(x) = (fraction, whole): the whole part trunc(x) is piecewise constant, so the
    # fraction moves with x (derivative 1, as remainder's), at inf too (modf(inf) = (0, inf))
    fraction, whole = np.modf(x)

    def modf_pullback(g):
        return (g[0],)

    return (fraction, whole), modf_pullback


nondifferentiable(
    np.spacing,  # the distance to the next float: piecewise constant
    np.floor_divide,  # piecewise constant: zero gradient
    np.floor, np.ceil, np.rint, np.trunc, np.fix, np.round, np.around,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.isnan, np.isinf, np.isfinite, np.signbit,
)


# 1j as a NumPy scalar: 1j * np.float64(...) is a Python complex, which has no shape, while
# np.complex128(1j) * np.float64(...) stays a NumPy scalar
IMAG_UNIT = np.complex128(1j)


@rrule(np.conjugate, batched=True)
def conjugate_rule(x):
    def conjugate_pullback(g):
        return (np.conjugate(g),)

    return np.conjugate(x), conjugate_pullback


@rrule(np.real, batched=True)
def real_rule(val):
    def real_pullback(g):
        return (g,)  # Re z moves with Re z only: the gradient g + 0i

    return np.real(val), real_pullback


@rrule(np.imag, batched=True)
def imag_rule(val):
    complex_input = np.iscomplexobj(plain(val))

    def imag_pullback(g):
        # Im z moves with Im z only: the gradient 0 + i g (the imaginary part of a real
        # array is the constant 0)
        return (g * IMAG_UNIT if complex_input else None,)

    return np.imag(val), imag_pullback


@rrule(np.real_if_close, batched=True)
def real_if_close_rule(a, tol=100):
    ans = np.real_if_close(a, tol)

    def real_if_close_pullback(g):
        # the identity, or the real part (as np.real) where the imaginary parts were dropped
        return (g, None)

    return ans, real_if_close_pullback


@rrule(np.angle, batched=True)
def angle_rule(z, deg=False):
    complex_input = np.iscomplexobj(plain(z))

    def angle_pullback(g):
        if not complex_input:
            return (None, None)  # 0 or pi: constant along the real line
        # d angle(z) = Im(dz / z): the gradient is i z / |z|^2 (0 at z = 0), as i (z / |z|)
        # / |z|: |z|^2 underflows below 1e-154 and overflows above 1e154, |z| does not
        r = _nonzero(np.abs(z))
        ct = g * IMAG_UNIT * (z / r) / r
        return (ct * DEG_PER_RAD if deg else ct, None)

    return np.angle(z, deg=deg), angle_pullback


# np.sign of a real x is piecewise constant: on tracked values its output is a plain
# constant, as for the other non-differentiable functions. NumPy 2 defines the sign of a
# complex z as z / |z| (0 at 0), which moves with z; NumPy 1 as the sign of its first
# nonzero part, piecewise constant again. Which one this NumPy computes is read off it.
SIGN_IS_PHASE = bool(np.sign(np.complex128(2j)) == 1j)


@primitive
def complex_sign(z, /):
    """``np.sign(z)`` of a complex ``z`` (NumPy 2's ``z / |z|``, 0 at 0), with a rule."""
    return np.sign(z)


def sign_of_tracked(x, /):
    if SIGN_IS_PHASE and np.iscomplexobj(plain(x)):
        return complex_sign(x)
    return np.sign(plain(x))


composite(np.sign, sign_of_tracked)

if SIGN_IS_PHASE:
    @rrule(complex_sign, batched=True)
    def complex_sign_rule(z, /):
        ans = complex_sign(z)

        def complex_sign_pullback(g):
            # s = z / |z| moves only across its own direction: with ds = i s Im(conj(s) dz)
            # / |z|, the cotangent of z is i s Im(conj(s) g) / |z|; 0 at z = 0 (as for abs)
            ct = IMAG_UNIT * ans * np.imag(np.conjugate(ans) * g)
            return (ct / _nonzero(np.abs(z)),)

        return ans, complex_sign_pullback


def _sinc_deriv(ans, x):
    # (cos(pi x) - sinc(x)) / x, and its Taylor series -pi^2 x / 3 + pi^4 x^3 / 30 near 0,
    # where the quotient cancels (exact to double precision below |x| = 1e-3); sinc'(0) = 0
    small = np.abs(plain(x)) < 1e-3
    series = np.pi ** 2 * x * (np.pi ** 2 * x * x / 30 - 1 / 3)
    quotient = (np.cos(np.pi * x) - ans) / np.where(small, 1, x)
    return np.where(small, series, quotient)


elementwise(np.sinc, _sinc_deriv)


@primitive
def nan_to_num_copy(x, nan=0.0, posinf=None, neginf=None):
    """NumPy's ``np.nan_to_num(x, True, nan, posinf, neginf)``: a new array."""
    return np.nan_to_num(x, True, nan, posinf, neginf)  # (by position: Dask's takes no keywords)


def nan_to_num_impl(x, copy=True, nan=0.0, posinf=None, neginf=None):
    # copy=False writes into x, as NumPy's does (every name and view of x sees it)
    ans = nan_to_num_copy(x, nan, posinf, neginf)
    if copy or not isinstance(x, Tracked):
        return ans
    x[...] = ans
    return x


composite(np.nan_to_num, nan_to_num_impl)


@rrule(nan_to_num_copy, batched=True)
def nan_to_num_rule(x, nan=0.0, posinf=None, neginf=None):
    ans = nan_to_num_copy(x, nan, posinf, neginf)

    def nan_to_num_pullback(g):
        # finite entries pass through; a replaced entry is its replacement value, which
        # gets the cotangents of the entries it replaced
        px = plain(x)
        zero = zero_of(g)
        axes = tuple(range(-np.ndim(px), 0))
        parts = [(np.real(g), np.real(px))]
        if np.iscomplexobj(px):  # real and imaginary parts are replaced separately
            parts.append((np.imag(g), np.imag(px)))
            ct = (np.where(np.isfinite(px.real), np.real(g), 0)
                  + 1j * np.where(np.isfinite(px.imag), np.imag(g), 0))
        else:
            ct = np.where(np.isfinite(px), g, zero)

        def replaced(test):  # a thunk: the engine calls it for a tracked value only
            return lambda: sum(np.sum(np.where(test(v), c, 0), axis=axes) for c, v in parts)

        return ct, replaced(np.isnan), replaced(np.isposinf), replaced(np.isneginf)

    return ans, nan_to_num_pullback


@rrule(np.clip, batched=True)
def clip_rule(a, a_min=None, a_max=None, **kwargs):
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    ans = np.clip(a, a_min, a_max, **kwargs)

    def clip_pullback(g):
        # clip(x, lo, hi) = minimum(maximum(x, lo), hi); at a bound the gradient goes to x
        x = plain(a)
        m = x if a_min is None else np.maximum(x, plain(a_min))
        to_hi = np.greater(m, plain(a_max)) if a_max is not None else np.zeros(np.shape(x), bool)
        to_lo = np.less(x, plain(a_min)) & ~to_hi if a_min is not None else None
        to_x = ~to_hi if to_lo is None else ~to_hi & ~to_lo
        zero = zero_of(g)
        return (np.where(to_x, g, zero),
                None if to_lo is None else np.where(to_lo, g, zero),
                None if a_max is None else np.where(to_hi, g, zero))

    return ans, clip_pullback
