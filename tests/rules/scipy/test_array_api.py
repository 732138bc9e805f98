"""SciPy's array-API helpers (rules/scipy/array_api.py), through the unchanged public SciPy
functions that call them and through code written against ``array_api_compat``."""

import numpy as np
import pytest
import scipy.signal as signal
import scipy.stats as st
from scipy._lib import array_api_compat as compat
from scipy._lib import array_api_extra as xpx

import pullback as pb
from pullback.rules.scipy.array_api import (
    APPLY_WHERE,
    AT_OP,
    CLIP,
    LAZYSELECT,
    NAMESPACES,
    SOLVE,
)
from pullback.rules.scipy.stats_generic import LAZYSELECT as STATS_LAZYSELECT

from ..spec import Spec

W = np.array([1.0, 2.0, 0.5, 3.0])


def _positive(rng, shape):
    return rng.uniform(0.5, 2.0, shape)


def _angles(rng, shape):
    return rng.uniform(-1.0, 1.0, shape)


def _ratio(rng, shape):
    return rng.uniform(0.2, 0.8, shape)


def _namespace_sum(ns):
    def call(x):
        xp = ns(x, W)  # a tracked and a plain argument: one namespace
        return xp.sum(x * W)

    return call


SPECS = [
    # burr's _pdf and betaprime's _cdf go through xpx.apply_where
    Spec(APPLY_WHERE, [((3,), (), ())], domain=(_positive, _positive, _positive),
         call=lambda x, c, d: st.burr.pdf(x, c + 1.0, d), name="scipy.stats.burr.pdf"),
    Spec(APPLY_WHERE, [(3,)], domain=_positive, call=lambda x: st.betaprime.cdf(x, 2.0, 3.0),
         name="scipy.stats.betaprime.cdf"),
    Spec(APPLY_WHERE, [((4,), (4,)), ((2, 3), ())], domain=("real", _positive),
         call=lambda x, y: xpx.apply_where(x > 0, (x, y), lambda x, y: np.log(x) * y,
                                           fill_value=-1.0),
         name="xpx.apply_where(fill_value)"),
    Spec(APPLY_WHERE, [((4,), (4,))], domain=("real", _positive),
         call=lambda x, y: xpx.apply_where(x > 0, (x, y), lambda x, y: np.log(x) * y,
                                           lambda x, y: x * x * y),
         name="xpx.apply_where(f2)"),
    Spec(APPLY_WHERE, [((4,), (4,))], domain=("real", _positive),
         call=lambda x, y: xpx.apply_where(x > 0, x, np.log, fill_value=y),
         name="xpx.apply_where(tracked fill_value)"),
    # tmean and yeojohnson_llf write through xpx.at(out, idx).set(...)
    Spec(AT_OP, [(6,)], domain=_positive, call=lambda x: st.tmean(x, (0.7, 1.8)),
         name="scipy.stats.tmean"),
    Spec(AT_OP, [(6,), (2, 5)], domain=_positive, call=lambda x: st.yeojohnson_llf(0.7, x),
         name="scipy.stats.yeojohnson_llf"),
    Spec(AT_OP, [(4,)], call=lambda x: xpx.at(np.zeros(4), np.array([0, 2])).set(x[1:3] ** 2),
         name="xpx.at(...).set"),
    # circvar and circstd clip with array_api_compat's clip
    Spec(CLIP, [(5,), (2, 4)], domain=_angles, call=st.circvar, name="scipy.stats.circvar"),
    Spec(CLIP, [(5,)], domain=_angles, call=st.circstd, name="scipy.stats.circstd"),
    Spec(CLIP, [(5,), ((5,), (), ())], domain=("real", lambda r, s: r.uniform(-1.0, -0.5, s),
                                               lambda r, s: r.uniform(0.5, 1.0, s)),
         call=lambda x, lo=-0.6, hi=0.6: compat.numpy.clip(x, lo, hi),
         name="array_api_compat.numpy.clip"),
    # lfilter_zi solves with array_api_compat's linalg.solve
    Spec(SOLVE, [(3,)], call=lambda b: signal.lfilter_zi(b, np.array([1.0, -0.5, 0.2])),
         name="scipy.signal.lfilter_zi"),
    Spec(SOLVE, [((3, 3), (3,)), ((3, 3), (3, 2))],
         call=lambda a, b: compat.numpy.linalg.solve(a + 3 * np.eye(3), b),
         name="array_api_compat.numpy.linalg.solve"),
    # triang's and trapezoid's private methods go through _lazyselect
    Spec(STATS_LAZYSELECT, [((3,), ())], domain=(_ratio, _ratio),
         call=lambda x, c: st.triang.logpdf(x, c), name="scipy.stats.triang.logpdf"),
    Spec(STATS_LAZYSELECT, [((3,), ())], domain=(_ratio, _ratio),
         call=lambda x, c: st.trapezoid.cdf(x, 0.5 * c, 0.5 + 0.4 * c),
         name="scipy.stats.trapezoid.cdf"),
    *[Spec(ns, [(4,)], call=_namespace_sum(ns), name=f"{pb.name_of(ns)}(tracked, plain)")
      for ns in NAMESPACES],
]


def _lazyselect_call(x):
    return LAZYSELECT([x < 0, x > 0.5], [lambda x: x ** 2, np.exp], (x,), default=np.nan)


SPECS.append(Spec(LAZYSELECT, [(6,)], call=lambda x: np.nan_to_num(_lazyselect_call(x)),
                  name="scipy._lib._util._lazyselect"))


def test_at_in_place_into_a_plain_array_is_refused():
    with pytest.raises(TypeError, match=r"at\(x, idx\)\.set\(y, copy=False\)"):
        pb.grad(lambda x: np.sum(xpx.at(np.zeros(3), 0).set(x, copy=False)))(1.0)


def test_at_add_updates_a_copy_and_differentiates():
    # (not a spec row: under pb.jit the recorded call of SciPy's at() updates its
    # captured buffer in place on every replay)
    z = np.zeros(4)
    x = np.array([1.0, 2.0, 3.0, 4.0])
    out, _ = pb.vjp(lambda x: xpx.at(z, np.array([0, 2])).add(x[1:3] ** 2), x)
    np.testing.assert_array_equal(z, np.zeros(4))  # (SciPy's, on plain arrays, writes z)
    np.testing.assert_array_equal(out, [4.0, 0.0, 9.0, 0.0])

    def f(x):  # buffers of its own, as SciPy's functions allocate them
        return (xpx.at(np.zeros(4), np.array([0, 2])).add(x[1:3] ** 2)
                + xpx.at(x * 1.0, 1).multiply(x[0]))

    pb.check_grads(f, x, order=2)


def test_apply_where_evaluates_each_branch_on_its_own_entries():
    seen = []

    def f1(x):
        seen.append(np.asarray(pb.stop_gradient(x)).copy())
        return np.log(x)

    x = np.array([-1.0, 2.0, 0.0, 3.0])
    g = pb.grad(lambda x: np.sum(xpx.apply_where(x > 0, x, f1, fill_value=0.0)))(x)
    np.testing.assert_array_equal(seen[0], [2.0, 3.0])
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.0, 1 / 3])  # no NaN from log(-1), log(0)


def test_the_namespace_of_a_tracked_and_a_plain_array_is_one():
    def f(x):
        assert compat.array_namespace(x, W) is compat.array_namespace(W)
        return np.sum(x)

    pb.grad(f)(W)
