"""Every registered rule has a spec row, every spec names a registered rule, and every
function declared non-differentiable is checked to give constants."""

import importlib
import pkgutil

import pullback as pb
import tests.rules as rule_tests
from pullback.registry import registered_nondifferentiable, registered_rules


def _modules():
    for info in pkgutil.iter_modules(rule_tests.__path__):
        if info.name.startswith("test_") and info.name != "test_registry":
            yield importlib.import_module(f"tests.rules.{info.name}")


def _specs():
    # rows for functions this NumPy lacks are dropped, as their rules are
    return [s for m in _modules() for s in getattr(m, "SPECS", []) if s.func is not None]


def test_every_rule_has_a_spec_row():
    covered = {id(s.func) for s in _specs()}
    missing = [pb.name_of(f) for f in registered_rules() if id(f) not in covered]
    assert not missing, f"registered rules without a spec row: {missing}"


def test_every_spec_names_a_registered_rule():
    registered = {id(f) for f in registered_rules()}
    stray = [s.label for s in _specs() if id(s.func) not in registered]
    assert not stray, f"spec rows for functions with no rule: {stray}"


def test_every_nondifferentiable_function_is_checked():
    listed = {id(f) for m in _modules() for f in getattr(m, "NONDIFF", [])}
    missing = [pb.name_of(f) for f in registered_nondifferentiable() if id(f) not in listed]
    assert not missing, f"non-differentiable functions not checked for constant output: {missing}"


def test_smooth_rows_say_why_they_stop_at_first_order():
    unexplained = [s.label for s in _specs() if s.order < 2 and not s.why]
    assert not unexplained, f"order-1 rows without a reason: {unexplained}"
