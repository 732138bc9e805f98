"""The one generic test over every spec table: each row of every ``SPECS`` in
``tests/rules/numpy/test_<area>.py`` and ``tests/rules/scipy/test_<area>.py`` is checked
(value, derivatives against finite differences, batched pullbacks), each ``NONDIFF``
entry is called on tracked values and must give NumPy's constant; and the tables must
cover the registry exactly."""

import importlib
import pkgutil

import pytest

import pullback as pb
from pullback._engine.register import registered_nondifferentiable, registered_rules

from .spec import check_constant


def _modules():
    for library in ("numpy", "scipy"):
        package = importlib.import_module(f"tests.rules.{library}")
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.startswith("test_"):
                try:
                    yield importlib.import_module(f"tests.rules.{library}.{info.name}")
                except ImportError:  # an optional extra (SciPy) is not installed
                    continue


MODULES = list(_modules())


def _specs():
    # rows for functions this NumPy lacks are dropped, as their rules are
    return [s for m in MODULES for s in getattr(m, "SPECS", []) if s.func is not None]


def _nondiff():
    pairs = []
    for m in MODULES:
        table = getattr(m, "NONDIFF", [])
        pairs.extend(table.items() if isinstance(table, dict) else table)
    return pairs


CASES = [c for s in _specs() for c in s.cases()]
CONSTANTS = _nondiff()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case):
    case.check()


@pytest.mark.parametrize("func,call", CONSTANTS,
                         ids=[f"{pb.name_of(f)}-{k}" for k, (f, _) in enumerate(CONSTANTS)])
def test_nondifferentiable_outputs_are_constants(func, call):
    check_constant(func, call)


def test_every_rule_has_a_spec_row():
    # (a ``REFUSED_RULES`` entry: a rule that refuses every argument by name, tested there)
    covered = {id(s.func) for s in _specs()} | {
        id(f) for m in MODULES for f, _ in getattr(m, "REFUSED_RULES", [])}
    missing = [pb.name_of(f) for f in registered_rules() if id(f) not in covered]
    assert not missing, f"registered rules without a spec row: {missing}"


def test_every_spec_names_a_registered_rule():
    registered = {id(f) for f in registered_rules()}
    stray = [s.label for s in _specs() if id(s.func) not in registered]
    assert not stray, f"spec rows for functions with no rule: {stray}"


def test_every_nondifferentiable_function_is_checked():
    listed = {id(f) for f, _ in CONSTANTS}
    missing = [pb.name_of(f) for f in registered_nondifferentiable() if id(f) not in listed]
    assert not missing, f"non-differentiable functions not checked for constant output: {missing}"


def test_every_checked_constant_is_declared_non_differentiable():
    declared = {id(f) for f in registered_nondifferentiable()}
    stray = [pb.name_of(f) for f, _ in CONSTANTS if id(f) not in declared]
    assert not stray, f"NONDIFF entries for functions not declared non-differentiable: {stray}"


def test_smooth_rows_say_why_they_stop_at_first_order():
    unexplained = [s.label for s in _specs() if s.order < 2 and not s.why]
    assert not unexplained, f"order-1 rows without a reason: {unexplained}"
