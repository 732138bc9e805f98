"""The Tracker face: ``param``, ``.backward()``, ``.grad``, ``Params``/``Grads``, ``update``.

A thin layer on the same engine as ``grad``: ``backward()`` runs the same backward pass
and adds the cotangents of the params it reaches into their ``.grad``.
"""

# leaf.py: Param and param, what may be assigned to a param's .value and .grad, update
# containers.py: Params and Grads
# backprop.py: .backward() of a tracked value (into .grad) and gradient (into Grads)

from .backprop import gradient
from .containers import Grads, Params
from .leaf import Param, _param_from, param, update  # noqa: F401  (_param_from: old pickles)

__all__ = ["param", "Param", "Params", "Grads", "gradient", "update"]
