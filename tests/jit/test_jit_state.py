"""pb.jit and the state a function reads: a jitted call gives the eager call's result, or
runs eagerly with a warning, or raises a pullback error; it is never silently different.
The oracle is the eager call of the same function on the same arguments and state, and
for gradients central differences of the function itself."""

import collections
import dataclasses
import math
import pickle
import random
import statistics
import types
import warnings

import numpy as np
import pytest

import pullback as pb
from tests.conftest import central_differences


def _same(got, want):
    got, want = pb.tree_flatten(got)[0], pb.tree_flatten(want)[0]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w) or np.isscalar(g) and np.isscalar(w), (type(g), type(w))
        if isinstance(w, str):
            assert g == w
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def _agree(f, *args, jitted=None):
    """The jitted call (quiet: an eager fallback warns) against the eager one, now."""
    jf = jitted or pb.jit(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = jf(*args)
    _same(got, f(*args))
    return jf


X = np.array([0.3, -1.2, 2.1, 0.7])


# ---------------------------------------------------------------------------- hashing

WEIGHTS = {0: 1.0, 1: 2.0, 2: 3.0, 3: 4.0}


def test_traced_values_hash_by_value_as_numpys_scalars():
    def classes(y, x):  # the number of classes of an integer label argument
        return np.sum(x) / len(set(y.tolist())) + len(set(y)) * np.sum(x ** 2)

    def counts(y, x):
        c = collections.Counter(y)
        return c[1] * np.sum(x) + c[2] * np.sum(x ** 2)

    def lookup(x):
        return WEIGHTS.get(np.argmax(x), 0.0) * np.sum(x ** 2) + (np.argmax(x) in {2, 3})

    def by_sign(x):
        return {True: 3.0, False: -1.0}[x[1] > 0] * np.sum(x)

    for f, args in ((classes, (np.array([0, 1, 1, 4, 4]), X)),
                    (counts, (np.array([1, 2, 2, 1, 2]), X)), (lookup, (X,)), (by_sign, (X,))):
        jf, jg = pb.jit(f), pb.jit(pb.grad(f, argnums=len(args) - 1))
        for k in range(3):
            args_k = args[:-1] + (args[-1] * (-1) ** k * (1 + k),)
            _agree(f, *args_k, jitted=jf)
            _agree(pb.grad(f, argnums=len(args) - 1), *args_k, jitted=jg)
        x = args[-1]
        np.testing.assert_allclose(jg(*args), central_differences(
            lambda x, f=f, args=args: f(*args[:-1], x), x), rtol=1e-6, atol=1e-6)


def test_a_traced_array_is_unhashable_as_numpys():
    with pytest.raises(TypeError, match="unhashable"):
        pb.jit(lambda x: hash(x) + x)(X)


# ---------------------------------------------------------------------------- containers

LAYERS = [np.full(4, 0.5)]


def test_a_container_or_object_that_grows_traces_again():
    def deep(x):
        for W in LAYERS:
            x = np.tanh(W * x)
        return np.sum(x)

    cfg = {}

    def scaled(x):
        return cfg.get("scale", 1.0) * np.sum(x ** 2)

    o = types.SimpleNamespace()

    def attribute(x):
        return getattr(o, "scale", 1.0) * np.sum(x)

    for f in (deep, scaled, attribute):
        jf, jg = _agree(f, X), _agree(pb.grad(f), X)
        LAYERS.append(np.full(4, -2.0))
        cfg["scale"] = 10.0
        o.scale = 5.0
        _agree(f, X, jitted=jf)
        _agree(pb.grad(f), X, jitted=jg)
        del LAYERS[1:]
        cfg.clear()
        del o.scale


def test_strings_none_and_functions_in_captured_state_are_compared():
    class Net:
        def __init__(self):
            self.mode, self.act, self.mask = "tanh", np.tanh, None

        def loss(self, x):
            h = self.act(x) if self.mode == "tanh" else 2 * x
            return np.sum(h if self.mask is None else h * self.mask)

    net = Net()
    loss = _agree(net.loss, X)
    for change in (lambda: setattr(net, "act", np.sin), lambda: setattr(net, "mask", X),
                   lambda: setattr(net, "act", lambda h: 3 * h),
                   lambda: setattr(net, "mode", "linear")):
        change()
        _agree(net.loss, X, jitted=loss)

    mode = "a"

    def closure(x):
        return np.sum(x) if mode == "a" else np.sum(x ** 2)

    jc = _agree(closure, X)
    mode = "b"
    _agree(closure, X, jitted=jc)


# ------------------------------------------------------------- arrays written after a use

def test_a_local_array_written_after_a_call_used_it_runs_eagerly():
    def onehots(x):
        e, outs = np.zeros(3), []
        for i in range(3):
            e[:] = 0
            e[i] = 1
            outs.append(np.dot(e, x) ** 2)
        return np.array(outs)

    def scaled(x):
        w = np.ones(3)
        s = np.sum(w * x)
        w *= 3
        return s + np.sum(w * x)

    x = np.array([1.0, 2.0, 3.0])
    for f in (onehots, scaled):
        with pytest.warns(RuntimeWarning, match="writes into an array after"):
            _same(pb.jit(f)(x), f(x))


# ---------------------------------------------------------------------------- globals

G = np.array([1.0, 2.0, 3.0])
DEPTH_G = np.array([1.0, 2.0, 3.0])
helpers = types.ModuleType("jit_state_helpers")
exec("import numpy as np\nH = np.array([1.0, 2.0, 3.0])\n"
     "def helper(x):\n    return np.sum(H * x)\n", helpers.__dict__)


class Model:
    def forward(self, x):
        return G * x

    def loss(self, x):
        return np.sum(self.forward(x) ** 2)

    @property
    def total(self):
        return np.sum(G)

    @staticmethod
    def static(x):
        return np.sum(G * x)


def _chain(n):
    """``f0`` calling ``f1`` calling ... ``fn``, which reads DEPTH_G."""
    scope = {"np": np, "DEPTH_G": DEPTH_G}
    exec(f"def f{n}(x):\n    return np.sum(DEPTH_G * x)\n", scope)
    for k in reversed(range(n)):
        exec(f"def f{k}(x):\n    return f{k + 1}(x)\n", scope)
    return scope["f0"]


def test_globals_read_by_functions_reached_indirectly_are_seen():
    m = Model()
    table = {"f": lambda x: np.sum(G - x)}

    def apply(g, x):
        return g(x) * np.sum(x)

    x = np.array([1.0, 1.0, 1.0])
    cases = [
        (lambda x: helpers.helper(x), (x,)), (pb.grad(m.loss), (x,)), (m.loss, (x,)),
        (apply, (helpers.helper, x)), (lambda x: table["f"](x), (x,)),
        (lambda x: Model.static(x), (x,)), (lambda x: m.total * x, (x,)),
        (_chain(12), (x,)),
    ]
    for f, args in cases:
        jf = _agree(f, *args)
        for change in (lambda: helpers.H.__imul__(2.0), lambda: G.__imul__(3.0),
                       lambda: DEPTH_G.__iadd__(1.0)):
            change()
            _agree(f, *args, jitted=jf)
        helpers.H[:], G[:], DEPTH_G[:] = [1, 2, 3], [1, 2, 3], [1, 2, 3]


def test_a_class_attribute_a_deque_and_an_object_array_are_compared():
    class K:
        W = np.ones(3)
        scale = 1.0

    q = collections.deque([np.ones(3)])
    objects = np.empty(2, dtype=object)
    objects[0], objects[1] = np.ones(3), 2.0

    def f(x):
        return np.sum(K.W * x) * K.scale + np.sum(q[0] * x) + np.sum(objects[0] * x) * objects[1]

    x = np.array([1.0, 2.0, 3.0])
    jf = _agree(f, x)
    for change in (lambda: K.W.__imul__(2.0), lambda: setattr(K, "scale", 3.0),
                   lambda: q[0].__iadd__(1.0), lambda: q.__setitem__(0, np.zeros(3)),
                   lambda: objects.__setitem__(1, 12.0), lambda: objects[0].__imul__(5.0)):
        change()
        _agree(f, x, jitted=jf)


def test_globals_assigned_after_pb_jit_are_traced():
    scope = {"np": np}
    exec("def f(x):\n    return np.sum(W * x) + OFFSET\n"
         "def g(x):\n    return np.sum(V * x ** 2)\n", scope)
    jf, jg = pb.jit(scope["f"]), pb.jit(pb.grad(scope["g"]))
    scope.update(W=np.ones(3), OFFSET=3.0, V=np.ones(3))
    x = np.array([1.0, 2.0, 3.0])
    _agree(scope["f"], x, jitted=jf)
    _agree(pb.grad(scope["g"]), x, jitted=jg)
    scope["OFFSET"], scope["W"] = 2.0, np.zeros(3)
    scope["V"][:] = 10.0
    _agree(scope["f"], x, jitted=jf)
    _agree(pb.grad(scope["g"]), x, jitted=jg)


def test_an_iterator_read_inside_runs_eagerly():
    batches = iter([1.0, 2.0, 3.0])

    def loss(w):
        return np.sum(w * next(batches))

    step = pb.jit(pb.grad(loss))
    with pytest.warns(RuntimeWarning, match="an iterator"):
        got = [step(X)[0] for _ in range(3)]
    np.testing.assert_allclose(got, X[0] * 0 + np.array([1.0, 2.0, 3.0]))


# ---------------------------------------------------------------------------- randomness

def test_randomness_the_function_makes_itself_is_refused():
    def python_random(x):
        return np.sum(x) * random.random()

    def fresh_generator(x):
        return np.sum(x * np.random.default_rng().normal(size=x.shape))

    def fresh_state(x):
        return np.sum(x * np.random.RandomState().normal(size=x.shape))

    for f in (python_random, fresh_generator, fresh_state):
        for g in (pb.jit(f), pb.jit(pb.grad(f))):
            with pytest.raises(TypeError, match="^pullback: .* draws random numbers"):
                g(X)

    def seeded(x):  # the same draw on every call: replayed as eager draws it
        return np.sum(x * np.random.default_rng(0).normal(size=x.shape))

    _agree(seeded, X, jitted=_agree(seeded, X))


# ---------------------------------------------------------------------------- out

def test_a_positional_out_runs_eagerly_as_the_keyword_does():
    buf = np.empty(3)
    cases = [lambda x: np.cumsum(x, 0, None, buf), lambda x: np.dot(x, x, np.empty(())),
             lambda x: np.add(x, 1.0, buf), lambda x: np.add.reduce(x, 0, None, np.empty(())),
             lambda x: np.clip(x, -1, 1, buf), lambda x: x.cumsum(0, None, buf)]
    for k, f in enumerate(cases):
        jf = pb.jit(f)
        # (NumPy 1.26's np.dot has no signature to find its out in: the write into the
        # array a call took is what runs that call eagerly there)
        reason = ("writes into an array (in place|after a NumPy call took it)" if k == 1
                  and np.lib.NumpyVersion(np.__version__) < "2.0.0" else
                  "writes into an array in place")
        with pytest.warns(RuntimeWarning, match=reason):
            first = jf(np.array([1.0, 2.0, 3.0])).copy()
        second = jf(np.array([-1.0, 0.5, 4.0]))
        _same(first, f(np.array([1.0, 2.0, 3.0])))
        _same(second, f(np.array([-1.0, 0.5, 4.0])))


# ---------------------------------------------------------------------------- layout

def test_the_memory_layout_is_part_of_the_key():
    def f(x):
        return np.sum(np.arange(6.0) * np.ravel(x, order="A"))

    def strides(x):
        return np.sum(x) * (2.0 if x.flags.f_contiguous else 1.0) * x.strides[0]

    g, js = pb.jit(pb.grad(f)), pb.jit(strides)
    c = np.arange(6.0).reshape(2, 3)
    for x in (c, np.asfortranarray(c), c):
        np.testing.assert_allclose(g(x), central_differences(f, x), atol=1e-8)
        _agree(strides, x, jitted=js)


# ---------------------------------------------------------------------------- strings

def test_strings_and_dtypes_made_from_values_are_guards():
    def summary(x):
        return np.sum(x ** 2), {"x": np.array2string(x), "r": np.array_repr(x[:2])}

    def reprs(x):
        return np.sum(x), {"r": repr(x[0]), "s": f"{x[1]!r}", "t": "%r" % x[2]}

    def decides(x):
        return x * (2.0 if "-" in repr(x[1]) else 1.0)

    def smallest(s):
        return s * (2.0 if np.min_scalar_type(s) == np.float16 else 3.0)

    for f, values in ((pb.value_and_grad(summary, has_aux=True), (X, 100 * X)),
                      (reprs, (X, 100 * X)), (decides, (X, -X)),
                      (smallest, (np.float64(2.0), np.float64(8e300)))):
        jf = pb.jit(f)
        for x in values:
            _agree(f, x, jitted=jf)


# ---------------------------------------------------------------------------- arguments

@dataclasses.dataclass(frozen=True)
class Layer:
    name: str
    W: np.ndarray = dataclasses.field(compare=False)


def test_argument_objects_that_compare_equal_keep_their_own_arrays():
    def f(layer, x):
        return np.sum(layer.W * x)

    jf = pb.jit(f)
    x = np.ones(3)
    for layer in (Layer("dense", np.ones(3)), Layer("dense", 5 * np.ones(3))):
        _agree(f, layer, x, jitted=jf)


def test_the_same_array_twice_is_one_value():
    def f(x, y):
        return np.sum(x * y) if x is y else np.sum(x - y)

    jf = pb.jit(f)
    a, b = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    for args in ((a, a), (a, b), (b, b), (b, a)):
        _agree(f, *args, jitted=jf)


def test_object_arrays_masked_arrays_and_matrices_run_as_eagerly():
    MA = np.ma.masked_array(np.array([1.0, 5.0, 1.0, 1.0]), mask=[0, 1, 0, 0])
    cases = [(lambda x: np.sum(np.asarray(x, dtype=object) ** 2), X),
             (lambda x: np.sum(x * MA), X), (lambda x: np.sum(x ** 2), MA),
             (lambda x: np.sum(x * 2), np.matrix([[1.0, 2.0]]))]
    for f, x in cases:
        _agree(f, x)
        for g in (pb.grad(f), pb.jit(pb.grad(f))):  # eager's refusal, under jit too
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                with pytest.raises(TypeError, match="^pullback: "):
                    g(x)


# ---------------------------------------------------------------------------- Python state

def test_an_except_branch_the_trace_did_not_take_runs_as_eagerly():
    def solve(A, b):
        try:
            return np.linalg.solve(A, b)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(A, b, rcond=None)[0]

    def caught(x):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                return np.log(x)
            except RuntimeWarning:
                return np.zeros_like(x)

    js = _agree(solve, np.eye(2), np.ones(2))
    _agree(solve, np.ones((2, 2)), np.array([0.3, 0.6]), jitted=js)
    jc = _agree(caught, np.array([1.0, 2.0]))
    with np.errstate(divide="warn"):
        _agree(caught, np.array([0.0, 2.0]), jitted=jc)


def test_np_errstate_is_the_calls_own():
    def f(x):
        return np.sum(np.sqrt(x) * x)

    def g(x):
        with np.errstate(divide="ignore"):
            return np.sum(np.log(x))

    x = np.array([0.0, 1.0])
    for h in (pb.grad(f), g):
        jh = pb.jit(h)
        with np.errstate(all="ignore"):
            _agree(h, x, jitted=jh)
        with np.errstate(all="raise"):
            _agree(h, x, jitted=jh)


def test_pb_jit_on_a_method_binds_it():
    class M:
        def __init__(self, scale):
            self.scale = scale

        @pb.jit
        def loss(self, x):
            return self.scale * np.sum(x ** 2)

    a, b = M(2.0), M(3.0)
    for m in (a, b, a):
        _same(m.loss(X), m.scale * np.sum(X ** 2))
    assert a.loss is a.loss and a.loss.traces == 1


def test_python_reads_of_traced_values_follow_the_values():
    def reads(x):
        return (math.floor(x[0]) + math.trunc(x[1]) + math.ceil(x[2]) + x[3].is_integer()
                + x[0].as_integer_ratio()[1] + statistics.mean(x) + len(pickle.dumps(x))
                + len(x.tobytes()) + len(bytes(x)) + int(x.view(np.int64)[0] % 7)
                + x.ctypes.data * 0 + x)

    jf = pb.jit(reads)
    for x in (np.array([1.5, 2.25, -0.5, 3.0]), np.array([-2.5, 7.75, 1.5, 0.5])):
        _agree(reads, x, jitted=jf)


class _Model:
    """A model object as libraries make them: data, options, a large cache the
    likelihood never reads, and methods that read what they need by name."""

    def __init__(self, X, y):
        self.exog, self.endog, self.penalty = X, y, 0.0
        self.cache = {i: np.full(2, float(i)) for i in range(30000)}  # (never read)
        self.history = [np.zeros(3) for _ in range(3000)]

    def linear(self, w):
        return self.exog @ w

    def loglike(self, w):
        offset = getattr(self, "offset", 0.0)  # a name given as a string
        eta = self.linear(w) + offset
        ll = np.sum(self.endog * eta - np.logaddexp(0.0, eta))
        return ll - self.penalty * np.sum(w * w)


def _model(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    return _Model(X, (rng.random(40) < 0.5).astype(float)), rng


def test_the_state_a_method_reads_is_watched_not_all_its_object_holds():
    model, rng = _model()
    jitted = pb.jit(pb.grad(model.loglike))
    w = rng.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "reaches more than it looks into")
        _same(jitted(w), pb.grad(model.loglike)(w))
    model.cache[7][0] = 5.0  # what the function never reads: no new trace
    model.history[3][1] = 2.0
    _same(jitted(w), pb.grad(model.loglike)(w))
    assert jitted.traces == 1
    np.testing.assert_allclose(jitted(w), central_differences(model.loglike, w), atol=1e-6)


@pytest.mark.parametrize("change", [
    lambda m: m.endog.__setitem__(slice(0, 20), 1.0 - m.endog[:20]),  # written in place
    lambda m: setattr(m, "exog", m.exog * 2.0),  # another array
    lambda m: setattr(m, "penalty", 0.5),  # a number
    lambda m: setattr(m, "offset", 0.25),  # an attribute read by getattr, now there
    lambda m: setattr(m, "linear", lambda w: m.exog @ w * 0.5),  # a method shadowed
    lambda m: setattr(type(m), "linear", lambda self, w: self.exog @ w * 3.0),  # the class
])
def test_a_change_to_what_a_method_read_is_seen_as_eager_sees_it(change):
    class Model(_Model):  # (a class of its own: the change may be to the class)
        pass

    model, rng = _model()
    model.__class__ = Model
    jitted = pb.jit(pb.grad(model.loglike))
    for k in range(3):
        w = rng.normal(size=3)
        if k == 1:
            change(model)
        _same(jitted(w), pb.grad(model.loglike)(w))
        np.testing.assert_allclose(jitted(w), central_differences(model.loglike, w),
                                   atol=1e-6)


@pytest.mark.parametrize("read", [
    lambda self: getattr(self, "".join(["sc", "ale"])),  # a name made at run time
    lambda self: vars(self)["scale"],
    lambda self: self.__dict__["scale"],
    lambda self: object.__getattribute__(self, "".join(["sc", "ale"])),
])
def test_attributes_read_by_computed_names_or_through_vars_are_watched(read):
    class Computed:
        def __init__(self):
            self.scale = np.ones(3)

        def f(self, x):
            return x * read(self)

    obj = Computed()
    jitted = pb.jit(obj.f)
    x = np.arange(3.0)
    _same(jitted(x), obj.f(x))
    obj.scale[1] = 7.0
    _same(jitted(x), obj.f(x))
    obj.scale = np.full(3, 2.0)
    _same(jitted(x), obj.f(x))


def test_statsmodels_likelihoods_jit_to_their_score_and_see_their_data_change():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(0)
    X = sm.add_constant(rng.normal(size=(200, 2)))
    beta = np.array([0.2, -0.4, 0.3])
    mu = np.exp(X @ beta)
    models = [sm.Logit((rng.random(200) < 1 / (1 + 1 / mu)).astype(float), X),
              sm.Poisson(rng.poisson(mu).astype(float), X),
              sm.GLM(rng.gamma(2.0, mu / 2.0), X, family=sm.families.Gamma(
                  sm.families.links.Log()))]
    for model in models:
        kw = {"scale": 1.0} if isinstance(model, sm.GLM) else {}  # (score's own scale)
        jitted, eager = pb.jit(pb.grad(model.loglike)), pb.grad(model.loglike)
        for k in range(4):
            w = beta + 0.1 * rng.normal(size=3)
            if k == 2:  # the data replaced in place, as eagerly seen
                model.endog[:50] = model.endog[50:100].copy()
            if k == 3:  # an attribute set
                model.exog = model.exog * 1.5
            got = jitted(w, **kw)
            np.testing.assert_allclose(got, model.score(w, **kw), rtol=1e-9)
            np.testing.assert_allclose(got, eager(w, **kw), rtol=1e-12)
            np.testing.assert_allclose(jitted(w), eager(w), rtol=1e-12)  # (its own scale)


def test_a_trace_leaves_the_profile_function_and_getattr_as_it_found_them():
    import builtins
    import cProfile
    import sys

    calls = []

    def profile(frame, event, arg):  # a user's own profile function: still called inside
        calls.append(event)

    model, rng = _model()
    w = rng.normal(size=3)
    before = builtins.getattr
    sys.setprofile(profile)
    try:
        pb.jit(pb.grad(model.loglike))(w)
        assert sys.getprofile() is profile and builtins.getattr is before
    finally:
        sys.setprofile(None)
    assert "call" in calls
    with pytest.raises(ZeroDivisionError):
        pb.jit(lambda x: x / 0 if getattr(x, "nd" + "im") else 1 // 0)(np.array(1.0))
    assert sys.getprofile() is None and builtins.getattr is before
    profiler = cProfile.Profile()  # a profiler in C: everything the object holds is watched
    jitted = pb.jit(model.loglike)
    profiler.enable()
    try:
        with warnings.catch_warnings():  # (more than it looks into: a warning)
            warnings.simplefilter("ignore", RuntimeWarning)
            _same(jitted(w), model.loglike(w))
    finally:
        profiler.disable()
    model.penalty = 3.0
    _same(jitted(w), model.loglike(w))


def test_traces_in_two_threads_leave_getattr_as_they_found_it():
    import builtins
    import threading

    before = builtins.getattr
    errors = []

    def work(seed):
        try:
            model, rng = _model(seed)
            for _ in range(5):  # (a new object each time: a trace each time)
                model = _Model(model.exog, model.endog)
                w = rng.normal(size=3)
                _same(pb.jit(pb.grad(model.loglike))(w), pb.grad(model.loglike)(w))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert builtins.getattr is before


def test_attributes_read_by_operator_attrgetter_are_watched():
    import operator

    class Link:
        def __init__(self):
            self.degree_k = 2.0

    class Holder:
        def __init__(self):
            self.linkage = Link()

        def f(self, x):
            return x ** operator.attrgetter("linkage.degree_k")(self)

    obj = Holder()
    jitted = pb.jit(obj.f)
    x = np.arange(1.0, 4.0)
    _same(jitted(x), obj.f(x))
    obj.linkage.degree_k = 3.0
    _same(jitted(x), obj.f(x))
