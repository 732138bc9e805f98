"""Learning rates: ``lr`` as a function of the step count (a float is a constant one), and
the schedules ``exponential_decay`` and ``cosine_decay``."""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable

from .checks import _number

Schedule = Callable[[int], float]  # the step count to a learning rate


def _schedule(lr):
    """``lr`` as a function of the step count."""
    if callable(lr):
        try:
            signature = inspect.signature(lr)
        except (TypeError, ValueError):  # (a builtin without one: called as it is)
            return lr
        try:
            signature.bind(0)
        except TypeError:
            raise TypeError(
                f"pullback: the lr schedule {getattr(lr, '__name__', type(lr).__name__)}"
                f"{signature} must take one argument, the step count (the number of updates "
                "made so far): write lambda count: 0.1, or lambda count: 0.1 * 0.99 ** count"
            ) from None
        return lr
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(
            f"pullback: lr must be a float or a schedule (a callable of the step count "
            f"returning a float), got {type(lr).__name__}"
        )
    lr = _number(lr, "lr", high_open=True)  # (inf: the first step would be NaN)
    return lambda count: lr


def _lr_at(schedule, count):
    lr = schedule(count)
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not math.isfinite(lr) or (
            lr < 0):
        raise TypeError(
            f"pullback: the lr schedule returned {lr!r} at step {count}; it must return a "
            "finite float of at least 0 (a negative one would climb the loss)"
        )
    return float(lr)  # a Python float: it keeps float32 params float32


def _check_count(count, fname):
    if isinstance(count, bool) or not isinstance(count, numbers.Real):
        raise TypeError(
            f"pullback: {fname}'s schedule takes the step count (the number of updates made, "
            f"an int), got {count!r}"
        )


def exponential_decay(lr: float, rate: float, steps: float) -> Schedule:
    """The schedule ``lr * rate ** (count / steps)``: ``lr`` times ``rate`` every
    ``steps`` updates, decaying smoothly in between.

    >>> schedule = pb.optim.exponential_decay(1.0, 0.5, steps=2)
    >>> [float(schedule(t)) for t in range(5)]
    [1.0, 0.7071067811865476, 0.5, 0.3535533905932738, 0.25]
    """
    lr, rate = _number(lr, "lr"), _number(rate, "rate")
    steps = _number(steps, "steps")
    if steps == 0:
        raise ValueError("pullback: exponential_decay needs steps > 0")

    def exponential_decay_schedule(count: int) -> float:
        _check_count(count, "exponential_decay")
        return lr * rate ** (count / steps)

    return exponential_decay_schedule


def cosine_decay(lr: float, steps: float, alpha: float = 0.0) -> Schedule:
    """The schedule ``lr * ((1 - alpha) * (1 + cos(pi * min(count, steps) / steps)) / 2 +
    alpha)``: from ``lr`` at step 0 down to ``alpha * lr`` at ``steps``, then constant.

    >>> schedule = pb.optim.cosine_decay(1.0, steps=4)
    >>> [round(schedule(t), 4) for t in range(6)]
    [1.0, 0.8536, 0.5, 0.1464, 0.0, 0.0]
    """
    lr, alpha = _number(lr, "lr"), _number(alpha, "alpha", high=1.0)
    steps = _number(steps, "steps")
    if steps == 0:
        raise ValueError("pullback: cosine_decay needs steps > 0")

    def cosine_decay_schedule(count: int) -> float:
        _check_count(count, "cosine_decay")
        fraction = min(count, steps) / steps
        return lr * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * fraction)) + alpha)

    return cosine_decay_schedule
