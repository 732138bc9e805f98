"""pullback: reverse-mode automatic differentiation for plain NumPy code."""

from . import rules  # noqa: F401  (registers the derivative rules)
from .api import grad, value_and_grad, vjp
from .core import LossError, NestedDifferentiationError, NoRuleError, Tracked, no_grad
from .registry import elementwise, nondifferentiable, primitive, rrule
from .testing import check_grads
from .tracker import Grads, Param, Params, gradient, param, update
from .transforms import (
    checkpoint,
    hessian,
    hook,
    hvp,
    jacfwd,
    jacobian,
    jvp,
    nobacksies,
    stop_gradient,
)
from .tree import tree_flatten, tree_map, tree_unflatten

__version__ = "0.1.0"

__all__ = [
    "grad", "value_and_grad", "vjp", "jvp", "jacobian", "jacfwd", "hessian", "hvp",
    "checkpoint", "hook", "stop_gradient", "nobacksies",
    "param", "Param", "Params", "Grads", "gradient", "update", "no_grad",
    "rrule", "primitive", "elementwise", "nondifferentiable",
    "check_grads", "Tracked", "NoRuleError", "LossError", "NestedDifferentiationError",
    "tree_flatten", "tree_unflatten", "tree_map",
]
