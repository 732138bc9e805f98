"""pb.optim's refusals: bad hyperparameters, gradients and states that do not fit the
params, misuse of the Tracker face's step, clipping and load_state_dict; each raises before
anything moves, with a message that names the leaf or the param."""

import re
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback import optim

# ---------------------------------------------------------------------------- errors

def test_bad_hyperparameters_raise():
    with pytest.raises(TypeError, match="lr must be a float or a schedule"):
        optim.SGD("0.1")
    with pytest.raises(ValueError, match="lr must lie in"):
        optim.Adam(-1e-3)
    with pytest.raises(ValueError, match="b1 must lie in"):
        optim.Adam(b1=1.0)
    with pytest.raises(ValueError, match="nesterov=True needs a momentum"):
        optim.SGD(0.1, nesterov=True)
    with pytest.raises(ValueError, match="decay must lie in"):
        optim.RMSProp(decay=1.5)
    opt = optim.SGD(lambda count: None)
    with pytest.raises(TypeError, match="schedule returned None at step 0"):
        opt.update(np.ones(1), np.ones(1), opt.init(np.ones(1)))


def test_missing_or_mismatched_gradients_raise():
    W, b = pb.param(np.ones(2)), pb.param(np.ones(3))
    gs = pb.gradient(lambda: np.sum(W ** 2), pb.Params([W]))
    opt = optim.Adam(0.1)
    with pytest.raises(KeyError, match=r"gs has no gradient for the param of shape \(3,\)"):
        opt.step(pb.Params([W, b]), gs)
    with pytest.raises(TypeError, match="gs must be a pb.Grads"):
        opt.step([W], {W: np.ones(2)})
    with pytest.raises(TypeError, match=r"takes a list or a pb.Params of params, got one param: "
                                        r"step\(\[W\]\)"):
        opt.step(W)
    with pytest.raises(TypeError, match="updates values made with pb.param"):
        opt.step([np.ones(2)])
    with pytest.raises(TypeError, match="needs an optimizer"):
        optim.update(pb.Params([W]), opt)
    state = opt.init({"a": np.ones(2)})
    with pytest.raises(ValueError, match="grads must have the structure of params"):
        opt.update({"a": np.ones(2)}, {"b": np.ones(2)}, state)
    with pytest.raises(ValueError, match=r"grads\['a'\] has shape \(3,\), but params\['a'\] "
                                         r"has shape \(2,\)"):
        opt.update({"a": np.ones(2)}, {"a": np.ones(3)}, state)
    with pytest.raises(TypeError, match="state must come from this optimizer's init"):
        opt.update({"a": np.ones(2)}, {"a": np.ones(2)}, optim.SGD(0.1).init({"a": np.ones(2)}))
    with pytest.raises(TypeError, match="dtype int64. Make it float"):
        opt.init(np.arange(3))


# ---------------------------------------------------------------------------- state vs params

P = {"W": np.ones((2, 2)), "b": np.zeros(2)}
G = {"W": np.ones((2, 2)), "b": np.ones(2)}
STATE_MISUSE = [
    ("other keys", {"X": np.ones((2, 2)), "b": np.zeros(2)}, P,
     r"made by init for other params: params has keys \['W', 'b'\], but "
     r"state.buffers\['exp_avg(_sq)?'\] has keys \['X', 'b'\]; call opt.init\(params\)"),
    ("other shape", {"W": np.ones(3), "b": np.zeros(2)}, P,
     r"state.buffers\['exp_avg(_sq)?'\]\['W'\] has shape \(3,\), but params\['W'\] has shape"
     r" \(2, 2\)"),
    ("one array for a list", np.ones(2), [1.0, 2.0],
     r"params has 2 items, but state.buffers\['exp_avg(_sq)?'\] is a ndarray"),
    ("a nested dict for a leaf", {"W": {"u": np.ones(())}, "b": np.zeros(2)},
     {"W": np.ones(()), "b": np.zeros(2)}, r"state.buffers\['exp_avg(_sq)?'\]\['W'\] is a dict"),
]


@pytest.mark.parametrize("made_for, params, match", [c[1:] for c in STATE_MISUSE],
                         ids=[c[0] for c in STATE_MISUSE])
