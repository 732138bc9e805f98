import pytest
import scipy.stats as st

import pullback as pb

from ..spec import Spec
from .test_stats import CDF_SHAPES, FAMILIES, _frac, _loc_scale, _prim, _shapes


def _quantile_specs(name, shape_params):
    dist = getattr(st, name)
    loc, scale = _loc_scale(name)
    specs = []
    for method in ("ppf", "isf"):
        func = getattr(dist, method)
        if not shape_params or name in CDF_SHAPES:
            domains = (_frac, *[d for d, _ in shape_params], loc, scale)
            specs.append(Spec(_prim(func), _shapes(len(domains)), domain=domains, call=func))
        else:  # no derivative with respect to the shape parameters
            consts = [c for _, c in shape_params]
            specs.append(Spec(
                _prim(func), _shapes(3), domain=(_frac, loc, scale),
                call=lambda q, lo, sc, func=func, consts=consts: func(q, *consts, lo, sc)))
    return specs


SPECS = [
    *[s for name, _, shape_params in FAMILIES for s in _quantile_specs(name, shape_params)],
    Spec(_prim(st.norm.ppf), [((3,), (3,), (3,))], domain=(_frac, *_loc_scale("norm")),
         call=lambda q, loc, scale: st.norm.ppf(q=q, loc=loc, scale=scale),
         name="scipy.stats.norm.ppf(keywords)"),
    *[Spec(_prim(getattr(st, name).entropy), _shapes(2), domain=_loc_scale(name),
           call=getattr(st, name).entropy)
      for name, _, shape_params in FAMILIES if not shape_params],
    Spec(_prim(st.norm.entropy), [(3,)], domain="positive",
         call=lambda scale: st.norm.entropy(scale=scale),
         name="scipy.stats.norm.entropy(scale=)"),
]


@pytest.mark.parametrize("name", ["t", "gamma", "beta", "chi2", "invgamma"])
def test_quantile_shape_parameters_have_no_rule(name):
    dist = getattr(st, name)
    shapes = [2.5] * dist.numargs
    for method in (dist.ppf, dist.isf):
        with pytest.raises(pb.NoRuleError, match="argument 1 .*no closed form"):
            pb.grad(lambda a, method=method: method(0.3, a, *shapes[1:]))(2.5)


def test_the_quantile_of_a_tracked_loc():
    # the sweep's case: SciPy's own ppf writes into a plain array with np.place
    assert pb.grad(lambda m: st.norm.ppf(0.3, loc=m))(0.1) == pytest.approx(1.0)
    assert pb.grad(lambda m: st.norm.isf(0.3, m, 2.0))(0.1) == pytest.approx(1.0)
