"""np.emath (numpy.lib.scimath): complex results where the real function is undefined
(arcsin and arccos have no rule: test_emath_arcsin_and_arccos_are_refused)."""

import numpy as np
import pytest

import pullback as pb

from ..spec import UNARY, Spec

emath = np.lib.scimath


def _around_one(rng, shape):
    # inside (-1, 1) and beyond it, away from the branch points at +-1
    sign = rng.choice([-1.0, 1.0], shape)
    return sign * np.where(rng.random(shape) < 0.5, rng.uniform(0.1, 0.7, shape),
                           rng.uniform(1.3, 2.0, shape))


SPECS = [
    *[Spec(getattr(emath, name), UNARY, domain="nonzero")
      for name in ("sqrt", "log", "log2", "log10")],
    *[Spec(getattr(emath, name), UNARY, domain=_around_one)
      for name in ("arctanh",)],
    Spec(emath.logn, [((), (3,)), ((3,), (3,)), ((2, 1), (3,))],
         domain=(lambda rng, s: rng.uniform(1.5, 3.0, s), "nonzero")),
    Spec(emath.power, [((3,), ()), ((2, 3), (2, 3)), ((3,), (3,))],
         domain=("nonzero", lambda rng, s: rng.uniform(0.5, 2.0, s))),
]


def test_emath_arcsin_and_arccos_are_refused():
    for func in (emath.arcsin, emath.arccos):
        with pytest.raises(pb.NoRuleError, match="^pullback: no derivative rule for "):
            pb.grad(lambda x, f=func: np.sum(np.real(f(x))))(np.array([0.5, 2.0]))
