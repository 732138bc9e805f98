"""The optimizers, each a subclass of ``Optimizer`` giving its update equation
(``_step``): ``SGD``, ``Momentum``, ``Adam``, ``AdamW``, ``RMSProp``, PyTorch's equations."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .checks import _number
from .optimizer import Optimizer
from .schedules import Schedule


class SGD(Optimizer):
    """Stochastic gradient descent, as ``torch.optim.SGD`` (no dampening). With
    ``g = grad + weight_decay * x`` and the momentum buffer ``b`` (zero at first):

    - ``momentum == 0``: ``x <- x - lr * g``
    - otherwise ``b <- momentum * b + g`` and ``x <- x - lr * b``, or with
      ``nesterov=True`` ``x <- x - lr * (g + momentum * b)``.

    >>> opt = pb.optim.SGD(0.1)
    >>> params, state = opt.update({"w": np.array([1.0, 2.0])}, {"w": np.array([1.0, -1.0])},
    ...                            opt.init({"w": np.zeros(2)}))
    >>> params
    {'w': array([0.9, 2.1])}
    """

    def __init__(self, lr: float | Schedule, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0) -> None:
        super().__init__(lr)
        self.momentum = _number(momentum, "momentum")
        self.nesterov = bool(nesterov)
        self.weight_decay = _number(weight_decay, "weight_decay")
        if self.nesterov and self.momentum == 0:
            raise ValueError("pullback: nesterov=True needs a momentum > 0")
        self.buffers = ("momentum_buffer",) if self.momentum else ()

    def _step(self, x: Any, g: Any, buffers: dict[str, Any], lr: float,
              count: int) -> tuple[Any, dict[str, Any]]:
        if self.weight_decay:
            g = g + self.weight_decay * x
        if not self.momentum:
            return -lr * g, {}
        b = self.momentum * buffers["momentum_buffer"] + g
        d = g + self.momentum * b if self.nesterov else b
        return -lr * d, {"momentum_buffer": b}


class Momentum(SGD):
    """Heavy-ball momentum: ``SGD(lr, momentum=momentum)``, that is ``b <- momentum * b +
    grad`` and ``x <- x - lr * b``.

    >>> W = pb.param(np.array([1.0, 2.0]))
    >>> opt = pb.optim.Momentum(0.1, momentum=0.5)
    >>> for _ in range(2):
    ...     np.sum(W ** 2).backward(); _ = opt.step([W])
    >>> print(W.value)
    [0.54 1.08]
    """

    def __init__(self, lr: float | Schedule, momentum: float = 0.9) -> None:
        super().__init__(lr, momentum=momentum)


class Adam(Optimizer):
    """Adam, as ``torch.optim.Adam``: with ``g = grad + weight_decay * x`` (an L2 penalty
    added to the gradient) and ``t`` the step number counted from 1,

    ``m <- b1 * m + (1 - b1) * g``, ``v <- b2 * v + (1 - b2) * g**2``,
    ``x <- x - lr / (1 - b1**t) * m / (sqrt(v) / sqrt(1 - b2**t) + eps)``.

    >>> opt = pb.optim.Adam(0.1)
    >>> x, state = opt.update(np.array([1.0, 2.0]), np.array([3.0, -0.5]),
    ...                       opt.init(np.zeros(2)))
    >>> print(x)   # the first step moves each entry by lr against the gradient's sign
    [0.9 2.1]
    """

    buffers = ("exp_avg", "exp_avg_sq")

    def __init__(self, lr: float | Schedule = 1e-3, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8, weight_decay: float = 0.0) -> None:
        super().__init__(lr)
        self.b1 = _number(b1, "b1", high=1.0, high_open=True)
        self.b2 = _number(b2, "b2", high=1.0, high_open=True)
        self.eps = _number(eps, "eps")
        self.weight_decay = _number(weight_decay, "weight_decay")

    def _direction(self, g: Any, buffers: dict[str, Any],
                   count: int) -> tuple[Any, dict[str, Any]]:
        """The new buffers and ``m_hat / (sqrt(v_hat) + eps)`` written as PyTorch does."""
        t = count + 1
        m = self.b1 * buffers["exp_avg"] + (1 - self.b1) * g
        v = self.b2 * buffers["exp_avg_sq"] + (1 - self.b2) * g * g
        denom = np.sqrt(v) / math.sqrt(1 - self.b2 ** t) + self.eps
        return m / (1 - self.b1 ** t) / denom, {"exp_avg": m, "exp_avg_sq": v}

    def _step(self, x: Any, g: Any, buffers: dict[str, Any], lr: float,
              count: int) -> tuple[Any, dict[str, Any]]:
        if self.weight_decay:
            g = g + self.weight_decay * x
        d, buffers = self._direction(g, buffers, count)
        return -lr * d, buffers


class AdamW(Adam):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW`` and ``optax.adamw``:
    ``x <- x - lr * weight_decay * x - lr * m_hat / (sqrt(v_hat) + eps)``, with ``m`` and
    ``v`` the moments of the raw gradient (as in ``Adam``, with no L2 term).

    >>> opt = pb.optim.AdamW(0.1, weight_decay=0.5)
    >>> x, state = opt.update(np.array([2.0]), np.array([0.0]), opt.init(np.zeros(1)))
    >>> print(x)   # a zero gradient: only the decay, 2 - 0.1 * 0.5 * 2
    [1.9]
    """

    def __init__(self, lr: float | Schedule = 1e-3, b1: float = 0.9, b2: float = 0.999,
                 eps: float = 1e-8, weight_decay: float = 1e-2) -> None:
        super().__init__(lr, b1, b2, eps, weight_decay)

    def _step(self, x: Any, g: Any, buffers: dict[str, Any], lr: float,
              count: int) -> tuple[Any, dict[str, Any]]:
        d, buffers = self._direction(g, buffers, count)
        return -lr * (self.weight_decay * x + d), buffers


class RMSProp(Optimizer):
    """RMSProp, as ``torch.optim.RMSprop`` with ``alpha=decay`` (not centered):
    ``s <- decay * s + (1 - decay) * g**2``; then with ``momentum == 0``
    ``x <- x - lr * g / (sqrt(s) + eps)``, otherwise ``b <- momentum * b + g / (sqrt(s) +
    eps)`` and ``x <- x - lr * b``. ``eps`` is added outside the square root.

    >>> opt = pb.optim.RMSProp(0.01, decay=0.75)
    >>> x, state = opt.update(np.array([1.0]), np.array([2.0]), opt.init(np.zeros(1)))
    >>> print(x)   # s = 0.25 * 4 = 1: the step is lr * 2 / 1
    [0.98]
    """

    def __init__(self, lr: float | Schedule = 1e-2, decay: float = 0.9, eps: float = 1e-8,
                 momentum: float = 0.0) -> None:
        super().__init__(lr)
        self.decay = _number(decay, "decay", high=1.0, high_open=True)
        self.eps = _number(eps, "eps")
        self.momentum = _number(momentum, "momentum")
        self.buffers = ("square_avg", "momentum_buffer") if self.momentum else ("square_avg",)

    def _step(self, x: Any, g: Any, buffers: dict[str, Any], lr: float,
              count: int) -> tuple[Any, dict[str, Any]]:
        s = self.decay * buffers["square_avg"] + (1 - self.decay) * g * g
        d = g / (np.sqrt(s) + self.eps)
        if not self.momentum:
            return -lr * d, {"square_avg": s}
        b = self.momentum * buffers["momentum_buffer"] + d
        return -lr * b, {"square_avg": s, "momentum_buffer": b}
