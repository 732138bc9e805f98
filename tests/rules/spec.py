"""The spec table machinery: one row per rule, one generic test for every row.

A row names the registered function, how to call it, the input domain, the shapes to
try (each a tuple with one shape per differentiated argument), a grid of keyword
arguments and the order to check. The generic test checks, for every shape and keyword
combination: the value against plain NumPy, the derivatives against central finite
differences in float64 (``pb.check_grads``, to ``order``), and that a stack of
cotangents through one pass equals separate passes (``check_batched``).
"""

import dataclasses
import itertools

import numpy as np

import pullback as pb
from pullback.testing import check_batched

# NumPy 2 features (keywords, argument forms) are tested in rows built only under NumPy 2
NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"

SCALAR = ((),)
UNARY = [(), (3,), (2, 3)]
BINARY = [((), ()), ((3,), (3,)), ((2, 3), (2, 3)), ((2, 1), (1, 3)), ((3,), ())]


def _domain(name):
    def draw(rng, shape):
        if name == "real":
            return rng.standard_normal(shape)
        if name == "positive":
            return rng.uniform(0.5, 2.0, shape)
        if name == "unit":
            return rng.uniform(-0.9, 0.9, shape)
        if name == "gt1":
            return rng.uniform(1.2, 3.0, shape)
        if name == "complex":
            return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        if name == "nonzero":
            return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)
        raise ValueError(name)

    return draw


@dataclasses.dataclass
class Spec:
    """One row of the table.

    ``func`` is the registered function; ``call(*args, **kw)`` how a user calls it
    (default ``func``); ``domain`` a name or a tuple of names (one per argument) or a
    callable ``(rng, shape) -> array``; ``shapes`` a list of tuples of argument shapes (a
    plain shape for a one-argument function); ``kwargs`` the keyword grid (a dict of
    lists, crossed); ``order`` 2 where the function is smooth, else 1 with ``why``.
    """

    func: object
    shapes: list = dataclasses.field(default_factory=lambda: list(UNARY))
    domain: object = "real"
    kwargs: dict = dataclasses.field(default_factory=dict)
    call: object = None
    order: int = 2
    why: str = ""
    rtol: float = 1e-6
    batched: bool = True
    name: str = ""

    def cases(self):
        keys = list(self.kwargs)
        grid = [dict(zip(keys, vals)) for vals in itertools.product(*self.kwargs.values())]
        for shapes in self.shapes:
            if not (isinstance(shapes, tuple) and shapes and isinstance(shapes[0], tuple)):
                shapes = (shapes,)
            for kw in grid or [{}]:
                yield Case(self, shapes, kw)

    @property
    def label(self):
        return self.name or pb.name_of(self.func)


@dataclasses.dataclass
class Case:
    spec: Spec
    shapes: tuple
    kw: dict

    @property
    def id(self):
        kw = ",".join(f"{k}={v}" for k, v in self.kw.items())
        return f"{self.spec.label}-{'x'.join(str(s) for s in self.shapes)}-{kw}"

    def args(self, seed=0):
        rng = np.random.default_rng(seed)
        domains = self.spec.domain
        if not isinstance(domains, (tuple, list)):
            domains = [domains] * len(self.shapes)
        out = []
        for d, s in zip(domains, self.shapes):
            draw = d if callable(d) else _domain(d)
            out.append(np.asarray(draw(rng, s)))
        return out

    def check(self):
        spec = self.spec
        call = spec.call or spec.func
        kw = self.kw

        def f(*xs):
            return call(*xs, **kw)

        f.__qualname__ = self.id
        args = self.args()
        expected = f(*args)
        out, _ = pb.vjp(f, *args)
        for got, want in zip(pb.tree_flatten(out)[0], pb.tree_flatten(expected)[0]):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                       err_msg=f"{self.id}: value differs from NumPy")
        pb.check_grads(f, *args, order=spec.order, rtol=spec.rtol)
        if spec.batched:
            check_batched(f, *args)


@dataclasses.dataclass
class Args:
    """How to call a non-differentiable function in the ``NONDIFF`` tables: positional and
    keyword arguments (floats get tracked), and whether to compare values with NumPy's
    (not for ``np.empty_like``, whose values are whatever memory held)."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    values: bool = True


def check_constant(func, call):
    """A non-differentiable function returns a plain (untracked) value on tracked input,
    equal to NumPy's, with NumPy's shapes and dtypes. ``call`` is an ``Args`` or a tuple of
    positional arguments."""
    if not isinstance(call, Args):
        call = Args(tuple(call))
    boxed = [pb.param(a) if np.asarray(a).dtype.kind in "fc" else a for a in call.args]
    got = func(*boxed, **call.kwargs)
    want = func(*call.args, **call.kwargs)
    for g, w in zip(pb.tree_flatten(got)[0], pb.tree_flatten(want)[0]):
        assert not isinstance(g, pb.Tracked), f"{pb.name_of(func)} returned a tracked value"
        if isinstance(w, str):  # np.array2string's text, np.einsum_path's report
            assert g == w
            continue
        assert np.shape(g) == np.shape(w) and np.result_type(g) == np.result_type(w)
        if call.values:
            np.testing.assert_array_equal(g, w)


def check_unreached(f, *args, values=(np.inf, -np.inf, np.nan), whole=False):
    """An infinite or NaN cotangent of one output entry reaches only the input entries that
    entry depends on: each input entry in which it is locally constant (moving the entry by
    +-1e-7 and +-1e-3 leaves it exactly as it was: finite differences of 0) gets exactly 0,
    not 0 * inf = NaN. Checked for every output entry and each of ``values``, against
    ``f`` on plain float64 arrays; returns how many such (output, input) pairs there were.
    With ``whole``, only the input entries that no output entry depends on are checked.
    """
    args = [np.array(a, dtype=float) for a in args]
    out = np.asarray(f(*args))
    flat = out.ravel()
    constant = []  # per argument: [output entry, input entry] -> locally constant
    for k, a in enumerate(args):
        table = np.ones((flat.size, a.size), bool)
        for j in range(a.size):
            for step in (1e-7, -1e-7, 1e-3, -1e-3):
                moved = a.copy()
                moved.flat[j] += step
                after = np.asarray(f(*args[:k], moved, *args[k + 1:])).ravel()
                table[:, j] &= (after == flat) | (np.isnan(after) & np.isnan(flat))
        constant.append(table)
    _, pullback = pb.vjp(f, *args)
    pairs = 0
    for p in range(flat.size):
        for value in values:
            seed = np.zeros(out.shape)
            seed.flat[p] = value
            cts = pullback(seed)
            for k, ct in enumerate(cts):
                unreached = constant[k].all(axis=0) if whole else constant[k][p]
                got = np.ravel(ct)[unreached]
                assert np.all(got == 0), (
                    f"a cotangent {value} of output entry {p} gave {got} to entries "
                    f"{np.flatnonzero(unreached)} of argument {k}, which it does not depend on")
                pairs += int(unreached.sum())
    return pairs
