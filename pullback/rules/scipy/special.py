"""scipy.special. Most of its functions are ufuncs, which reach pullback through NumPy's
dispatch and are declared here as data, like numpy's elementwise functions; each
derivative is written with functions that have rules themselves, so second derivatives
follow. The plain Python functions (polygamma, multigammaln, logsumexp, softmax,
log_softmax) are intercepted in ``scipy.special`` so that calls on tracked values reach
their rules (code that imported them before pullback keeps the originals). This module
holds the gamma and error functions, the logistic and exponential ones, the losses, the
information-theory functions and the reductions, and the helpers the other scipy.special
modules share: the Bessel functions are in special_bessel.py, the elliptic integrals in
special_elliptic.py, the incomplete functions and the other integrals in
special_integrals.py, the distribution functions in special_distributions.py, the
orthogonal polynomials and hypergeometric functions in special_more.py, and the Airy,
parabolic cylinder, Mathieu and spheroidal functions in special_waves.py.

Integer orders and counts (polygamma's n, multigammaln's d) are constants; gammasgn and
round are piecewise constant. ``scipy.special.sinc`` is ``np.sinc`` (elementwise.py).
logsumexp gives an entry that ``b = 0`` leaves out the gradient 0 in ``a``, also where
``e^(a - L)`` overflows (``b`` as a 0/1 mask); complex digamma's derivatives are this
module's own series (SciPy's polygamma is real-only).
"""

import math

import numpy as np
from scipy import special

from ..._engine.records import times_singular
from ..._engine.registry import NotImplementedCotangent
from ...extend import (
    elementwise,
    is_complex,
    is_foreign,
    nondifferentiable,
    plain,
    rrule,
    shape_of,
)
from .._util import as_array, conj_if_complex, intercept, listed, normalize_axes, unreduce
from ..numpy._linalg import is_zero

polygamma = intercept(special, "polygamma")
multigammaln = intercept(special, "multigammaln")
logsumexp = intercept(special, "logsumexp")
softmax = intercept(special, "softmax")
log_softmax = intercept(special, "log_softmax")

SQRT_PI = np.sqrt(np.pi)
SQRT_2PI = np.sqrt(2.0 * np.pi)
SQRT2 = np.sqrt(2.0)
RAD_PER_DEG = np.pi / 180
IMAG_UNIT = np.complex128(1j)
digamma = special.digamma


def _beta_da(ans, a, b):
    return ans * (digamma(a) - digamma(a + b))


def _betaln_da(ans, a, b):
    return digamma(a) - digamma(a + b)


def _xlogy_dy(ans, x, y):
    # x / y, and 0 where x == y == 0 (xlogy(0, y) = 0 for every y)
    return x / np.where((plain(x) == 0) & (plain(y) == 0), 1, y)


def _xlog1py_dy(ans, x, y):
    return x / np.where((plain(x) == 0) & (plain(y) == -1), 1, 1 + y)


def _sign(x):
    return np.sign(plain(x))


def _near_zero(z, formula, coefficients, small=1e-3):
    """``formula(z)``, a quotient with a removable singularity at ``z = 0``, and below
    ``|z| = small``, where it cancels, its Taylor polynomial (``coefficients`` of z^0, z^1
    ...: exact to double precision there), as np.sinc's derivative."""
    near = np.abs(plain(z)) < small
    series = coefficients[-1]
    for c in coefficients[-2::-1]:
        series = series * z + c
    return np.where(near, series, formula(np.where(near, small, z)))


def _exprel_d(z):
    # d/dz (e^z - 1) / z = (e^z - exprel(z)) / z
    return _near_zero(z, lambda z: (np.exp(z) - special.exprel(z)) / z,
                      [1 / 2, 1 / 3, 1 / 8, 1 / 30, 1 / 144])


def _log1prel(z):
    # log(1 + z) / z
    return _near_zero(z, lambda z: np.log1p(z) / z, [1, -1 / 2, 1 / 3, -1 / 4, 1 / 5])


def _log1prel_d(z):
    # d/dz log(1 + z) / z = (1 / (1 + z) - log(1 + z) / z) / z
    return _near_zero(z, lambda z: (1 / (1 + z) - np.log1p(z) / z) / z,
                      [-1 / 2, 2 / 3, -3 / 4, 4 / 5, -5 / 6])


# the Bernoulli numbers B_2, B_4, ... B_20, of the asymptotic series of polygamma
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330)


