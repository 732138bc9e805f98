"""scipy.special's ufuncs whose every float argument is refused by name: the inverses of
distribution functions in a parameter (special_distributions.py), zetac
(special_integrals.py) and the Mathieu and spheroidal characteristic values
(special_waves.py). ``REFUSED_RULES`` stands in for their spec rows
(tests/rules/test_registry.py): each entry is a function and a valid call, whose float
arguments are each tracked in turn (an int is an integer order, a constant)."""

import pytest
from scipy import special

import pullback as pb

REFUSED_RULES = [
    (special.bdtrik, (0.4, 8.0, 0.3)),
    (special.bdtrin, (3.0, 0.4, 0.3)),
    (special.btdtria, (0.4, 2.0, 0.3)),
    (special.btdtrib, (2.0, 0.4, 0.3)),
    (special.chdtriv, (0.4, 2.5)),
    (special.chndtridf, (2.5, 0.4, 1.5)),
    (special.fdtridfd, (3.0, 0.4, 1.2)),
    (special.gdtrib, (1.5, 0.4, 2.0)),
    (special.nbdtrik, (0.4, 5.0, 0.6)),
    (special.nbdtrin, (3.0, 0.4, 0.6)),
    (special.ncfdtridfd, (3.0, 0.4, 1.5, 1.2)),
    (special.ncfdtridfn, (0.4, 6.0, 1.5, 1.2)),
    (special.ncfdtrinc, (3.0, 6.0, 0.4, 1.2)),
    (special.nctdtridf, (0.4, 0.5, 1.0)),
    (special.nctdtrinc, (4.0, 0.4, 1.0)),
    (special.pdtrik, (0.4, 2.5)),
    (special.stdtridf, (0.6, 0.5)),
    (special.zetac, (2.5,)),
    (special.mathieu_a, (2, 1.5)),
    (special.mathieu_b, (2, 1.5)),
    (special.pro_cv, (1, 2, 1.5)),
    (special.obl_cv, (1, 2, 1.5)),
]

CASES = [(func, args, i) for func, args in REFUSED_RULES for i, a in enumerate(args)
         if isinstance(a, float)]


@pytest.mark.parametrize("func,args,i", CASES,
                         ids=[f"{f.__name__}-{i}" for f, _, i in CASES])
def test_every_argument_is_refused_by_name(func, args, i):
    def f(a):
        return func(*args[:i], a, *args[i + 1:])

    value, pullback = pb.vjp(f, args[i])
    assert value == func(*args)  # the value is SciPy's
    with pytest.raises(pb.NoRuleError) as refusal:
        pullback(1.0)
    message = str(refusal.value)
    assert f"argument {i}" in message and func.__name__ in message
    assert "no closed form" in message or "no rule" in message
