"""``import pullback`` changes nothing else: NumPy's and SciPy's objects are their own while
nothing is differentiated, and while something is, code that passes no tracked value gets
NumPy's and SciPy's own results, errors, pickles, signatures and warnings.

Each check that needs a process without pullback (or with it imported late) runs in a
fresh interpreter."""

import gc
import inspect
import pickle
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import pullback as pb
from pullback._engine import interception as _interception

NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _run(code, timeout=180):
    """Run ``code`` in a fresh interpreter; its standard output."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


# a snapshot of NumPy's and SciPy's namespaces, and of the code of every function in them
_SNAPSHOT = """
import gc, types
import numpy as np
import numpy.lib.stride_tricks
import scipy.fft, scipy.integrate, scipy.linalg, scipy.signal, scipy.spatial.distance
import scipy.sparse.linalg, scipy.special, scipy.stats

MODULES = [np, np.linalg, np.fft, np.lib.stride_tricks, scipy.fft, scipy.integrate,
           scipy.linalg, scipy.signal, scipy.spatial.distance, scipy.special, scipy.stats,
           scipy.sparse.linalg]
OWNERS = MODULES + [scipy.stats.norm, scipy.stats.gamma, scipy.stats.multivariate_normal,
                    type(scipy.stats.norm).__mro__[1], np.vectorize,
                    *scipy.sparse.csr_array.__mro__[:-1]]


def snapshot():
    entries = {(id(o), k): v for o in OWNERS for k, v in vars(o).items()}
    codes = {id(f): f.__code__ for f in (v for o in OWNERS for v in vars(o).values())
             if isinstance(f, types.FunctionType)}
    return entries, codes


def unchanged(before):
    entries, codes = snapshot()
    return entries.keys() == before[0].keys() and all(
        entries[k] is v for k, v in before[0].items()) and all(
        codes[k] is c for k, c in before[1].items())
"""


def test_import_and_a_finished_differentiation_leave_numpy_and_scipy_as_they_were():
    out = _run(_SNAPSHOT + """
before = snapshot()
import pullback as pb
assert unchanged(before), "import pullback changed a namespace"
x = np.array([0.3, -1.2, 0.8])
A = scipy.sparse.csr_array(np.eye(3) * 2.0)
g = pb.grad(lambda x: scipy.special.logsumexp(np.stack([x, 2.0 * x])) +
            scipy.stats.norm.logpdf(x[0], x[1], 2.0) + np.sum(scipy.linalg.expm(np.diag(x)))
            + np.sum(A @ x) + np.sum(scipy.sparse.linalg.splu(A.tocsc()).solve(x)))(x)
assert unchanged(before), "a differentiation left a stand-in behind"
W = pb.param(np.ones(3))
assert not unchanged(before) and scipy.special.logsumexp is before[0][
    (id(scipy.special), "logsumexp")], "a live param: the stand-ins are in place"
del W
gc.collect()
assert unchanged(before), "the last param's end put NumPy's objects back"
try:
    pb.grad(lambda x: np.stack([x, x])[5])(x)
except IndexError:
    pass