def complex_polygamma(n, z):
    """``polygamma(n, z)`` for an integer ``n >= 1`` and a complex ``z`` (SciPy's is
    real-only): the recurrence psi_n(z) = psi_n(z + m) + (-1)^(n + 1) n! sum_k<m (z + k)^-(n+1)
    up to Re(z + m) >= 20, and there the asymptotic series (DLMF 5.15.8, 5.15.9), exact to
    double precision; the derivative of ``digamma`` of a complex argument. Arithmetic on
    ``z`` (tracked or not), so that its derivatives are those of the same formula."""
    n = int(n)
    shift = int(np.ceil(max(0.0, 20.0 - float(np.min(np.real(plain(z)), initial=20.0)))))
    factorial = float(math.factorial(n))
    with np.errstate(divide="ignore", invalid="ignore"):  # (a pole: inf, as SciPy's)
        total = 0.0
        for k in range(shift):
            total = total + (z + float(k)) ** -(n + 1)
        w = z + float(shift)
        series = factorial / n / w ** n + factorial / 2 / w ** (n + 1)
        ratio = factorial / n  # (2k + n - 1)! / (2k)!, from k = 0 up
        for k, b in enumerate(_BERNOULLI, start=1):
            ratio *= (2 * k + n - 2) * (2 * k + n - 1) / ((2 * k - 1) * (2 * k))
            series = series + b * ratio / w ** (2 * k + n)
        return (-1.0) ** (n + 1) * (series + factorial * total)


def _trigamma(x):
    """digamma's derivative, of a real or a complex argument."""
    return complex_polygamma(1, x) if is_complex(x) else _polygamma(1, x)


# gamma and relatives; digamma is also special.psi
elementwise(special.gamma, lambda ans, x: ans * digamma(x))
elementwise(special.gammaln, lambda ans, x: digamma(x))
elementwise(special.loggamma, lambda ans, x: digamma(x))
elementwise(special.digamma, lambda ans, x: _trigamma(x))
elementwise(special.beta, _beta_da, lambda ans, a, b: _beta_da(ans, b, a))
elementwise(special.betaln, _betaln_da, lambda ans, a, b: _betaln_da(ans, b, a))

elementwise(special.rgamma, lambda ans, x: -digamma(x) * ans)  # 1 / gamma
nondifferentiable(special.gammasgn)


def _binom_dn(ans, n, k):
    return ans * (digamma(n + 1) - digamma(n - k + 1))


def _binom_dk(ans, n, k):
    return ans * (digamma(n - k + 1) - digamma(k + 1))


# binom(n, k) = Gamma(n + 1) / (Gamma(k + 1) Gamma(n - k + 1)), poch(z, m) = Gamma(z + m) / Gamma(z)
elementwise(special.binom, _binom_dn, _binom_dk)
elementwise(special.poch, lambda ans, z, m: ans * (digamma(z + m) - digamma(z)),
            lambda ans, z, m: ans * digamma(z + m))

# error functions and the normal distribution
elementwise(special.erf, lambda ans, x: 2 / SQRT_PI * np.exp(-x * x))
elementwise(special.erfc, lambda ans, x: -2 / SQRT_PI * np.exp(-x * x))
elementwise(special.erfinv, lambda ans, x: SQRT_PI / 2 * np.exp(ans * ans), singular=True)
elementwise(special.erfcinv, lambda ans, x: -SQRT_PI / 2 * np.exp(ans * ans), singular=True)
# erfcx'(x) = 2 x erfcx(x) - 2 / sqrt(pi), whose terms cancel to ~1 / x^2 of their size:
# beyond x = 50 the asymptotic series (DLMF 7.12.1) 2 / sqrt(pi) sum_n>=1 (-1)^n (2n - 1)!!
# / (2 x^2)^n, exact to double precision there
_ERFCX_SLOPE = [(-1) ** n * float(np.prod(np.arange(1, 2 * n, 2))) for n in range(1, 9)]


def _erfcx_d(ans, x):
    near = 2 * x * ans - 2 / SQRT_PI
    if np.iscomplexobj(plain(x)):
        return near
    far = plain(x) > 50
    w = 1 / np.where(far, x, 100.0)
    t = w * w / 2  # 1 / (2 x^2), without the overflow of x^2
    series = _ERFCX_SLOPE[-1]
    for c in _ERFCX_SLOPE[-2::-1]:
        series = series * t + c
    return np.where(far, 2 / SQRT_PI * series * t, near)


elementwise(special.erfcx, _erfcx_d)
elementwise(special.ndtr, lambda ans, x: np.exp(-x * x / 2) / SQRT_2PI)


