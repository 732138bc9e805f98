"""scipy.stats quantiles and entropies: ``ppf`` and ``isf`` of the univariate families of
stats.py with respect to q, loc, scale and the shape parameters whose cdf has a
closed-form derivative, and ``entropy`` of the families without shape parameters.

With x = loc + scale ppf_std(q), the inverse function theorem on cdf(x) = q gives

    d ppf / dq = 1 / pdf(x),   d / dloc = 1,   d / dscale = (x - loc) / scale = ppf_std(q),
    d ppf / dshape = -(dF / dshape)(z) / pdf(x),   z = (x - loc) / scale,

and isf(q) = ppf(1 - q) the same with d isf / dq = -1 / pdf(x). A shape derivative needs
the cdf's, which scipy.special has in closed form only for weibull_min's ``c`` and
lognorm's ``s``; for the others differentiating raises NoRuleError saying so. Outside (0,
1) the quantile is NaN, and so are its derivatives. The entropy of a location-scale family
is that of the standardized one plus log(scale): d / dscale = 1 / scale, d / dloc = 0.
"""

from ...extend import ONE, NoRuleError, elementwise
from .stats import FAMILIES, _with_signature


def _shape_names(dist):
    return [s.strip() for s in dist.shapes.split(",")] if dist.shapes else []


def _quantile_partials(fam, sign):
    """The local derivatives of ppf (``sign`` 1) or isf (``sign`` -1) for each of (q,
    *shapes, loc, scale)."""
    dist = fam.dist
    shapes = _shape_names(dist)

    def q_partial(ans, q, *params):
        return sign / dist.pdf(ans, *params)

    def scale_partial(ans, q, *params):
        return (ans - params[-2]) / params[-1]

    def shape_partial(i):
        dcdf = fam.dcdfs[i]

        def quantile_shape_partial(ans, q, *params):
            if dcdf is None:
                raise NoRuleError(
                    f"pullback: scipy.stats.{dist.name}.{'ppf' if sign > 0 else 'isf'} is "
                    f"not differentiable with respect to argument {i + 1} ({shapes[i]}): its "
                    f"derivative needs that of the cdf in {shapes[i]}, which has no closed "
                    "form in scipy.special")
            z = (ans - params[-2]) / params[-1]
            return -dcdf(z, *params[:-2]) / dist.pdf(ans, *params)

        return quantile_shape_partial

    return [q_partial, *[shape_partial(i) for i in range(len(shapes))], ONE, scale_partial]


for _fam in FAMILIES:
    _names = [*_shape_names(_fam.dist), "loc", "scale"]
    for _method, _sign in [("ppf", 1), ("isf", -1)]:
        elementwise(_with_signature(_fam.dist, _method, ["q", *_names]),
                    *_quantile_partials(_fam, _sign), singular=True)


def entropy_loc_partial(ans, loc, scale):
    return 0 * loc


def entropy_scale_partial(ans, loc, scale):
    return 1 / scale


for _fam in FAMILIES:
    if not _fam.dist.shapes:
        elementwise(_with_signature(_fam.dist, "entropy", ["loc", "scale"]),
                    entropy_loc_partial, entropy_scale_partial)
