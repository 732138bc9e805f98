import numpy as np

from .spec import BINARY, Spec, check_constant, parametrize

SPECS = [
    Spec(np.add, BINARY, call=lambda x, y: x + y),
    Spec(np.subtract, BINARY, call=lambda x, y: x - y),
    Spec(np.multiply, BINARY, call=lambda x, y: x * y),
    Spec(np.true_divide, BINARY, domain=("real", "nonzero"), call=lambda x, y: x / y),
    Spec(np.power, BINARY, domain=("positive", "real"), call=lambda x, y: x ** y),
    Spec(np.negative, call=lambda x: -x),
    Spec(np.positive, call=lambda x: +x),
    Spec(np.absolute, domain="nonzero", order=2, call=lambda x: abs(x)),
    Spec(np.exp),
    Spec(np.log, domain="positive"),
    Spec(np.sin),
    Spec(np.cos),
    Spec(np.tanh),
    Spec(np.sqrt, domain="positive"),
    Spec(np.square),
    Spec(np.maximum, BINARY, order=1, why="kink where x == y; random inputs avoid it"),
    Spec(np.minimum, BINARY, order=1, why="kink where x == y; random inputs avoid it"),
    Spec(np.clip, [(2, 3)], kwargs={"a_min": [-0.5, None], "a_max": [0.5]}, order=1,
         why="piecewise linear: the second derivative is zero almost everywhere"),
    Spec(np.clip, [((2, 3), (), (3,))], call=lambda x, lo, hi: np.clip(x, lo - 1, hi + 1),
         order=1, why="piecewise linear", name="np.clip(tracked bounds)"),
]

NONDIFF = [np.floor_divide, np.sign, np.floor, np.ceil, np.rint, np.trunc, np.equal,
           np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
           np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.isnan,
           np.isinf, np.isfinite, np.signbit]


@parametrize(SPECS)
def test_rule(case):
    case.check()


def test_nondifferentiable_outputs_are_constants():
    x, y = np.array([1.5, -2.5, 0.0]), np.array([1.0, 2.0, 3.0])
    for func in NONDIFF:
        if func.nin == 1:
            check_constant(func, x)
        else:
            check_constant(func, x, y)