def _log_ndtr_d(ans, x):
    # pdf / cdf: exp(-x^2/2 - log_ndtr(x)) / sqrt(2 pi) for x >= 0, and for x < 0, where
    # that difference of two numbers near x^2/2 cancels, sqrt(2 / pi) / erfcx(-x / sqrt 2)
    # (cdf(x) = erfc(-x / sqrt 2) / 2): no underflow to 0/0, no cancellation in the tail
    left = plain(x) < 0
    tail = np.sqrt(2 / np.pi) / special.erfcx(np.where(left, x, 0.0) / -SQRT2)
    return np.where(left, tail, np.exp(-x * x / 2 - np.where(left, 0.0, ans)) / SQRT_2PI)


elementwise(special.log_ndtr, _log_ndtr_d)
elementwise(special.ndtri, lambda ans, x: SQRT_2PI * np.exp(ans * ans / 2), singular=True)

elementwise(special.erfi, lambda ans, x: 2 / SQRT_PI * np.exp(x * x))
elementwise(special.dawsn, lambda ans, x: 1 - 2 * x * ans)
elementwise(special.ndtri_exp, lambda ans, y: SQRT_2PI * np.exp(y + ans * ans / 2), singular=True)

# logistic
elementwise(special.expit, lambda ans, x: ans * (1 - ans))
elementwise(special.logit, lambda ans, x: 1 / (x * (1 - x)), singular=True)
elementwise(special.log_expit, lambda ans, x: special.expit(-x))

# exponentials, trigonometric functions of degrees (radian: degrees, minutes, seconds)
elementwise(special.expm1, lambda ans, x: np.exp(x))
elementwise(special.cosm1, lambda ans, x: -np.sin(x))
elementwise(special.exprel, lambda ans, x: _exprel_d(x))
elementwise(special.exp2, lambda ans, x: ans * np.log(2.0))
elementwise(special.exp10, lambda ans, x: ans * np.log(10.0))
elementwise(special.cbrt, lambda ans, x: 1 / (3 * ans * ans), singular=True)
elementwise(special.radian, lambda ans, d, m, s: RAD_PER_DEG,
            lambda ans, d, m, s: RAD_PER_DEG / 60, lambda ans, d, m, s: RAD_PER_DEG / 3600)
elementwise(special.sindg, lambda ans, x: RAD_PER_DEG * special.cosdg(x))
elementwise(special.cosdg, lambda ans, x: -RAD_PER_DEG * special.sindg(x))
elementwise(special.tandg, lambda ans, x: RAD_PER_DEG * (1 + ans * ans), singular=True)
elementwise(special.cotdg, lambda ans, x: -RAD_PER_DEG * (1 + ans * ans), singular=True)
nondifferentiable(special.round)  # piecewise constant, as np.round


# Huber losses of a residual r with threshold delta (argument 0)
def _huber_dr(ans, delta, r):
    # r inside |r| <= delta, delta sign(r) outside: the branches meet at |r| = delta
    return np.where(np.abs(plain(r)) <= plain(delta), r, delta * _sign(r))


def _huber_ddelta(ans, delta, r):
    return np.where(np.abs(plain(r)) <= plain(delta), 0.0, np.abs(r) - delta)


def _pseudo_huber_ddelta(ans, delta, r):
    # 2 delta (s - 1) - r^2 / (delta s), s = hypot(delta, r) / delta, without cancellation
    h = np.hypot(delta, r)
    return r ** 4 / (h * (h + delta) ** 2)


# Box-Cox: boxcox(x, l) = L exprel(l L), L = log x; inv_boxcox(y, l) = exp(y log1prel(l y))
def _boxcox_dl(ans, log_x, lmbda):
    # L^2 exprel'(l L), and at x = 0, where L = -inf and boxcox = -1 / l, its limit 1 / l^2
    zero = np.isneginf(plain(log_x))
    log_x = np.where(zero, 0.0, log_x)
    return np.where(zero, ans * ans, log_x * log_x * _exprel_d(lmbda * log_x))


def _inv_boxcox_dl(base, y, lmbda):
    return base * y * y * _log1prel_d(lmbda * y)


elementwise(special.huber, _huber_ddelta, _huber_dr)
elementwise(special.pseudo_huber, _pseudo_huber_ddelta,
            lambda ans, delta, r: r * delta / np.hypot(delta, r))
elementwise(special.boxcox, lambda ans, x, lmbda: np.power(x, lmbda - 1),
            lambda ans, x, lmbda: _boxcox_dl(ans, np.log(x), lmbda), singular=True)