assert unchanged(before), "a differentiation that raised left a stand-in behind"
print("ok")
""")
    assert out.strip() == "ok"


def test_the_import_is_light():
    out = _run("""
        import sys
        import pullback
        heavy = sorted({m.split(".")[0] for m in sys.modules} & {"scipy", "dask", "pandas"})
        print(heavy)
    """)
    assert out.strip() == "[]"


def test_scipy_functions_bound_before_the_import_reach_their_rules():
    # the names a user's module and a library's bind before import pullback (scikit-learn's
    # Gaussian process binds cholesky and cho_solve so)
    _run("""
        from scipy.linalg import cho_solve, cholesky, solve
        from scipy.spatial.distance import cdist
        from scipy.special import logsumexp
        from scipy.stats import norm
        import numpy as np
        import pullback as pb

        logpdf = norm.logpdf  # a bound method, taken before too
        A = np.array([[3.0, 0.5, 0.1], [0.5, 2.0, 0.3], [0.1, 0.3, 1.5]])
        P = np.array([[0.0, 1.0], [1.0, 0.5], [2.0, -1.0]])

        def f(x):
            L = cholesky(A + np.outer(x, x), lower=True)
            return (logsumexp(x) + np.sum(solve(A, x) * x) + np.sum(cdist(P, P + x[:2]))
                    + np.sum(cho_solve((L, True), x)) + np.sum(logpdf(x, 0.5, 2.0)))

        pb.check_grads(f, np.array([0.3, -0.2, 0.5]), order=2)
    """)


def test_a_scipy_module_imported_inside_a_differentiation_brings_its_rules():
    _run("""
        import numpy as np
        import pullback as pb

        def f(x):
            import scipy.special
            return scipy.special.logsumexp(x * x)

        pb.check_grads(f, np.array([0.3, -0.2, 0.5]), order=2)
    """)


def _stand_ins():
    """Every registered stand-in, with its original."""
    return [(owner, name, made, _interception.original_of(made))
            for owner, name, made in _interception.attribute_swaps()
            if isinstance(made, _interception.StandIn)]


def test_a_stand_in_is_its_original_but_for_is():
    keep = pb.param(np.zeros(1))  # a live param: the stand-ins are in place
    try:
        checked = 0
        for owner, name, made, original in _stand_ins():
            assert getattr(owner, name) is made
            assert made == original and original == made and not (made != original)
            assert hash(made) == hash(original)
            assert made.__doc__ == original.__doc__
            assert made.__module__ == original.__module__
            assert getattr(made, "__name__", None) == getattr(original, "__name__", None)
            assert isinstance(made, type(original))
            assert repr(made) == repr(original)
            assert dir(made) == dir(original)
            if hasattr(original, "_implementation"):
                assert made._implementation is original._implementation
            try:
                expected = inspect.signature(original)
            except (TypeError, ValueError):
                expected = None
            if expected is not None:
                assert inspect.signature(made) == expected
            assert hasattr(made, "__get__") == hasattr(type(original), "__get__")
            assert {original: 1}[made] == 1 and {made: 1}[original] == 1
            checked += 1
        assert checked > 250
    finally:
        del keep
        gc.collect()


def test_numpy_functions_as_class_attributes_bind_as_numpys_do():
    keep = pb.param(np.zeros(1))
    try:
        class Holder:  # written while the stand-ins are in place
            array = np.array     # a builtin: no binding
            average = np.mean    # NumPy 2's dispatched functions bind as methods
            concatenate = staticmethod(np.concatenate)

            def __array__(self, dtype=None, copy=None):
                return np.arange(3.0)

        h = Holder()
        assert h.array([1, 2], dtype=float).dtype == np.float64
        assert h.concatenate([[1.0], [2.0]]).shape == (2,)
        if NUMPY2:
            assert h.average() == 1.0
    finally:
        del keep
        gc.collect()


def test_the_nep18_recipe_written_during_a_differentiation():
    # NumPy's documented recipe: a dispatch table keyed by NumPy's functions
    keep = pb.param(np.zeros(1))
    try:
        handled = {}

        class Diagonal:
            def __init__(self, n, value):
                self.n, self.value = n, value

            def __array_function__(self, func, types, args, kwargs):
                if func not in handled:
                    return NotImplemented
                return handled[func](*args, **kwargs)

        handled[np.mean] = lambda d: d.value / d.n
        handled[np.sum] = lambda d: d.value
        assert np.mean(Diagonal(4, 2.0)) == 0.5
        del keep
        gc.collect()
        assert np.mean(Diagonal(4, 2.0)) == 0.5 and np.sum(Diagonal(4, 2.0)) == 2.0
    finally:
        gc.collect()


def _unpickle_elsewhere(data):
    """What ``data`` unpickles to in an interpreter that never imports pullback: its module
    and name."""
    return _run(f"""
        import pickle, sys
        f = pickle.loads({data!r})[-1]
        assert "pullback" not in sys.modules
        print(f.__module__, f.__qualname__)
    """).split()


def test_pickling_by_reference_during_a_differentiation():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    keep = pb.param(np.zeros(1))
    try:
        for func in (np.dot, np.sum, np.array, np.asarray, np.linalg.norm, np.concatenate,
                     scipy_linalg.solve, _interception.original_of(np.dot),
                     _interception.original_of(np.array)):
            again = pickle.loads(pickle.dumps(func))
            assert again == func
        data = pickle.dumps([np.stack, scipy_linalg.solve])
    finally:
        del keep
        gc.collect()
    assert _unpickle_elsewhere(data)[-2:] == ["scipy.linalg._basic", "solve"]


def test_other_threads_get_numpys_results_while_one_differentiates():
    stop, failures = threading.Event(), []
    A = np.random.default_rng(0).standard_normal((4, 4))
    expected = (np.concatenate([A, A]), np.dot(A, A), np.asarray([A[0], A[1]]),
                np.linalg.norm(A))

    def plain_work():
        while not stop.is_set():
            got = (np.concatenate([A, A]), np.dot(A, A), np.asarray([A[0], A[1]]),
                   np.linalg.norm(A))
            if not all(np.array_equal(g, e) and type(g) is type(e)
                       for g, e in zip(got, expected)):
                failures.append(got)
            try:
                np.concatenate([A, A[0]])
            except ValueError as error:  # NumPy's own error, unchanged
                if "pullback" in str(error):
                    failures.append(error)

    worker = threading.Thread(target=plain_work)
    worker.start()
    try:
        for _ in range(200):
            pb.grad(lambda x: np.sum(np.stack([x, x * x])))(np.ones(3))
    finally:
        stop.set()
        worker.join()
    assert not failures


@pytest.mark.skipif(not NUMPY2, reason="np.cross of 2-vectors warns from NumPy 2.0 on")
def test_numpys_warnings_name_the_users_line_outside_a_differentiation():
    out = _run("""
        import warnings
        import numpy as np
        import pullback as pb

        pb.grad(lambda x: np.sum(np.stack([x, x])))(np.ones(2))  # one before
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            np.cross(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
        print([(w.filename, w.category.__name__) for w in caught])
    """)
    assert out.strip() == "[('<string>', 'DeprecationWarning')]"


def test_a_numpy_function_saved_before_a_differentiation_keeps_numpys_refusal_words():
    # np.asarray saved while nothing is differentiated is NumPy's own: given a tracked value
    # it refuses with pullback's sentence, which names the fix
    out = _run("""
        import numpy as np
        import pullback as pb

        asarray = np.asarray
        try:
            pb.grad(lambda x: np.sum(asarray(x)))(np.ones(2))
        except TypeError as error:
            print(str(error)[:10])
    """)
    assert out.strip() == "pullback:"


def test_dir_shows_the_public_api_and_no_internal_module():
    names = dir(pb)
    assert {"grad", "jit", "param", "optim", "tracker", "extend"} <= set(names)
    assert not {"core", "registry", "construct", "backward", "_engine", "_jit", "_wiring",
                "refusals", "guard", "rules"} & set(names)
    assert all(hasattr(pb, n) for n in names)
