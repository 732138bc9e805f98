"""pb.jit's check of the state a function reads, compiled once per program (watch.py's
``_check``): each watched place read once per call, a path that several entries share
read once, places named by keywords, by strings that are no identifiers and by keys of
any type, and places that can no longer be read. A change between calls is seen as the
eager call sees it, and no change traces nothing again. The oracle is the eager call."""

import warnings

import numpy as np
import pytest

import pullback as pb


class _Data:
    def __init__(self, X, y):
        self.exog, self.endog = X, y


class _Model:
    """Its data behind one attribute (``self.data.exog``, ``self.data.endog``: one path
    shared), options read by ``getattr`` with a default, by a keyword and by a string that
    is no identifier, a dict with keys that are no strings, and a set."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.data = _Data(rng.normal(size=(30, 3)), (rng.random(30) < 0.5).astype(float))
        self.scale, self.unused = 1.0, 0
        self.weights = {(0, "a"): 1.0, 3: 2.0}
        self.active = {0, 1}
        setattr(self, "class", 0.5)
        setattr(self, "two words", 0.25)

    def loglike(self, w):
        eta = self.data.exog @ w * self.scale + getattr(self, "offset", 0.0)
        ll = np.sum(self.data.endog * eta - np.logaddexp(0.0, eta))
        extra = (self.weights[(0, "a")] * self.weights[3] + getattr(self, "class")
                 + getattr(self, "two words") + sum(self.active))
        return ll * extra


def _set_offset_in_place_of_another(m):  # one attribute gone, one come: as many names
    del m.unused
    m.offset = 0.5


def _swap_an_element(m):
    m.active.discard(1)
    m.active.add(2)


CHANGES = {
    "written in place through a shared path": lambda m: m.data.exog.__setitem__(
        (0, 0), 4.0),
    "the shared path's object rebound": lambda m: setattr(m, "data", _Data(
        m.data.exog * 2.0, m.data.endog.copy())),
    "another array at the path's end": lambda m: setattr(m.data, "endog", 1.0 - m.data.endog),
    "a number": lambda m: setattr(m, "scale", 2.0),
    "a name read by getattr, now there": lambda m: setattr(m, "offset", 0.5),
    "as many names, another one": _set_offset_in_place_of_another,
    "the class given the name": lambda m: setattr(type(m), "offset", 0.5),
    "an attribute named by a keyword": lambda m: setattr(m, "class", 2.0),
    "an attribute named by no identifier": lambda m: setattr(m, "two words", 1.5),
    "a dict entry under a tuple key": lambda m: m.weights.__setitem__((0, "a"), 3.0),
    "a dict entry under an int key": lambda m: m.weights.__setitem__(3, -1.0),
    "a set's element": _swap_an_element,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_change_to_what_the_trace_read_is_seen_and_no_change_traces_nothing(change):
    class Model(_Model):  # (a class of its own: the change may be to the class)
        pass

    model = Model()
    jitted, eager = pb.jit(pb.grad(model.loglike)), pb.grad(model.loglike)
    rng = np.random.default_rng(1)
    for k in range(4):
        w = rng.normal(size=3)
        if k == 2:
            change(model)
        np.testing.assert_allclose(jitted(w), eager(w), rtol=1e-12)
        assert jitted.traces == (1 if k < 2 else 2)


def test_a_place_that_cannot_be_read_any_more_is_a_change():
    model = _Model()
    jitted, eager = pb.jit(pb.grad(model.loglike)), pb.grad(model.loglike)
    w = np.array([0.1, -0.2, 0.3])
    np.testing.assert_allclose(jitted(w), eager(w), rtol=1e-12)
    del model.data.endog  # (the check's read raises: each entry then says what changed)
    with pytest.raises(AttributeError, match="endog"):
        eager(w)
    with pytest.raises(AttributeError, match="endog"):
        jitted(w)
    model.data.endog = np.ones(30)
    np.testing.assert_allclose(jitted(w), eager(w), rtol=1e-12)


def test_the_warning_names_the_place_that_kept_changing():
    model = _Model()
    jitted = pb.jit(model.loglike)
    w = np.array([0.1, -0.2, 0.3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(10):
            model.scale = 1.0 + k  # (a new number each call: a new trace, up to the limit)
            np.testing.assert_allclose(jitted(w), model.loglike(w), rtol=1e-12)
    assert any("self.scale" in str(c.message) for c in caught), [str(c.message) for c in caught]


@pytest.mark.parametrize("kind", ["dok_array", "dok_matrix"])
def test_a_mapping_that_keeps_its_items_elsewhere_is_seen_changed(kind):
    sp = pytest.importorskip("scipy.sparse")
    A = getattr(sp, kind)(np.array([[0.0, 1.0, 2.0, 0.0], [3.0, 0.0, 0.0, 4.0]]))
    f = pb.grad(lambda x, A=A: np.sum((A @ x) ** 2))  # (its pullback: A's transpose)
    jitted, x = pb.jit(f), np.arange(1.0, 5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (scipy.sparse's dict: eagerly)
        for change in (lambda: None, lambda: A.__setitem__((0, 0), 7.0),
                       lambda: A.__delitem__((0, 1))):
            change()
            np.testing.assert_allclose(jitted(x), f(x), rtol=1e-12)