elementwise(special.boxcox1p, lambda ans, x, lmbda: np.power(1 + x, lmbda - 1),
            lambda ans, x, lmbda: _boxcox_dl(ans, np.log1p(x), lmbda), singular=True)
elementwise(special.inv_boxcox, lambda ans, y, lmbda: ans / (1 + lmbda * y),
            lambda ans, y, lmbda: _inv_boxcox_dl(ans, y, lmbda), singular=True)
elementwise(special.inv_boxcox1p, lambda ans, y, lmbda: (ans + 1) / (1 + lmbda * y),
            lambda ans, y, lmbda: _inv_boxcox_dl(ans + 1, y, lmbda), singular=True)

# information theory; x log y terms are 0 where x == 0, and so is their derivative in y
elementwise(special.xlogy, lambda ans, x, y: np.log(y), _xlogy_dy, singular=True)
elementwise(special.xlog1py, lambda ans, x, y: np.log1p(y), _xlog1py_dy, singular=True)
elementwise(special.entr, lambda ans, x: -(np.log(x) + 1), singular=True)
elementwise(special.rel_entr, lambda ans, x, y: np.log(x / y) + 1, lambda ans, x, y: -x / y,
            singular=True)
elementwise(special.kl_div, lambda ans, x, y: np.log(x / y), lambda ans, x, y: 1 - x / y,
            singular=True)


def _polygamma(n, x):
    """``polygamma(n, x)`` for an array ``x`` of any library: SciPy's converts ``x`` with
    ``np.asarray`` (which CuPy refuses), so another library's plain array gets SciPy's
    formula for an integer ``n``, in ufuncs, which dispatch to that library."""
    if x.__class__ is np.ndarray or not is_foreign(x) or np.ndim(n):
        return polygamma(n, x)
    n = int(n)
    if n == 0:
        return special.digamma(x)
    return (-1.0) ** (n + 1) * special.gamma(n + 1.0) * special.zeta(n + 1, x)


@rrule(polygamma, batched=True)
def polygamma_rule(n, x):
    ans = _polygamma(n, x)

    def polygamma_pullback(g):
        return (None, g * _polygamma(n + 1, x))  # n is an integer: a constant

    return ans, polygamma_pullback


@rrule(multigammaln, batched=True)
def multigammaln_rule(a, d):
    ans = multigammaln(a, d)

    def multigammaln_pullback(g):
        # log Gamma_d(a) = const + sum_j gammaln(a - j / 2), j = 0 .. d - 1
        return (g * sum(digamma(a - j / 2) for j in range(int(d))), None)

    return ans, multigammaln_pullback


def _end_axes(axis, ndim):
    """``axis`` counted from the end, so that a cotangent's leading batch axes stay put."""
    return tuple(a - ndim for a in normalize_axes(axis, ndim))


@rrule(logsumexp, batched=True)
def logsumexp_rule(a, axis=None, b=None, keepdims=False, return_sign=False):
    given, a = a, as_array(a)  # logsumexp([x, y, 0.0]) reads its list as one array
    ans = logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)
    shape = shape_of(a) if b is None else np.broadcast_shapes(shape_of(a), shape_of(b))
    ndim = len(shape_of(a))

    def logsumexp_pullback(g):
        # L = log s, s = sum b e^a, holomorphic: dL/da = b e^(a - L), dL/db = e^(a - L),
        # conjugated for complex input. return_sign gives (Re L, e^(i Im L)) = (log|s|,
        # s / |s|): the sign is piecewise constant for real input, and for complex input
        # moves with Im L, whose cotangent is Im(conj(sign) g_sign)
        if return_sign:
            (g, g_sign), (r, sign) = g, ans
            if is_complex(sign):
                g = g + IMAG_UNIT * np.imag(np.conjugate(sign) * g_sign)
            else:
                sign = plain(sign)
            # e^(a - L) = e^(a - r) / sign, and conj(1 / sign) = sign
            g = unreduce(g, shape, axis, keepdims) * unreduce(sign, shape, axis, keepdims)
        else:
            r = ans
            g = unreduce(g, shape, axis, keepdims)
        exponent = a - unreduce(r, shape, axis, keepdims)
        with np.errstate(over="ignore"):  # (e^(a - L) of an entry b leaves out, below)
            weight = np.exp(exponent)
        if b is None:
            return (listed(g * conj_if_complex(weight), given, ndim), None, None, None, None)
        # an entry that b = 0 leaves out has a - L's derivative b e^(a - L) = 0, also where
        # e^(a - L) overflows (b as a 0/1 mask of a large score): exactly 0 there, by the
        # double where, which keeps the overflow out of the nested derivatives too
        dropped = np.equal(plain(b), 0) & np.isinf(plain(weight))
        masked = np.where(dropped, 0.0, np.exp(np.where(dropped, 0.0, exponent)))
        return (listed(g * conj_if_complex(masked * b), given, ndim), None,
                lambda: g * conj_if_complex(weight), None, None)

    return ans, logsumexp_pullback


