"""scipy.linalg's matrix functions: expm, logm and sqrtm, whose pullbacks are adjoint
Fréchet derivatives (logm's and expm's from the block-triangular form, sqrtm's a Sylvester
equation), cosm, sinm, tanm, coshm, sinhm and tanhm, computed through the expm that has a
rule, and solve_sylvester. Each is intercepted in ``scipy.linalg`` as in linalg.py.
"""

import numpy as np
import scipy.linalg

from ...extend import plain, rrule, shape_of
from .._util import as_array, intercept, replace_when_tracked
from ..numpy._linalg import H
from .linalg import _empty

expm = intercept(scipy.linalg, "expm")
sqrtm = intercept(scipy.linalg, "sqrtm")
logm = intercept(scipy.linalg, "logm")
solve_sylvester = intercept(scipy.linalg, "solve_sylvester")


# ---------------------------------------------------------------------------- matrix functions

def _frechet_adjoint(f, a, g):
    """L_f(a^H, g), the adjoint of the Fréchet derivative of a matrix function f with real
    Taylor coefficients (exp, log, sqrt), from f([[x, e], [0, x]]) = [[f(x), L_f(x, e)],
    [0, f(x)]] (Higham, Functions of Matrices, 2008, Thm 3.6); differentiable again."""
    n = shape_of(a)[-1]
    gshape = shape_of(g)
    ah = np.broadcast_to(H(a), gshape)
    zero = np.zeros(gshape, dtype=np.result_type(plain(a), plain(g)))
    top = np.concatenate([ah, g], axis=-1)
    bottom = np.concatenate([zero, ah], axis=-1)
    return f(np.concatenate([top, bottom], axis=-2))[..., :n, n:]


@rrule(expm, batched=True)
def expm_rule(A):
    A = as_array(A)  # (SciPy takes a list of numbers: the pullback reads A's dtype)

    def expm_pullback(g):
        return (_frechet_adjoint(expm, A, g),)

    return expm(A), expm_pullback


# SciPy computes the trigonometric and hyperbolic matrix functions from its own expm, which
# the interception does not reach (a tracked value there met SciPy's compiled helpers). So
# scipy.linalg.cosm and the rest are replaced by the same formulas written with the expm
# that has a rule, for tracked input (plain input goes to SciPy's function): no rule of
# their own, as a composite. For a real matrix, cos and sin are the real and imaginary
# parts of exp(iA); tan and tanh are the solves SciPy makes.
def cosm_impl(A):
    if np.iscomplexobj(plain(A)):
        return 0.5 * (expm(1j * A) + expm(-1j * A))
    return np.real(expm(1j * A))


def sinm_impl(A):
    if np.iscomplexobj(plain(A)):
        return -0.5j * (expm(1j * A) - expm(-1j * A))
    return np.imag(expm(1j * A))


def coshm_impl(A):
    return 0.5 * (expm(A) + expm(-A))


def sinhm_impl(A):
    return 0.5 * (expm(A) - expm(-A))


def _through_expm(name, impl):
    replace_when_tracked(scipy.linalg, name, impl)


for _name, _impl in (("cosm", cosm_impl), ("sinm", sinm_impl), ("coshm", coshm_impl),
                     ("sinhm", sinhm_impl),
                     ("tanm", lambda A: np.linalg.solve(cosm_impl(A), sinm_impl(A))),
                     ("tanhm", lambda A: np.linalg.solve(coshm_impl(A), sinhm_impl(A)))):
    _through_expm(_name, _impl)


@rrule(logm, batched=True)
def logm_rule(A, *args, **kwargs):
    A = as_array(A)

    def logm_pullback(g):
        return (_frechet_adjoint(logm, A, g),) + (None,) * 2

    return logm(A, *args, **kwargs), logm_pullback


@rrule(sqrtm, batched=True)
def sqrtm_rule(A, *args, **kwargs):
    ans = sqrtm(A, *args, **kwargs)

    def sqrtm_pullback(g):
        if _empty(g):  # no matrices (SciPy's solve_sylvester refuses an empty stack)
            return (None,) * 4
        # x x = a: x dx + dx x = da, so ga solves x^H ga + ga x^H = g
        xh = H(ans)
        return (solve_sylvester(xh, xh, g),) + (None,) * 3

    return ans, sqrtm_pullback


@rrule(solve_sylvester, batched=True)
def solve_sylvester_rule(a, b, q):
    ans = solve_sylvester(a, b, q)

    def solve_sylvester_pullback(g):
        # a x + x b = q: gq solves a^H gq + gq b^H = g; ga = -gq x^H, gb = -x^H gq
        gq = solve_sylvester(H(a), H(b), g)
        return -np.matmul(gq, H(ans)), -np.matmul(H(ans), gq), gq

    return ans, solve_sylvester_pullback
