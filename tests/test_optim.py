"""pb.optim: the update equations on fixed gradient sequences, the functional and Tracker
faces, schedules, pytrees, dtypes, clipping and saving, and a least-squares fit that converges
(the refusals: test_optim_misuse.py).

The oracle for an optimizer is its documented equation run in plain NumPy (an optimizer is
not a derivative rule): each function below is the docstring's equation, step by step.
"""

import math
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import optim

# ---------------------------------------------------------------------------- oracles


def sgd_oracle(x, grads, lr, momentum=0.0, nesterov=False, weight_decay=0.0):
    b = np.zeros_like(x)
    for g in grads:
        g = g + weight_decay * x
        if momentum:
            b = momentum * b + g
            d = g + momentum * b if nesterov else b
        else:
            d = g
        x = x - lr * d
    return x


def adam_oracle(x, grads, lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0, decoupled=False):
    m, v = np.zeros_like(x), np.zeros_like(x)
    for t, g in enumerate(grads, start=1):
        if not decoupled:
            g = g + weight_decay * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)
        if decoupled:
            x = x - lr * weight_decay * x
        x = x - lr * m_hat / (np.sqrt(v_hat) + eps)
    return x


def rmsprop_oracle(x, grads, lr, decay=0.9, eps=1e-8, momentum=0.0):
    s, b = np.zeros_like(x), np.zeros_like(x)
    for g in grads:
        s = decay * s + (1 - decay) * g ** 2
        if momentum:
            b = momentum * b + g / (np.sqrt(s) + eps)
            x = x - lr * b
        else:
            x = x - lr * g / (np.sqrt(s) + eps)
    return x


CASES = [
    ("sgd", lambda: optim.SGD(0.1), lambda x, gs: sgd_oracle(x, gs, 0.1)),
    ("sgd-momentum", lambda: optim.SGD(0.1, momentum=0.8),
     lambda x, gs: sgd_oracle(x, gs, 0.1, momentum=0.8)),
    ("sgd-nesterov-decay", lambda: optim.SGD(0.05, momentum=0.7, nesterov=True,
                                             weight_decay=0.3),
     lambda x, gs: sgd_oracle(x, gs, 0.05, 0.7, True, 0.3)),
    ("sgd-decay", lambda: optim.SGD(0.1, weight_decay=0.5),
     lambda x, gs: sgd_oracle(x, gs, 0.1, weight_decay=0.5)),
    ("momentum", lambda: optim.Momentum(0.1), lambda x, gs: sgd_oracle(x, gs, 0.1, 0.9)),
    ("adam", lambda: optim.Adam(0.01), lambda x, gs: adam_oracle(x, gs, 0.01)),
    ("adam-l2", lambda: optim.Adam(0.02, b1=0.8, b2=0.95, eps=1e-3, weight_decay=0.1),
     lambda x, gs: adam_oracle(x, gs, 0.02, 0.8, 0.95, 1e-3, 0.1)),
    ("adamw", lambda: optim.AdamW(0.01),
     lambda x, gs: adam_oracle(x, gs, 0.01, weight_decay=1e-2, decoupled=True)),
    ("adamw-strong", lambda: optim.AdamW(0.05, b1=0.5, weight_decay=0.4),
     lambda x, gs: adam_oracle(x, gs, 0.05, b1=0.5, weight_decay=0.4, decoupled=True)),
    ("rmsprop", lambda: optim.RMSProp(0.01), lambda x, gs: rmsprop_oracle(x, gs, 0.01)),
    ("rmsprop-momentum", lambda: optim.RMSProp(0.02, decay=0.8, eps=1e-4, momentum=0.6),
     lambda x, gs: rmsprop_oracle(x, gs, 0.02, 0.8, 1e-4, 0.6)),
]
IDS = [case[0] for case in CASES]


@pytest.fixture
def sequence():
    rng = np.random.default_rng(1)
    return rng.standard_normal((2, 3)), list(rng.standard_normal((6, 2, 3)))


# ---------------------------------------------------------------------------- equations

