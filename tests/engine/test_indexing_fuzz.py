"""Property tests: ``x[index]`` on a tracked array equals NumPy's ``x[index]`` (shape, dtype,
values) for random indices of every form NumPy reads, and its gradient equals finite
differences of the same code on plain arrays.

An index is built from integers (negative too), slices (steps, negative steps, empty),
integer arrays, lists and tuples (broadcast shapes, repeats, 0-d, empty), boolean masks
over one or more axes, 0-d booleans, ``None`` and ``...`` in every position (often
standing for no axes at all, between advanced indices, where NumPy's layout turns on it).
"""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pullback as pb
from pullback.testing import check_batched


def _suffix_shape(draw, target):
    """A shape that broadcasts to ``target``: a suffix of it with some sides made 1."""
    keep = draw(st.integers(0, len(target)))
    return tuple(draw(st.sampled_from([s, 1])) for s in target[len(target) - keep:])


def _axis_item(draw, side, target):
    """An index item taking one axis of length ``side``."""
    kinds = ["slice", "array", "list", "tuple"] + (["int", "0-d array"] if side else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "slice":
        bound = st.none() | st.integers(-side - 1, side + 1)
        step = st.none() | st.sampled_from([1, 2, 3, -1, -2, -3])
        return slice(draw(bound), draw(bound), draw(step))
    if kind == "int":
        return draw(st.integers(-side, side - 1))
    if kind == "0-d array":
        return np.array(draw(st.integers(-side, side - 1)))
    shape = _suffix_shape(draw, target) if side else (0,)
    values = st.integers(-side, side - 1) if side else st.nothing()
    ints = np.array(draw(st.lists(values, min_size=int(np.prod(shape)),
                                  max_size=int(np.prod(shape)))), dtype=np.intp)
    ints = ints.reshape(shape)
    if kind == "array" or not ints.ndim:
        return ints
    return ints.tolist() if kind == "list" else tuple(ints.tolist())


def _mask(draw, sides, target):
    """A boolean mask over axes of ``sides``, true at as many places as the integer arrays
    broadcast to (or at one, or none)."""
    size = int(np.prod(sides))
    count = draw(st.sampled_from([target[-1] if target else size] * 2 + [1, 0]))
    assume(count <= size)
    where = draw(st.permutations(range(size)))[:count]
    mask = np.zeros(size, dtype=bool)
    mask[list(where)] = True
    return mask.reshape(sides)


@st.composite
def indexed(draw):
    """``(shape, index)``: an array shape and an index NumPy accepts for it."""
    shape = draw(st.lists(st.integers(1, 3), max_size=4))
    if shape and draw(st.integers(0, 4)) == 0:  # an empty array now and then
        shape[draw(st.integers(0, len(shape) - 1))] = 0
    shape = tuple(shape)
    target = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))  # integer arrays' shape
    if target and draw(st.integers(0, 6)) == 0:
        target = target[:-1] + (0,)
    # items consuming axes, left to right; an Ellipsis among them takes what they leave,
    # often nothing
    ellipsis = draw(st.booleans())
    taken = len(shape) if draw(st.booleans()) else draw(st.integers(0, len(shape)))
    groups, left = [], taken
    while left:
        n = draw(st.integers(1, left)) if draw(st.integers(0, 3)) == 0 else 1
        groups.append(n)
        left -= n
    at = len(groups)
    if ellipsis:  # between two items half the time: NumPy's layout turns on what stands there
        inner = len(groups) > 1 and draw(st.booleans())
        at = draw(st.integers(1, len(groups) - 1) if inner else st.integers(0, len(groups)))
    axes = list(range(sum(groups[:at]))) + list(
        range(len(shape) - sum(groups[at:]), len(shape)))
    items, k = [], 0
    for n in groups:
        sides = tuple(shape[a] for a in axes[k:k + n])
        k += n
        if n == 1 and draw(st.integers(0, 3)):
            items.append(_axis_item(draw, sides[0], target))
        else:
            items.append(_mask(draw, sides, target))
    if ellipsis:
        items.insert(at, Ellipsis)
    extras = st.sampled_from([None, None, None, True, np.True_, False])
    for extra in draw(st.lists(extras, max_size=2)):
        items.insert(draw(st.just(0) | st.integers(0, len(items))), extra)
    index = tuple(items)
    if len(items) == 1 and draw(st.booleans()):
        index = items[0]
    try:
        np.zeros(shape)[index]
    except IndexError:  # integer arrays and masks that do not broadcast together
        assume(False)
    return shape, index


def _finite_difference_grad(f, x):
    """The gradient of a real ``f``, one central difference per element of ``x``."""
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[k] = 1.0
        grad[k] = (f(x + step) - f(x - step)) / 2  # f is linear: exact up to rounding
    return grad


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(indexed(), st.sampled_from([np.float64, np.float32]), st.integers(0, 2**16))
def test_indexing_agrees_with_numpy(case, dtype, seed):
    shape, index = case
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.standard_normal(shape), dtype=dtype)
    expected = x[index]

    out, _ = pb.vjp(lambda x: x[index], x)
    assert out.shape == expected.shape and out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)

    x = x.astype(np.float64)
    w = rng.standard_normal(np.shape(expected))

    def loss(x):
        return np.sum(x[index] * w)

    np.testing.assert_allclose(pb.grad(loss)(x), _finite_difference_grad(loss, x),
                               rtol=1e-12, atol=1e-12)
    pb.check_grads(lambda x: x[index], x, order=2)
    check_batched(lambda x: x[index], x)