def test_a_state_made_for_other_params_is_refused(made_for, params, match):
    opt = optim.Adam(0.1)
    with pytest.raises(ValueError, match=match):
        opt.update(params, params, opt.init(made_for))


GRAD_MISUSE = [
    ("other keys", {"W": np.ones((2, 2)), "c": np.ones(2)}, ValueError,
     r"structure of params .*: params has keys \['W', 'b'\], but grads has keys \['W', 'c'\]"),
    ("a list for a dict", [np.ones((2, 2)), np.ones(2)], ValueError,
     r"params has keys \['W', 'b'\], but grads has 2 items"),
    ("a str", {"W": "a", "b": np.ones(2)}, TypeError,
     r"grads\['W'\] is a str; pass a float array of the param's shape \(2, 2\)"),
    ("None", {"W": None, "b": np.ones(2)}, ValueError, r"no gradient for params\['W'\]"),
    ("complex", {"W": np.ones((2, 2)) * 1j, "b": np.ones(2)}, TypeError,
     r"grads\['W'\] is complex but params\['W'\] is real"),
    ("complex scalar", {"W": np.ones((2, 2)), "b": (1 + 1j) * np.ones(2)}, TypeError,
     r"grads\['b'\] is complex"),
    ("a pb.param", {"W": pb.param(np.ones((2, 2))), "b": np.ones(2)}, TypeError,
     r"grads\['W'\] is a pb.param, not a gradient; pass its .grad"),
    ("bool", {"W": np.ones((2, 2), dtype=bool), "b": np.ones(2)}, TypeError,
     r"grads\['W'\] is an array of dtype bool"),
]


@pytest.mark.parametrize("grads, error, match", [c[1:] for c in GRAD_MISUSE],
                         ids=[c[0] for c in GRAD_MISUSE])
def test_bad_grads_are_refused_naming_the_leaf(grads, error, match):
    opt = optim.Adam(0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no ComplexWarning: refused before any cast)
        with pytest.raises(error, match=match):
            opt.update(P, grads, opt.init(P))


def test_update_refuses_a_state_count_that_is_not_an_int():
    opt = optim.Adam(0.1)
    for count in ["a", -1, True, 1.5]:
        with pytest.raises(TypeError, match=f"state.count must be .* got {count!r}"):
            opt.update(P, G, opt.init(P)._replace(count=count))


INIT_MISUSE = [
    (None, r"params is None"), ("abc", r"params is a str"),
    ((i for i in range(2)), r"params is a generator"),
    ({"a": np.ones(2), "b": None}, r"params\['b'\] is None"),
    ([np.ones(2), {"c": 3}], r"params\[1\]\['c'\] has dtype int64"),
    ({"W": pb.param(np.ones(2))}, r"params\['W'\] is a pb.param; .* opt.step\(\[W\]\)"),
]


@pytest.mark.parametrize("params, match", INIT_MISUSE, ids=[m for _, m in INIT_MISUSE])
def test_init_and_update_refuse_what_is_not_a_float_array(params, match):
    opt = optim.Adam(0.1)
    with pytest.raises(TypeError, match=match):
        opt.init(params)
    state = opt.init(np.ones(2))
    with pytest.raises((TypeError, ValueError)):  # the state is for other params, too
        opt.update(params, params, state)
    W = pb.param(np.ones(2))
    with pytest.raises(TypeError, match=r"params is a pb.param"):
        opt.update(W, np.ones(2), state)  # it would return tracked params and leave W alone


# ---------------------------------------------------------------------------- Tracker face

