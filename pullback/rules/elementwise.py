"""Elementwise functions, declared as data: each row names the function and its local
derivative for each argument, as a function of the answer and the arguments.

Kink conventions (documented in the README): abs'(0) = 0; ties of maximum/minimum share
the gradient equally; sqrt'(0) = +inf, and a zero cotangent still gives zero there.
"""

import numpy as np

from ..core import MINUS_ONE, ONE, elementwise, nondifferentiable, plain, rrule


def _tie_share(x, y):
    # d max(x, y) / dx: 1 where x wins, 1/2 at a tie, 0 where y wins
    return np.greater(x, y) + 0.5 * np.equal(x, y)


def _abs_deriv(ans, x):
    if np.iscomplexobj(x):
        # d|z|: the cotangent of z is g * z / |z| (0 at z = 0); the engine conjugates
        return np.conjugate(x) / np.where(ans == 0, 1, ans)
    return np.sign(x)  # abs'(0) = 0


def _power_dbase(ans, x, y):
    return y * np.power(x, y - 1)


def _power_dexponent(ans, x, y):
    # d x**y / dy = log(x) x**y; at x = 0 the limit for y > 0 is 0
    safe = np.where(x == 0, 1, x)
    return np.where(x == 0, 0, np.log(safe) * ans)


elementwise(np.add, ONE, ONE)
elementwise(np.subtract, ONE, MINUS_ONE)
elementwise(np.multiply, lambda ans, x, y: y, lambda ans, x, y: x)
elementwise(np.true_divide, lambda ans, x, y: 1 / y, lambda ans, x, y: -ans / y, singular=True)
elementwise(np.power, _power_dbase, _power_dexponent, singular=True)
elementwise(np.negative, MINUS_ONE)
elementwise(np.positive, ONE)
elementwise(np.absolute, _abs_deriv)
elementwise(np.exp, lambda ans, x: ans)
elementwise(np.log, lambda ans, x: 1 / x, singular=True)
elementwise(np.sin, lambda ans, x: np.cos(x))
elementwise(np.cos, lambda ans, x: -np.sin(x))
elementwise(np.tanh, lambda ans, x: 1 - ans * ans)
elementwise(np.sqrt, lambda ans, x: 0.5 / ans, singular=True)  # sqrt'(0) = +inf
elementwise(np.square, lambda ans, x: 2 * x)
elementwise(np.maximum, lambda ans, x, y: _tie_share(x, y), lambda ans, x, y: _tie_share(y, x))
elementwise(np.minimum, lambda ans, x, y: _tie_share(y, x), lambda ans, x, y: _tie_share(x, y))

nondifferentiable(
    np.floor_divide,  # piecewise constant: zero gradient
    np.sign, np.floor, np.ceil, np.rint, np.trunc,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.isnan, np.isinf, np.isfinite, np.signbit,
)


@rrule(np.clip)
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
        zero = np.zeros((), dtype=plain(g).dtype)
        return (np.where(to_x, g, zero),
                None if to_lo is None else np.where(to_lo, g, zero),
                None if a_max is None else np.where(to_hi, g, zero))

    return ans, clip_pullback
