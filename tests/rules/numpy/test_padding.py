import numpy as np
import pytest

import pullback as pb

from ..spec import NUMPY2, Spec, check_unreached

_PIECEWISE = ("piecewise linear (each pad copies one selected entry of its line): the second "
              "derivative is zero away from ties, which random inputs avoid")

COORDINATES = np.array([0.0, 0.4, 1.5, 1.9, 3.0])  # unevenly spaced sample points

SPECS = [
    Spec(np.pad, [(3,), (2, 3)], kwargs={"pad_width": [1, (2, 0)], "constant_values": [0, 1.5]}),
    # a dict pad_width (axis -> widths) is a NumPy 2 feature
    Spec(np.pad, [(2, 3)],
         kwargs={"pad_width": [((0, 1), (2, 0)), *([{-1: (1, 2)}] if NUMPY2 else [])]}),
    Spec(np.pad, [(3,), (2, 3)], kwargs={"pad_width": [2, (1, 4)],
                                         "mode": ["edge", "wrap", "reflect", "symmetric"]}),
    *([Spec(np.pad, [(2, 3)], kwargs={"pad_width": [{0: 1}], "mode": ["reflect", "median"]},
            why=_PIECEWISE)] if NUMPY2 else []),
    Spec(np.pad, [(3,), (2, 3)], kwargs={"pad_width": [(1, 4)], "mode": ["reflect", "symmetric"],
                                         "reflect_type": ["odd"]}),
    Spec(np.pad, [(3,), (2, 3)], kwargs={"pad_width": [(2, 1)], "mode": ["linear_ramp"],
                                         "end_values": [0, (1.0, -2.0)]}),
    Spec(np.pad, [(4,), (2, 3)], kwargs={"pad_width": [(2, 1)], "mode": ["mean"],
                                         "stat_length": [None, 2]}),
    Spec(np.pad, [(4,), (3, 4), (2, 3, 2)], kwargs={
        "pad_width": [(2, 1)], "mode": ["maximum", "minimum", "median"],
        "stat_length": [None, 2]}, why=_PIECEWISE),
    # the padding of mode 'empty' holds no defined values: only the input's part is compared
    Spec(np.pad, [(2, 3)], call=lambda x: np.pad(x, ((1, 2), (0, 1)), mode="empty")[1:-2, :-1],
         name="np.pad(empty)"),
    Spec(np.diff, [(3,), (2, 4)], kwargs={"n": [0, 1, 2], "axis": [-1]}),
    Spec(np.diff, [(3, 2)], kwargs={"n": [1, 2], "axis": [0]}),
    Spec(np.diff, [(2, 3)], call=lambda x: np.diff(x, prepend=0.5, append=[[1.0], [2.0]]),
         name="np.diff(constant prepend, append)"),
    Spec(np.diff, [((2, 3), (2, 1), ()), ((3,), (2,), ())], name="np.diff(prepend, append)",
         call=lambda x, p, a: np.diff(x, 2, prepend=p, append=a)),
    Spec(np.ediff1d, [(1,), (4,), (2, 3)]),
    Spec(np.gradient, [(2,), (2, 3)], name="np.gradient(two samples)"),
    Spec(np.gradient, [(3,), (5,), (3, 4), (3, 3, 4)], kwargs={"edge_order": [1, 2]},
         name="np.gradient(1 to 3 axes)"),
    Spec(np.gradient, [(4, 5)], kwargs={"axis": [0, -1, (1, 0)], "edge_order": [1, 2]}),
    Spec(np.gradient, [(6,), (3, 4)], kwargs={"edge_order": [1, 2]},
         call=lambda f, edge_order: np.gradient(f, 0.3, edge_order=edge_order),
         name="np.gradient(one constant spacing)"),
    Spec(np.gradient, [((6,), ()), ((3, 4), ())], domain=("real", "positive"),
         kwargs={"edge_order": [1, 2]}, name="np.gradient(one spacing)"),
    Spec(np.gradient, [((3, 4), (), ())], domain=("real", "positive", "positive"),
         kwargs={"edge_order": [1, 2]}, name="np.gradient(a spacing per axis)"),
    Spec(np.gradient, [((3, 5), ())], domain=("real", "positive"), kwargs={"edge_order": [1, 2]},
         call=lambda f, h, edge_order: np.gradient(f, h, COORDINATES, edge_order=edge_order),
         name="np.gradient(a spacing and coordinates)"),
    Spec(np.gradient, [(5,), (2, 5)], kwargs={"edge_order": [1, 2]},
         call=lambda f, edge_order: np.gradient(f, COORDINATES, axis=-1, edge_order=edge_order),
         name="np.gradient(coordinates)"),
    Spec(np.gradient, [(4,)], domain="complex", kwargs={"edge_order": [1, 2]},
         name="np.gradient(complex)"),
    Spec(np.ediff1d, [((4,), (2,), ()), ((2, 3), (), (2, 2))], name="np.ediff1d(ends)",
         call=lambda x, e, b: np.ediff1d(x, to_end=e, to_begin=b)),
]




@pytest.mark.parametrize("mode, kwargs", [
    ("edge", {}), ("reflect", {}), ("symmetric", {}), ("wrap", {}), ("linear_ramp", {}),
    ("reflect", {"reflect_type": "odd"}), ("mean", {"stat_length": 2}),
    ("maximum", {}), ("minimum", {"stat_length": 3}), ("median", {"stat_length": 2}),
], ids=["edge", "reflect", "symmetric", "wrap", "linear_ramp", "reflect-odd", "mean",
        "maximum", "minimum", "median"])
def test_an_infinite_cotangent_reaches_only_what_the_padding_copies(mode, kwargs):
    # a padded entry's inf or NaN cotangent goes to the entries it copies or selects, and
    # exactly 0 to the others (not through a product with the padding matrix's zeros)
    x = np.array([[0.5, -1.0, 2.0, 4.0], [3.0, 1.5, -0.5, 0.0]])
    with np.errstate(invalid="ignore"):
        assert check_unreached(lambda x: np.pad(x, ((0, 1), (2, 1)), mode, **kwargs), x) > 0


def test_maximum_padding_shares_the_gradient_among_ties():
    x = np.array([1.0, 3.0, 3.0, 2.0])
    g = pb.grad(lambda x: np.sum(np.pad(x, (2, 0), mode="maximum")))(x)
    np.testing.assert_array_equal(g, [1.0, 2.0, 2.0, 1.0])


def test_median_padding_of_an_even_count_shares_the_two_middle_values():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    g = pb.grad(lambda x: np.sum(np.pad(x, (1, 0), mode="median")))(x)
    np.testing.assert_array_equal(g, [1.0, 1.0, 1.5, 1.5])


def test_pad_with_a_function_as_mode_has_no_rule():
    def mode(vector, width, axis, kwargs):
        vector[:width[0]] = 0.0

    with pytest.raises(pb.NoRuleError, match="np.pad"):
        pb.grad(lambda x: np.sum(np.pad(x, 1, mode=mode)))(np.ones(3))


def test_gradient_with_respect_to_sample_coordinates_has_no_rule():
    f = np.array([1.0, 2.0, 4.0, 3.0, 0.5])
    with pytest.raises(pb.NoRuleError, match="the sample coordinates"):
        pb.grad(lambda x: np.sum(np.gradient(f, x) ** 2))(COORDINATES)