@pytest.mark.parametrize("name, make, oracle", CASES, ids=IDS)
def test_functional_update_follows_the_equation(name, make, oracle, sequence):
    x0, grads = sequence
    opt = make()
    x, state = x0, opt.init(x0)
    for g in grads:
        x, state = opt.update(x, g, state)
    assert state.count == len(grads)
    np.testing.assert_allclose(x, oracle(x0, grads), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, make, oracle", CASES, ids=IDS)
def test_tracker_step_follows_the_equation(name, make, oracle, sequence):
    x0, grads = sequence
    opt = make()
    W = pb.param(x0)
    for g in grads:
        W.grad = g.copy()
        assert opt.step([W]) == [W]
        np.testing.assert_array_equal(W.grad, np.zeros_like(x0))  # step resets .grad
    np.testing.assert_allclose(W.value, oracle(x0, grads), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, make, oracle", CASES, ids=IDS)
def test_a_param_listed_twice_moves_once(name, make, oracle, sequence):
    # as in pb.Params: a second entry would step again with the reset .grad (zeros), and
    # momentum, weight decay or Adam's moments would move the param a second time
    x0, grads = sequence
    opt = make()
    W = pb.param(x0)
    for g in grads:
        np.sum(W * g).backward()
        opt.step([W, W])
    np.testing.assert_allclose(W.value, oracle(x0, grads), rtol=1e-12, atol=1e-14)


def test_equations_worked_by_hand():
    one = np.array([1.0])
    x, _ = optim.SGD(0.1, momentum=0.5).update(one, one, optim.SGD(0.1, momentum=0.5)
                                               .init(one))
    np.testing.assert_allclose(x, [0.9])
    # momentum: b = 1, then b = 0.5 * 1 + 1 = 1.5: x = 1 - 0.1 - 0.15
    opt = optim.SGD(0.1, momentum=0.5)
    x, state = one, opt.init(one)
    for _ in range(2):
        x, state = opt.update(x, one, state)
    np.testing.assert_allclose(x, [0.75])
    np.testing.assert_allclose(state.buffers["momentum_buffer"], [1.5])
    # nesterov: b = 1, step g + 0.5 b = 1.5; then b = 1.5, step 1 + 0.75
    opt = optim.SGD(0.1, momentum=0.5, nesterov=True)
    x, state = one, opt.init(one)
    for _ in range(2):
        x, state = opt.update(x, one, state)
    np.testing.assert_allclose(x, [1 - 0.15 - 0.175])
    # Adam, two steps of gradient 2 then 0 (b1 = 0.5, b2 = 0.75, eps = 0):
    # m = 1, v = 1: step lr * 2 / 2; then m = 0.5, v = 0.75: m_hat = 2/3, v_hat = 16/7 * 0.75
    opt = optim.Adam(0.1, b1=0.5, b2=0.75, eps=0.0)
    x, state = opt.update(one, 2 * one, opt.init(one))
    np.testing.assert_allclose(x, [0.9])
    x, state = opt.update(x, 0 * one, state)
    m_hat, v_hat = 0.5 / 0.75, 0.75 / (1 - 0.75 ** 2)
    np.testing.assert_allclose(x, [0.9 - 0.1 * m_hat / math.sqrt(v_hat)])
    # RMSProp: s = 0.5 * 4 = 2, the step is lr * 2 / sqrt(2)
    x, _ = optim.RMSProp(0.1, decay=0.5, eps=0.0).update(one, 2 * one,
                                                         optim.RMSProp(0.1).init(one))
    np.testing.assert_allclose(x, [1 - 0.1 * math.sqrt(2)])


def test_functional_update_leaves_its_inputs_alone(sequence):
    x0, grads = sequence
    opt = optim.Adam(0.1)
    params = {"W": x0.copy()}
    state = opt.init(params)
    params, state = opt.update(params, {"W": grads[0]}, state)
    kept = ({"W": params["W"].copy()}, grads[1].copy(),
            {k: v["W"].copy() for k, v in state.buffers.items()})
    new_params, new_state = opt.update(params, {"W": grads[1]}, state)
    np.testing.assert_array_equal(params["W"], kept[0]["W"])
    np.testing.assert_array_equal(grads[1], kept[1])
    for k, v in state.buffers.items():
        np.testing.assert_array_equal(v["W"], kept[2][k])
    assert state.count == 1 and new_state.count == 2
    assert not np.array_equal(new_params["W"], params["W"])


# ---------------------------------------------------------------------------- two faces agree

def least_squares(W, b, x, y):
    return np.mean((x @ W + b - y) ** 2)


@pytest.mark.parametrize("make", [lambda: optim.SGD(0.1, momentum=0.9, nesterov=True),
                                  lambda: optim.Adam(0.05, weight_decay=0.1),
                                  lambda: optim.AdamW(0.05),
                                  lambda: optim.RMSProp(0.01, momentum=0.5)])
def test_functional_and_tracker_faces_agree(make, data):
    W0, b0, x, y = data
    functional, tracker = make(), make()
    params = {"W": W0, "b": b0}
    state = functional.init(params)
    grad = pb.grad(lambda p: least_squares(p["W"], p["b"], x, y))
    W, b = pb.param(W0), pb.param(b0)
    ps = pb.Params([W, b])
    for _ in range(5):
        params, state = functional.update(params, grad(params), state)
        gs = pb.gradient(lambda: least_squares(W, b, x, y), ps)
        optim.update(tracker, ps, gs)
    np.testing.assert_allclose(W.value, params["W"], rtol=1e-12)
    np.testing.assert_allclose(b.value, params["b"], rtol=1e-12)
    # and .backward() into .grad, then step(ps) with no gs, gives the same again
    third = make()
    W3, b3 = pb.param(W0), pb.param(b0)
    for _ in range(5):
        least_squares(W3, b3, x, y).backward()
        third.step(pb.Params([W3, b3]))
    np.testing.assert_allclose(W3.value, W.value, rtol=1e-12)


def test_tracker_counts_steps_per_param():
    # a param that joins later gets its own step count: Adam's first step is lr * sign(g)
    opt = optim.Adam(0.1)
    W, b = pb.param(np.array([1.0])), pb.param(np.array([1.0]))
    for _ in range(3):
        W.grad = np.array([5.0])
        opt.step([W])
    W.grad, b.grad = np.array([5.0]), np.array([3.0])
    opt.step([W, b])
    np.testing.assert_allclose(b.value, [0.9])
    np.testing.assert_allclose(W.value, adam_oracle(np.array([1.0]), [np.array([5.0])] * 4, 0.1))


# ---------------------------------------------------------------------------- schedules

def test_schedule_is_called_with_the_step_count():
    calls = []

    def schedule(count):
        calls.append(count)
        return 0.1 * (count + 1)

    opt = optim.SGD(schedule)
    x, state = np.array([1.0, 2.0]), opt.init(np.zeros(2))
    for _ in range(3):
        x, state = opt.update(x, np.ones(2), state)
    assert calls == [0, 1, 2]
    np.testing.assert_allclose(x, np.array([1.0, 2.0]) - (0.1 + 0.2 + 0.3))

    calls.clear()
    opt = optim.SGD(schedule)
    W, b = pb.param(np.ones(2)), pb.param(np.ones(3))
    for _ in range(3):
        W.grad, b.grad = np.ones(2), np.ones(3)
        opt.step(pb.Params([W, b]))
    assert calls == [0, 1, 2]  # once per step, not once per param
    np.testing.assert_allclose(b.value, 1.0 - 0.6)


def test_schedule_helpers():
    decay = optim.exponential_decay(0.2, 0.1, steps=10)
    np.testing.assert_allclose([decay(0), decay(10), decay(20)], [0.2, 0.02, 0.002])
    np.testing.assert_allclose(decay(5), 0.2 * 0.1 ** 0.5)
    cosine = optim.cosine_decay(0.2, steps=10, alpha=0.1)
    np.testing.assert_allclose([cosine(0), cosine(5), cosine(10), cosine(50)],
                               [0.2, 0.2 * (0.9 * 0.5 + 0.1), 0.02, 0.02])
    opt = optim.Adam(optim.cosine_decay(0.1, steps=2))
    x, state = np.array([1.0]), opt.init(np.zeros(1))
    for _ in range(4):
        x, state = opt.update(x, np.array([1.0]), state)
    np.testing.assert_allclose(x, [1.0 - 0.1 - 0.05], rtol=1e-7)  # lr 0.1, 0.05, 0, 0


# ---------------------------------------------------------------------------- pytrees, dtypes

def test_pytrees_of_dicts_and_tuples(sequence):
    x0, grads = sequence
    params = {"W": x0, "layers": (x0[0], [x0[1, :2]]), "s": 0.5}
    opt = optim.Adam(0.05, weight_decay=0.2)
    state = opt.init(params)
    assert state.buffers["exp_avg"]["layers"][1][0].shape == (2,)
    leaves, _ = pb.tree_flatten(params)
    history = [[] for _ in leaves]
    for g in grads:
        gtree = {"W": g, "layers": (g[0], [g[1, :2]]), "s": float(g[0, 0])}
        for h, leaf in zip(history, pb.tree_flatten(gtree)[0]):
            h.append(np.asarray(leaf))
        params, state = opt.update(params, gtree, state)
    assert set(params) == {"W", "layers", "s"} and isinstance(params["layers"], tuple)
    for leaf0, leaf, h in zip(leaves, pb.tree_flatten(params)[0], history):
        expected = adam_oracle(np.asarray(leaf0), h, 0.05, weight_decay=0.2)
        np.testing.assert_allclose(leaf, expected, rtol=1e-12)
    assert state.count == len(grads)


def test_float32_stays_float32():
    x32 = np.array([1.0, -2.0], dtype=np.float32)
    g64 = np.array([0.3, 0.4])
    schedule = lambda count: np.float64(0.1)  # a NumPy float from a schedule, too
    for opt in [optim.SGD(schedule, momentum=0.9), optim.Adam(schedule),
                optim.AdamW(0.1), optim.RMSProp(0.1, momentum=0.5)]:
        params, state = {"w": x32}, opt.init({"w": x32})
        for _ in range(2):
            params, state = opt.update(params, {"w": g64}, state)
        assert params["w"].dtype == np.float32
        for buffer in state.buffers.values():
            assert buffer["w"].dtype == np.float32
        W = pb.param(x32)
        for _ in range(2):
            W.grad = g64.copy()  # step resets .grad in place
            opt.step([W])
        assert W.value.dtype == np.float32
        np.testing.assert_allclose(W.value, params["w"], rtol=1e-6)


# ---------------------------------------------------------------------------- state vs params

def test_a_state_is_matched_to_params_by_key():
    # a state from init({'a', 'b'}) applied to {'b', 'a'} (the same keys in another order):
    # each key keeps its own momentum buffer; grads in a third order are matched by key too
    opt = optim.SGD(0.1, momentum=0.9)
    ga, gb = [np.array([1.0, 2.0]), np.array([0.5, 0.0])], [np.zeros(2), np.array([3.0, 1.0])]
    params = {"a": np.ones(2), "b": np.ones(2)}
    state = opt.init(params)
    params, state = opt.update(params, {"a": ga[0], "b": gb[0]}, state)
    swapped = {"b": params["b"], "a": params["a"]}
    for grads in ({"b": gb[1], "a": ga[1]}, {"a": ga[1], "b": gb[1]}):
        new, after = opt.update(swapped, grads, state)
        assert list(new) == ["b", "a"] and list(after.buffers["momentum_buffer"]) == ["b", "a"]
        np.testing.assert_allclose(new["a"], sgd_oracle(np.ones(2), ga, 0.1, momentum=0.9))
        np.testing.assert_allclose(new["b"], sgd_oracle(np.ones(2), gb, 0.1, momentum=0.9))
    # Adam: buffers of other shapes under the swapped keys are refused, not mixed up
    adam = optim.Adam(0.1)
    state = adam.init({"a": np.ones(2), "b": np.ones(3)})
    other = {"b": np.ones(2), "a": np.ones(3)}
    with pytest.raises(ValueError, match=r"state.buffers\['exp_avg(_sq)?'\]\['b'\] has shape "
                                         r"\(3,\), but params\['b'\] has shape \(2,\)"):
        adam.update(other, other, state)


def test_functional_update_is_differentiable_again():
    # differentiating through one step (meta-learning): the gradient that goes in is a
    # tracked value, and so are the new params and buffers
    opt = optim.SGD(0.1, momentum=0.5)

    def after_two_steps(x0):
        x, state = x0, opt.init(x0)
        for _ in range(2):
            x, state = opt.update(x, pb.grad(lambda x: np.sum(np.sin(x) * x))(x), state)
        return np.sum(x ** 2 + state.buffers["momentum_buffer"])

    pb.check_grads(after_two_steps, np.array([0.3, -1.2, 2.0]), order=2)


# ---------------------------------------------------------------------------- Tracker face

@pytest.mark.parametrize("name, make, oracle", CASES, ids=IDS)
def test_a_param_with_no_gradient_is_skipped(name, make, oracle, sequence):
    # as torch.optim: a param whose .grad is None does not move, and its state (buffers,
    # step count: Adam's bias correction) does not advance
    x0, grads = sequence
    opt = make()
    W, frozen = pb.param(x0), pb.param(x0)
    for k, g in enumerate(grads):
        W.grad, frozen.grad = (None if k == 2 else g.copy()), None
        opt.step([W, frozen])
        if k == 2:
            assert W.grad is None
    skipped = grads[:2] + grads[3:]
    np.testing.assert_allclose(W.value, oracle(x0, skipped), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(frozen.value, x0)
    assert opt.count == len(grads) - 1  # the step with every gradient None made no update
    opt.step([frozen])
    assert opt.count == len(grads) - 1


def test_step_before_backward_warns():
    # .grad starts at zeros: a step before loss.backward() is a step with a zero gradient
    W = pb.param(np.ones(2))
    opt = optim.SGD(0.1, momentum=0.9)
    with pytest.warns(RuntimeWarning, match=r"every .grad zero: was loss.backward\(\) called"):
        opt.step([W])
    np.sum(W ** 2).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step([W])  # a gradient: no warning
    np.testing.assert_allclose(W.value, [0.8, 0.8])


# ---------------------------------------------------------------------------- it trains

def test_least_squares_fit_converges():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((40, 3))
    y = x @ np.array([1.5, -2.0, 0.5]) + 0.3 + 0.05 * rng.standard_normal(40)
    design = np.hstack([x, np.ones((40, 1))])
    best = np.linalg.lstsq(design, y, rcond=None)[0]

    W, b = pb.param(np.zeros(3)), pb.param(np.zeros(()))
    ps = pb.Params([W, b])
    opt = optim.Adam(optim.cosine_decay(0.1, steps=600))
    for _ in range(600):
        least_squares(W, b, x, y).backward()
        opt.step(ps)
    np.testing.assert_allclose(np.append(W.value, b.value), best, atol=1e-4)

    opt = optim.SGD(0.1, momentum=0.9)
    params = {"W": np.zeros(3), "b": 0.0}
    state = opt.init(params)
    grad = pb.grad(lambda p: least_squares(p["W"], p["b"], x, y))
    for _ in range(300):
        params, state = opt.update(params, grad(params), state)
    np.testing.assert_allclose(np.append(params["W"], params["b"]), best, atol=1e-6)


# ---------------------------------------------------------------------------- first contact

def test_tab_completion_offers_the_optimizers_not_the_modules_imports():
    names = dir(pb.optim)
    assert {"Adam", "SGD", "clip_by_global_norm", "clip_by_value", "OptState"} <= set(names)
    assert not {"Any", "np", "math", "warnings", "collections", "Tracked"} & set(names)
    assert all(hasattr(pb.optim, name) for name in pb.optim.__all__)


# ---------------------------------------------------------------------------- clipping

def _by_hand_global_norm(grads, max_norm):
    """clip_by_global_norm's documented equation, in plain NumPy."""
    leaves = [np.asarray(g, dtype=np.float64) for g in grads]
    norm = math.sqrt(sum(float(np.sum(g * g)) for g in leaves))
    return [g * min(1.0, max_norm / norm) for g in leaves], norm


def test_clip_by_global_norm_scales_every_gradient_by_one_factor():
    rng = np.random.default_rng(0)
    grads = {"W": rng.normal(size=(3, 2)), "b": (rng.normal(size=2), 0.5)}
    leaves, treedef = pb.tree_flatten(grads)
    want, norm = _by_hand_global_norm(leaves, 1.0)
    assert float(pb.optim.global_norm(grads)) == pytest.approx(norm)
    got = pb.optim.clip_by_global_norm(grads, 1.0)
    assert pb.tree_flatten(got)[1] == treedef
    for g, w in zip(pb.tree_flatten(got)[0], want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
    assert float(pb.optim.global_norm(got)) == pytest.approx(1.0)
    same = pb.optim.clip_by_global_norm(grads, 2 * norm)   # below max_norm: unchanged
    for g, w in zip(pb.tree_flatten(same)[0], leaves):
        np.testing.assert_array_equal(g, w)
    g32 = pb.optim.clip_by_global_norm([np.ones(4, np.float32)], 0.5)[0]
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, 0.25, rtol=1e-6)


def test_clipping_in_the_tracker_face_and_of_grads():
    W, b = pb.param(np.array([3.0, 0.0]), name="W"), pb.param(np.array(4.0), name="b")
    ps = pb.Params([W, b])
    gs = pb.gradient(lambda: np.sum(W * np.array([3.0, 0.0])) + 4 * b, ps)
    clipped = pb.optim.clip_by_global_norm(gs, 1.0)
    assert isinstance(clipped, pb.Grads)
    np.testing.assert_allclose(clipped[W], [0.6, 0.0])
    np.testing.assert_allclose(clipped[b], 0.8)
    (np.sum(W * np.array([30.0, 0.0])) + 40 * b).backward()
    assert pb.optim.clip_by_value(ps, -5.0, 5.0) is ps          # each .grad replaced
    np.testing.assert_array_equal(W.grad, [5.0, 0.0])
    assert float(b.grad) == 5.0
    pb.optim.clip_by_global_norm(ps, 1.0)
    assert float(pb.optim.global_norm(ps)) == pytest.approx(1.0)
    pb.optim.SGD(1.0).step(ps)
    np.testing.assert_allclose(W.value, [3.0 - math.sqrt(0.5), 0.0])


def test_clipping_is_differentiable_for_a_meta_gradient():
    def clipped_step(lr):   # one clipped SGD step, differentiated in lr
        g = pb.optim.clip_by_global_norm({"w": np.array([3.0, -4.0]) * lr}, 1.0)
        return np.sum(g["w"] * np.array([1.0, 2.0])) + lr ** 2

    pb.check_grads(clipped_step, 0.7, order=2)
    pb.check_grads(lambda g: np.sum(pb.optim.clip_by_value([g], -1.0, 1.0)[0] ** 2),
                   np.array([0.3, -0.4]), order=2)


# ---------------------------------------------------------------------------- saving state

def _train(opt, W, x, y, steps):
    for _ in range(steps):
        np.mean((x @ W - y) ** 2).backward()
        opt.step([W])


def test_params_and_the_tracker_state_survive_np_savez(tmp_path):
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(10, 3)), rng.normal(size=10)
    W = pb.param(np.zeros(3))
    opt = pb.optim.Adam(0.1)
    _train(opt, W, x, y, 3)
    np.savez(tmp_path / "params.npz", W=W.value)
    np.savez(tmp_path / "opt.npz", **opt.state_dict([W]))
    _train(opt, W, x, y, 4)                     # the run that is not interrupted

    V = pb.param(np.load(tmp_path / "params.npz")["W"])
    again = pb.optim.Adam(0.1)
    with np.load(tmp_path / "opt.npz") as saved:
        again.load_state_dict([V], saved)
    assert again.count == 3
    _train(again, V, x, y, 4)
    np.testing.assert_array_equal(V.value, W.value)


def test_the_functional_state_survives_np_savez(tmp_path):
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(10, 3)), rng.normal(size=10)
    loss = lambda p: np.mean((x @ p["W"] + p["b"] - y) ** 2)   # noqa: E731
    opt = pb.optim.AdamW(0.1)
    params = {"W": np.zeros(3), "b": np.array(0.0)}
    state = opt.init(params)
    for _ in range(3):
        params, state = opt.update(params, pb.grad(loss)(params), state)
    leaves, treedef = pb.tree_flatten((params, state))
    np.savez(tmp_path / "run.npz", *leaves)
    with np.load(tmp_path / "run.npz") as saved:
        params2, state2 = pb.tree_unflatten(treedef, [saved[f"arr_{i}"]
                                                      for i in range(len(leaves))])
    for _ in range(2):
        params, state = opt.update(params, pb.grad(loss)(params), state)
        params2, state2 = opt.update(params2, pb.grad(loss)(params2), state2)
    np.testing.assert_array_equal(params2["W"], params["W"])
    assert state2.count == 5