@rrule(softmax, batched=True)
def softmax_rule(x, axis=None):
    given, x = x, as_array(x)
    ans = softmax(x, axis=axis)
    ndim = len(shape_of(x))
    axes = _end_axes(axis, ndim)

    def softmax_pullback(g):
        # the Jacobian diag(s) - s s^T is symmetric: its conjugate times g (complex input)
        s = conj_if_complex(ans)
        return (listed(s * (g - np.sum(g * s, axis=axes, keepdims=True)), given, ndim), None)

    return ans, softmax_pullback


@rrule(log_softmax, batched=True)
def log_softmax_rule(x, axis=None):
    given, x = x, as_array(x)
    ans = log_softmax(x, axis=axis)
    ndim = len(shape_of(x))
    axes = _end_axes(axis, ndim)

    def log_softmax_pullback(g):
        # the Jacobian I - 1 s^T, transposed and conjugated (complex input)
        s = conj_if_complex(np.exp(ans))
        return (listed(g - s * np.sum(g, axis=axes, keepdims=True), given, ndim), None)

    return ans, log_softmax_pullback


# ---------------------------------------------------------------------------- elementary

# scipy.special's own log1p (a ufunc apart from np.log1p) and powm1(x, y) = x^y - 1
elementwise(special.log1p, lambda ans, x: 1 / (1 + x), singular=True)
elementwise(special.powm1, lambda ans, x, y: y * np.power(x, y - 1),
            lambda ans, x, y: special.xlogy(ans + 1, x), singular=True)
# the Wright omega function solves w + log w = z: w' = w / (1 + w), infinite where w = -1
elementwise(special.wrightomega, lambda ans, z: ans / (1 + ans), singular=True)


# ---------------------------------------------------------------------------- shared helpers

def _terms(g, derivatives):
    """The cotangent of the one argument of a function with several outputs: the sum of
    each output's cotangent times the conjugate of its derivative (a thunk, not called for
    an output whose cotangent is an untracked zero). A zero cotangent gives zero even where
    the derivative is infinite, as in a singular table row: Ci' is infinite at 0, Si' not."""
    total = None
    with np.errstate(divide="ignore", invalid="ignore"):
        for gk, dk in zip(g, derivatives):
            if not is_zero(gk):
                term = times_singular(gk, conj_if_complex(dk()))
                total = term if total is None else total + term
    return g[0] if total is None else total


def _row(func, *partials):
    """``elementwise``'s table row, where a partial may be a ``not_implemented`` reason
    (a shape parameter's, or every argument's): an ``rrule`` whose pullback multiplies the
    cotangent by each local derivative (conjugated, for a complex one)."""
    if not any(isinstance(d, NotImplementedCotangent) for d in partials):
        return elementwise(func, *partials, singular=True)

    def row_rule(*args):
        ans = func(*args)

        def row_pullback(g):
            return tuple(d if d is None or isinstance(d, NotImplementedCotangent)
                         else g * conj_if_complex(d(ans, *args)) for d in partials)

        row_pullback.__name__ = row_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, row_pullback

    row_rule.__name__ = row_rule.__qualname__ = f"{func.__name__}_rule"
    if all(d is None or isinstance(d, NotImplementedCotangent) for d in partials):
        # (for the coverage page: a rule that refuses every argument, and why)
        row_rule.refuses = next(d.reason for d in partials if d is not None)
    rrule(func, batched=True)(row_rule)


def _outputs_rule(func, derivatives, *leading):
    """An rrule for ``func``, a ufunc of several outputs differentiable in its last
    argument: ``derivatives(ans, *args)`` gives each output's derivative in it, as thunks
    (``_terms``), and ``leading`` the cotangents of the arguments before it (None for an
    integer order, a ``not_implemented`` reason)."""

    def outputs_rule(*args):
        ans = func(*args)

        def outputs_pullback(g):
            return (*leading, _terms(g, derivatives(ans, *args)))

        outputs_pullback.__name__ = outputs_pullback.__qualname__ = f"{func.__name__}_pullback"
        return ans, outputs_pullback

    outputs_rule.__name__ = outputs_rule.__qualname__ = f"{func.__name__}_rule"
    rrule(func, batched=True)(outputs_rule)
