"""First-order optimizers with PyTorch's update equations, in two faces.

Functional, over any pytree of arrays (optax's shape): ``state = opt.init(params)``, then
``params, state = opt.update(params, grads, state)``, which returns new params and a new
state and never changes its inputs; ``grads`` and ``state`` are matched to ``params`` by
dict key (in any order) and position, and a state made for other params is refused.

Tracker (Flux's ``update!(opt, ps, gs)``): ``opt.step(ps, gs)`` changes each ``pb.param``
in place through ``pb.update`` (which also resets its ``.grad``); without ``gs`` it uses
each param's ``.grad``, as ``torch.optim`` does, and skips a param whose gradient is None.
The optimizer keeps each param's buffers, keyed by the param itself.

``lr`` is a float or a schedule: a callable of the step count (the number of updates
already made, starting at 0) returning a float. Params keep their dtype (float32 stays
float32).

Gradients are clipped before the step with ``clip_by_global_norm`` and ``clip_by_value``.
An optimizer's state is saved with ``np.savez``: the functional state is a pytree
(``pb.tree_flatten(state)``), the Tracker face's comes from ``opt.state_dict(ps)`` and
goes back with ``opt.load_state_dict(ps, saved)``.
"""

# optimizer.py: Optimizer, its two faces and OptState; update (Flux's update!)
# algorithms.py: SGD, Momentum, Adam, AdamW, RMSProp
# schedules.py: lr as a function of the step count; exponential_decay, cosine_decay
# clipping.py: clip_by_global_norm, clip_by_value, global_norm
# saving.py: the Tracker face's state_dict and load_state_dict
# checks.py: the checks of hyperparameters, params and gradients

from .algorithms import SGD, Adam, AdamW, Momentum, RMSProp
from .clipping import clip_by_global_norm, clip_by_value, global_norm
from .optimizer import Optimizer, OptState, update
from .schedules import cosine_decay, exponential_decay

# (in the API reference's order)
__all__ = [
    "OptState", "Optimizer", "SGD", "Momentum", "Adam", "AdamW", "RMSProp", "update",
    "global_norm", "clip_by_global_norm", "clip_by_value", "exponential_decay", "cosine_decay",
]


def __dir__() -> list[str]:
    # what tab completion offers: the optimizers and their helpers, not this package's modules
    return sorted(__all__)