STEP_MISUSE = [
    (lambda opt, V, W: opt.step(None),
     r"step\(\) takes a list or a pb.Params of params, got None"),
    (lambda opt, V, W: opt.step(3), r"step\(\) takes a list .*, got an int"),
    (lambda opt, V, W: optim.update(opt, W),
     r"pb.optim.update\(opt, ps, gs\) takes .* got one param: pb.optim.update\(opt, \[W\], gs\)"),
    (lambda opt, V, W: optim.update(opt, {"W": np.ones(2)}, {"W": np.ones(2)}),
     r"pb.optim.update\(opt, ps, gs\) takes .* got a dict; for a dict of arrays use params, "
     r"state = opt.update\(params, grads, state\)"),
    (lambda opt, V, W: opt.step({"V": V, "W": W}), r"got a dict: pass list\(d.values\(\)\)"),
    # a bad gradient for W, listed after V: refused before V moves
    (lambda opt, V, W: opt.step([V, W], pb.Grads([(V, np.ones(2)), (W, "ab")])),
     r"the gradient in gs for the param of shape \(2,\) is a str"),
    (lambda opt, V, W: setattr(W, "grad", 1j * np.ones(2)) or opt.step([V, W]),
     r"the .grad of the param of shape \(2,\) is complex but the param of shape \(2,\) is real"),
    (lambda opt, V, W: setattr(W, "grad", pb.param(np.ones(2))) or opt.step([V, W]),
     r"a param's .grad is a plain array, never a tracked value; got a pb.param"),
]


@pytest.mark.parametrize("call, match", STEP_MISUSE, ids=range(len(STEP_MISUSE)))
def test_step_misuse_is_refused_before_any_param_moves(call, match):
    opt = optim.Adam(0.1)
    V, W = pb.param(np.ones(2)), pb.param(np.ones(2))
    V.grad = np.ones(2)
    with pytest.raises(TypeError, match=match):
        call(opt, V, W)
    np.testing.assert_array_equal(V.value, np.ones(2))
    np.testing.assert_array_equal(V.grad, np.ones(2))
    assert opt.count == 0 and not opt._slots


def test_schedules_refuse_what_is_not_a_step_count():
    with pytest.raises(TypeError, match=r"lr schedule <lambda>\(\) must take one argument, the "
                                        r"step count.*lambda count: 0.1"):
        optim.Adam(lambda: 0.1)
    with pytest.raises(TypeError, match=r"must take one argument"):
        optim.SGD(lambda count, extra: 0.1)
    optim.SGD(lambda count, extra=1: 0.1)  # a default is fine
    for schedule, name in [(optim.exponential_decay(0.1, 0.5, 10), "exponential_decay"),
                           (optim.cosine_decay(0.1, 10), "cosine_decay")]:
        for count in ["a", None, True]:
            with pytest.raises(TypeError, match=f"{name}'s schedule takes the step count.*got "
                                                f"{re.escape(repr(count))}"):
                schedule(count)
        assert schedule(np.int64(0)) == pytest.approx(0.1)


# ---------------------------------------------------------------------------- clipping

def test_clipping_errors():
    with pytest.raises(ValueError, match="max_norm must be positive"):
        pb.optim.clip_by_global_norm([np.ones(2)], 0.0)
    with pytest.raises(ValueError, match="low <= high"):
        pb.optim.clip_by_value([np.ones(2)], 1.0, -1.0)
    with pytest.raises(TypeError, match="complex gradient"):
        pb.optim.clip_by_value([np.ones(2) * 1j], -1.0, 1.0)
    with pytest.raises(TypeError, match="not a mix"):
        pb.optim.clip_by_global_norm([pb.param(1.0), np.ones(2)], 1.0)


# ---------------------------------------------------------------------------- saving state

def test_load_state_dict_refuses_what_does_not_fit():
    W, V = pb.param(np.ones(2)), pb.param(np.ones(3))
    opt = pb.optim.Adam(0.1)
    np.sum(W ** 2).backward()
    opt.step([W])
    saved = opt.state_dict([W])
    with pytest.raises(ValueError, match=r"0.exp_avg has shape \(2,\), but param 0 has shape"):
        pb.optim.Adam(0.1).load_state_dict([V], saved)
    with pytest.raises(ValueError, match="missing 0.momentum_buffer.*another optimizer"):
        pb.optim.SGD(0.1, momentum=0.9).load_state_dict([W], saved)
    with pytest.raises(ValueError, match="entries for no param of the 0 given: 0.exp_avg"):
        pb.optim.Adam(0.1).load_state_dict([], saved)
    with pytest.raises(ValueError, match="no 'step' entry"):
        pb.optim.Adam(0.1).load_state_dict([W], {})
