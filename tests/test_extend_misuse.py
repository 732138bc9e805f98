"""Misuse of the rule-author API (pb.rrule, pb.elementwise, pb.linear, pb.bilinear,
pb.composite, pb.ufunc_method, pb.nondifferentiable, pb.primitive, pb.nobacksies) and of
pb.hook: each is refused where it is given, with a message starting "pullback: ", before
anything is registered; or it gives the gradient finite differences give."""

import numpy as np
import pytest

import pullback as pb
from pullback._engine import registry
from tests.conftest import central_differences


@pytest.fixture(autouse=True)
def registry_as_it_was():
    """Every test leaves the rule tables as it found them (some register rules)."""
    tables = (dict(registry.rules), dict(registry.origin), set(registry.nondiff),
              dict(registry.ufunc_methods))
    yield
    for table, saved in zip((registry.rules, registry.origin, registry.nondiff,
                             registry.ufunc_methods), tables):
        table.clear()
        table.update(saved)


@pb.primitive
def softplus(x):
    return np.logaddexp(0.0, x)


@pb.primitive
def product(x, y):
    return x * y


def _rule_of_nothing():
    return softplus(1.0), lambda g: (g,)


def _rule_of_two(x, y):
    return softplus(x), lambda g: (g,)


REGISTRATIONS = [
    # (the call, what the message says)
    (lambda: pb.rrule(None), "pb.rrule takes the function the rule is for first"),
    (lambda: pb.rrule("exp"), r"pb.rrule takes .* got a str"),
    (lambda: pb.rrule(lambda x: x), r"If .*<lambda> is your rule, write @pb.rrule\(f\)"),
    (lambda: pb.rrule(softplus)(None), r"@pb.rrule\(.*softplus\) must be a function"),
    (lambda: pb.rrule(softplus)(5), r"must be a function .* got an int"),
    (lambda: pb.rrule(softplus)(_rule_of_nothing), r"must take 1 positional argument .* "
                                                   r"_rule_of_nothing\(\)"),
    (lambda: pb.rrule(softplus)(_rule_of_two), r"must take 1 positional argument"),
    (lambda: pb.rrule(softplus)(softplus), "not a pb.primitive"),
    (lambda: pb.rrule(softplus, batched="yes"), "batched must be True or False"),
    (lambda: pb.primitive(5), "pb.primitive decorates a function, got an int"),
    (lambda: pb.nobacksies(None), "pb.nobacksies must be a function"),
    (lambda: pb.nobacksies(softplus), r"softplus is a pb.primitive; decorate its rule"),
    (lambda: pb.elementwise(None, lambda ans, x: ans), "pb.elementwise takes the function"),
    (lambda: pb.elementwise(np.exp), r"np.exp takes 1, got 0"),
    (lambda: pb.elementwise(np.exp, 5), r"derivative 0 must be a function .* got an int"),
    (lambda: pb.elementwise(np.hypot, lambda ans, x, y: x / ans), r"np.hypot takes 2, got 1"),
    (lambda: pb.elementwise(softplus, lambda ans: ans), r"derivative 0 must take 2 "
                                                        r"positional arguments \(ans, x\)"),
    (lambda: pb.elementwise(product, lambda ans, x, y: y), r"product takes 2, got 1"),
    (lambda: pb.elementwise(np.exp, lambda ans, x: ans, singular="yes"), "singular must be"),
    (lambda: pb.bilinear(np.matmul, None, None, None, None), r"the rule must be a function"),
    (lambda: pb.bilinear(np.matmul, lambda a, b: (a @ b, None), lambda a, b: True,
                         lambda g: g, lambda g, a, b: g), r"vjp_a must take 3 positional"),
    (lambda: pb.linear(softplus, None), r"transpose must be a function \(g, ans, x\)"),
    (lambda: pb.linear(softplus, lambda g: g), r"transpose must take 3 positional"),
    (lambda: pb.linear(None, lambda g, ans, x: g), "pb.linear takes the function"),
    (lambda: pb.composite(np.exp, 5), r"impl must be a function .* got an int"),
    (lambda: pb.composite(softplus, None), "impl must be a function"),
    (lambda: pb.composite(softplus, lambda: 1.0), "impl must take 1 positional argument"),
    (lambda: pb.composite(softplus, softplus), "would call itself forever"),
    (lambda: pb.ufunc_method(np.add, "reduce")(None), r"ufunc_method\(np.add, 'reduce'\) "
                                                       r"must be a function"),
    (lambda: pb.ufunc_method(None, "reduce"), "takes a NumPy ufunc first"),
    (lambda: pb.ufunc_method(np.sum, "reduce"), "takes a NumPy ufunc first .* got np.sum"),
    (lambda: pb.ufunc_method(np.add, "foo"), "method must be one of"),
    (lambda: pb.ufunc_method(np.add, 5), "method must be one of"),
    (lambda: pb.nondifferentiable(None), "takes functions .* got None"),
    (lambda: pb.nondifferentiable("floor"), "takes functions .* got a str"),
    (lambda: pb.nondifferentiable(), "got none"),
    (lambda: pb.nondifferentiable(np.floor, None), "got None"),
    (lambda: pb.nondifferentiable(lambda x: x), "neither a NumPy function nor a pullback"),
    (lambda: pb.nondifferentiable(np.exp), "np.exp has a derivative rule"),
]


