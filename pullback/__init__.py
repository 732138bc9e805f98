"""pullback: reverse-mode automatic differentiation for plain NumPy code."""

from . import optim, rules  # noqa: F401  (rules: registers the derivative rules)
from ._engine import construct  # noqa: F401  (after the rules: wraps NumPy's functions that have one)
from ._engine.core import Tracked
from ._engine.guard import held_by
from ._engine.interception import watch_scipy
from ._engine.modes import no_grad
from ._engine.register import registered_nondifferentiable, registered_rules
from ._engine.registry import LossError, NestedDifferentiationError, NoRuleError, name_of
from ._jit.jitted import Jitted, jit
from .api import grad, value_and_grad, vjp
from .debug import Graph, MemoryReport, detect_anomaly, graph, memory_report
from .extend import (
    MINUS_ONE,
    ONE,
    bilinear,
    checkpoint,
    composite,
    elementwise,
    hook,
    linear,
    nobacksies,
    nondifferentiable,
    not_implemented,
    primitive,
    rrule,
    stop_gradient,
    ufunc_method,
)
from .optimize import minimize
from .rules.numpy.indexing import index_add
from .testing import check_grads
from .tracker import Grads, Param, Params, gradient, param, update
from .transforms import hessian, hvp, jacfwd, jacobian, jvp
from .tree import (
    ravel_pytree,
    register_dataclass,
    register_pytree_node,
    tree_flatten,
    tree_map,
    tree_unflatten,
)

watch_scipy()  # SciPy's rules load when the program imports the SciPy module they cover

__version__ = "0.1.0"

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "jacobian", "jacfwd", "hessian", "hvp", "jit", "Jitted",
    "checkpoint", "hook", "stop_gradient", "nobacksies", "index_add",
    "param", "Param", "Params", "Grads", "gradient", "update", "no_grad",
    "rrule", "elementwise", "bilinear", "linear", "composite", "nondifferentiable",
    "primitive", "ufunc_method", "not_implemented", "ONE", "MINUS_ONE",
    "registered_rules", "registered_nondifferentiable", "name_of",
    "check_grads", "held_by", "Tracked", "NoRuleError", "LossError", "NestedDifferentiationError",
    "tree_flatten", "tree_unflatten", "tree_map", "optim", "minimize",
    "ravel_pytree", "register_pytree_node", "register_dataclass",
    "detect_anomaly", "graph", "Graph", "memory_report", "MemoryReport",
]

# the public submodules (the others are the engine's and the rules' rooms)
_PUBLIC_MODULES = ("api", "debug", "extend", "optim", "optimize", "testing", "tracker",
                   "transforms", "tree")


def __dir__():
    """``dir(pb)``: the public names and the public submodules, no internal module."""
    return sorted({*__all__, *_PUBLIC_MODULES, "__version__"})


# last, after every module is loaded: fills the slots the engine leaves for the layers above
from . import _wiring  # noqa: E402, F401