@pytest.mark.parametrize("call,message", REGISTRATIONS,
                         ids=[f"registration-{k}" for k in range(len(REGISTRATIONS))])
def test_a_bad_registration_is_refused_before_anything_is_registered(call, message):
    before = (dict(registry.rules), set(registry.nondiff), dict(registry.ufunc_methods))
    with pytest.raises(TypeError, match=message) as error:
        call()
    assert str(error.value).startswith("pullback: ")
    after = (dict(registry.rules), set(registry.nondiff), dict(registry.ufunc_methods))
    assert after == before


def test_the_library_rules_still_work_after_refused_registrations():
    for call, _ in REGISTRATIONS:
        with pytest.raises(TypeError):
            call()
    x = np.array([0.5, -1.3, 2.2])
    for f in (lambda x: np.sum(np.exp(x)), lambda x: np.sum(np.outer(x, x) @ x),
              lambda x: np.add.reduce(x * x), lambda x: np.sum(np.floor(x) * x)):
        np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-6)


def _softplus_rule(x):
    def softplus_pullback(g):
        return (g / (1.0 + np.exp(-x)),)

    return softplus(x), softplus_pullback


@pytest.mark.parametrize("nobacksies_first", [True, False])
def test_nobacksies_above_or_below_rrule_marks_the_rule(nobacksies_first):
    if nobacksies_first:  # the documented order: @pb.rrule(f) above @pb.nobacksies
        pb.rrule(softplus)(pb.nobacksies(_softplus_rule))
    else:  # @pb.nobacksies above @pb.rrule(f): once a silent second derivative of 0.0
        pb.nobacksies(pb.rrule(softplus)(_softplus_rule))
    x = np.array([-1.0, 0.5, 2.0])

    def f(x):
        return np.sum(softplus(x))

    np.testing.assert_allclose(pb.grad(f)(x), central_differences(f, x), rtol=1e-6)
    with pytest.raises(pb.NestedDifferentiationError, match="softplus is marked nobacksies"):
        pb.grad(pb.grad(softplus))(0.5)


def test_a_nobacksies_rule_returning_only_its_output_says_what_a_rule_returns():
    @pb.rrule(softplus)
    @pb.nobacksies
    def softplus_rule(x):
        return softplus(x)

    with pytest.raises(TypeError, match=r"^pullback: the rule .*softplus_rule for .*softplus "
                                        r"returned ndarray; a rule returns \(out, pullback\)"):
        pb.grad(lambda x: np.sum(softplus(x)))(np.ones(3))


def test_a_linear_transpose_returning_none_is_refused_not_a_zero_gradient():
    pb.linear(softplus, lambda g, ans, x: None)
    with pytest.raises(TypeError, match=r"^pullback: the transpose .*<lambda> of .*softplus "
                                        "returned None"):
        pb.grad(lambda x: np.sum(softplus(x)))(np.ones(3))


# ---------------------------------------------------------------------------- pb.hook

X = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("fn,error,message", [
    (lambda g: "a", TypeError, r"returned a str; a hook returns one array, the cotangent, of "
                               r"the shape of the one it got \(3,\), or None"),
    (lambda g: (g, g), TypeError, "returned a tuple of 2"),
    (lambda g: {"g": g}, TypeError, "returned a dict of 1"),
    (lambda g: np.array([g, None], dtype=object), TypeError,
     "returned an array of dtype object"),
    (lambda g: g * 1j, TypeError, "returned a complex cotangent for a real value"),
    (lambda g: g[:2], ValueError, r"returned a cotangent of shape \(2,\) for one of shape \(3,\)"),
])
def test_a_hook_returning_no_cotangent_of_the_value_is_refused(fn, error, message):
    with pytest.raises(error, match="^pullback: the hook .*<lambda> " + message):
        pb.grad(lambda x: np.sum(pb.hook(fn, x) ** 2))(X)


@pytest.mark.parametrize("fn", [lambda: 1.0, lambda g, h: g, 5])
def test_a_hook_that_cannot_take_the_cotangent_is_refused_at_pb_hook(fn):
    with pytest.raises(TypeError, match=r"^pullback: .*(must take 1 positional argument "
                                        r"\(the cotangent\)|takes the function first)"):
        pb.hook(fn, X)


def test_a_complex_value_may_get_a_complex_cotangent_from_its_hook():
    z = np.array([1.0 + 2.0j, -0.5j])

    def f(z, hooked):
        z = pb.hook(lambda g: 2.0 * g, z) if hooked else z
        return np.sum(np.abs(z) ** 2)

    np.testing.assert_allclose(pb.grad(f)(z, True), 2.0 * pb.grad(f)(z, False))


@pytest.mark.parametrize("tree", [{"a": X, "b": 2.0 * X}, (X, 2.0 * X), [X, 2.0 * X]],
                         ids=["dict", "tuple", "list"])
def test_a_hook_on_a_pytree_hooks_each_leaf(tree):
    keys = list(tree) if isinstance(tree, dict) else [0, 1]

    def loss(tree, hooked):
        if hooked:
            tree = pb.hook(lambda g: 0.5 * g, tree)
        return np.sum(tree[keys[0]] ** 2 * tree[keys[1]])

    got = pb.grad(loss)(tree, True)
    for k in keys:  # finite differences of the unhooked loss in each leaf, halved
        def in_leaf(v, k=k):
            changed = dict(tree) if isinstance(tree, dict) else list(tree)
            changed[k] = v
            return loss(changed, False)

        np.testing.assert_allclose(got[k], 0.5 * central_differences(in_leaf, tree[k]),
                                   rtol=1e-6)
    with pytest.raises(TypeError, match="the hook .* returned a str"):
        pb.grad(lambda t: np.sum(pb.hook(lambda g: "junk", t)[keys[0]]))(tree)


def _clip_in_place(g):
    return np.clip(g, -1.0, 1.0, out=g)


def _halve_in_place(g):
    g *= 0.5


C = np.array([5.0, -5.0, 2.0])


@pytest.mark.parametrize("hook_fn,effect", [(_clip_in_place, lambda g: np.clip(g, -1.0, 1.0)),
                                            (_halve_in_place, lambda g: 0.5 * g)],
                         ids=["clip-out", "halve-returning-None"])
def test_a_hook_writing_into_its_cotangent_changes_only_its_own(hook_fn, effect):
    a, b = np.array([3.0, -4.0, 0.5]), np.array([1.0, 2.0, 3.0])

    def f(a, b, hooked):
        return np.sum(((pb.hook(hook_fn, a) if hooked else a) + b) * C)

    ga, gb = pb.grad(f, argnums=(0, 1))(a, b, True)
    np.testing.assert_allclose(gb, central_differences(lambda b: f(a, b, False), b), rtol=1e-6)
    np.testing.assert_allclose(ga, effect(central_differences(lambda a: f(a, b, False), a)),
                               rtol=1e-6)

    # x used twice: only the hooked use's cotangent is changed
    def twice(a, hooked):
        return np.sum(((pb.hook(hook_fn, a) if hooked else 0.0 * a) + a) * C)

    other = central_differences(lambda a: twice(a, False), a)
    hooked = central_differences(lambda a: np.sum(a * C), a)
    np.testing.assert_allclose(pb.grad(twice)(a, True), effect(hooked) + other, rtol=1e-6)
