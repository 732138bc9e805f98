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
An optimizer's state is saved with ``_np.savez``: the functional state is a pytree
(``pb.tree_flatten(state)``), the Tracker face's comes from ``opt.state_dict(ps)`` and
goes back with ``opt.load_state_dict(ps, saved)``.
"""

from __future__ import annotations

import collections as _collections
import inspect as _inspect
import math as _math
import numbers as _numbers
import warnings as _warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import numpy as _np

from ._engine.core import Tracked, plain
from .tracker import Grads, Param, Params, _below, _step_of, check_live
from .tracker import update as update_param
from .tree import StructureMismatch, labels_of, leaves_by, tree_flatten, tree_unflatten

__all__ = [
    "SGD", "Momentum", "Adam", "AdamW", "RMSProp", "Optimizer", "OptState", "update",
    "exponential_decay", "cosine_decay", "clip_by_global_norm", "clip_by_value", "global_norm",
]


def __dir__() -> list[str]:
    # what tab completion offers: the optimizers and their helpers, not this module's imports
    return sorted(__all__)

Schedule = Callable[[int], float]  # the step count to a learning rate
Ps = TypeVar("Ps", bound=Iterable[Param])


# the field ``count`` shadows the method tuple.count, which type checkers reject in a
# typing.NamedTuple; the same namedtuple, with its fields annotated on a subclass, is typed
class OptState(_collections.namedtuple("OptState", ["count", "buffers"])):
    """An optimizer's state for ``opt.update``: ``count``, the number of updates made, and
    ``buffers``, a dict from buffer name (PyTorch's: ``"momentum_buffer"``, ``"exp_avg"``,
    ``"exp_avg_sq"``, ``"square_avg"``) to a pytree of the params' structure. It is a
    pytree itself.

    >>> state = pb.optim.Adam(0.1).init({"w": np.zeros(2)})
    >>> state.count, sorted(state.buffers)
    (0, ['exp_avg', 'exp_avg_sq'])
    """

    __slots__ = ()
    count: int
    buffers: dict[str, Any]


# ---------------------------------------------------------------------------- checks

def _number(value, name, low=0.0, high=_math.inf, high_open=False):
    """``value`` as a float, checked to lie in ``[low, high]`` (``[low, high)`` when
    ``high_open``)."""
    if isinstance(value, bool) or not isinstance(value, _numbers.Real):
        raise TypeError(f"pullback: {name} must be a real number, got {value!r}")
    value = float(value)
    if not (low <= value and (value < high if high_open else value <= high)):
        bracket = ")" if high_open else "]"
        raise ValueError(f"pullback: {name} must lie in [{low}, {high}{bracket}, got {value}")
    return value


def _schedule(lr):
    """``lr`` as a function of the step count."""
    if callable(lr):
        try:
            signature = _inspect.signature(lr)
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
    if isinstance(lr, bool) or not isinstance(lr, _numbers.Real):
        raise TypeError(
            f"pullback: lr must be a float or a schedule (a callable of the step count "
            f"returning a float), got {type(lr).__name__}"
        )
    lr = _number(lr, "lr", high_open=True)  # (inf: the first step would be NaN)
    return lambda count: lr


def _lr_at(schedule, count):
    lr = schedule(count)
    if isinstance(lr, bool) or not isinstance(lr, _numbers.Real) or not _math.isfinite(lr) or (
            lr < 0):
        raise TypeError(
            f"pullback: the lr schedule returned {lr!r} at step {count}; it must return a "
            "finite float of at least 0 (a negative one would climb the loss)"
        )
    return float(lr)  # a Python float: it keeps float32 params float32


def _a(v):
    """What ``v`` is, in words, for a value that is not an array: "None", "a str"."""
    return "None" if v is None else f"a {type(v).__name__}"


def _dtype_of(v):
    """The dtype of the plain value ``v`` (an array, a NumPy or Python number), or None for
    anything else (None, a str, a generator)."""
    dtype = getattr(v, "dtype", None)
    if isinstance(dtype, _np.dtype):
        return dtype
    if isinstance(v, _numbers.Number):
        return _np.result_type(v)
    return None


def _real_float(x, what):
    """The dtype of the param ``x``, checked to be a real floating-point one."""
    if isinstance(x, Param):
        raise TypeError(
            f"pullback: {what} is a pb.param; init and update work on plain arrays (and "
            "return new ones): for pb.param values call loss.backward(), then opt.step([W])"
        )
    v = plain(x)
    dtype = _dtype_of(v)
    if dtype is None:
        raise TypeError(
            f"pullback: an optimizer updates real floating-point arrays; {what} is {_a(v)}. "
            "Pass an array, or a pytree (dict, list, tuple) of arrays"
        )
    if dtype.kind != "f":
        raise TypeError(
            f"pullback: an optimizer updates real floating-point values; {what} has dtype "
            f"{dtype}. Make it float (_np.asarray(x, dtype=float))"
        )
    return dtype


def _gradient(g, x, what, gwhat):
    """``g``, the gradient ``gwhat`` of the param ``x`` (named ``what``), checked against
    it and cast to its dtype."""
    if g is None:
        raise ValueError(f"pullback: no gradient for {what}: {gwhat} is None; give one for "
                         "every param (zeros for one that does not move)")
    if isinstance(g, Param):
        raise TypeError(
            f"pullback: {gwhat} is a pb.param, not a gradient; pass its .grad (or the "
            "gradient from pb.grad) as a plain array"
        )
    dtype = _real_float(x, what)
    shape = _np.shape(plain(x))
    gdtype = _dtype_of(plain(g))
    if gdtype is not None and gdtype.kind == "c":
        raise TypeError(
            f"pullback: {gwhat} is complex but {what} is real (dtype {dtype}): its imaginary "
            "part would be dropped. Pass a real gradient (_np.real(g))"
        )
    if gdtype is None or gdtype.kind not in "iuf":
        got = _a(plain(g)) if gdtype is None else f"an array of dtype {gdtype}"
        raise TypeError(
            f"pullback: {gwhat} is {got}; pass a float array of the param's shape {shape}"
        )
    gshape = _np.shape(plain(g))
    if gshape != shape:
        raise ValueError(f"pullback: {gwhat} has shape {gshape}, but {what} has shape {shape}")
    if type(g) is _np.ndarray and g.dtype != dtype:
        g = g.astype(dtype)
    elif isinstance(g, _numbers.Number):
        g = dtype.type(g)
    return g


def _leaf_paths(treedef, path=""):
    """The path of each leaf of ``treedef``, in order, as ``leaves_by`` writes them:
    ``"['W']"``, ``"[0]"``; ``""`` for a tree that is one leaf."""
    if treedef is None:
        return [path]
    _, children, _ = treedef
    return [leaf for label, child in zip(labels_of(treedef), children)
            for leaf in _leaf_paths(child, path + label)]


def _is(description):
    """``has keys [...]`` / ``has 2 items``, but ``is a list``: a description in a sentence."""
    return f"is {description}" if description.startswith("a") else f"has {description}"


# ---------------------------------------------------------------------------- the optimizers

class Optimizer:
    """What every optimizer shares: ``init``/``update`` on pytrees, ``step`` on params.
    A subclass names its ``buffers`` and gives ``_step(x, g, buffers, lr, count)``, which
    returns the change of ``x`` and the new buffers, computed without writing to any
    input."""

    buffers: tuple[str, ...] = ()

    def __init__(self, lr: float | Schedule) -> None:
        self.lr = _schedule(lr)
        # id(param) -> (param, count, buffers): the Tracker face's state
        self._slots: dict[int, tuple[Param, int, dict[str, Any]]] = {}
        self.count = 0  # the number of step() calls made

    # -- the functional face

    def init(self, params: Any) -> OptState:
        """The state for ``update``: step count 0 and zero buffers shaped as ``params``."""
        leaves, treedef = tree_flatten(params)
        for path, x in zip(_leaf_paths(treedef), leaves):
            _real_float(x, f"params{path}")
        return OptState(0, {name: tree_unflatten(treedef, [_np.zeros_like(plain(x))
                                                           for x in leaves])
                            for name in self.buffers})

    def update(self, params: Any, grads: Any, state: OptState) -> tuple[Any, OptState]:
        """One step: ``(new_params, new_state)``; ``params``, ``grads`` and ``state`` are
        left as they were. ``grads`` and ``state`` (from ``init(params)``) have the
        structure of ``params``; a dict's entries are matched by key, in any order. The new
        params and state have the structure of ``params``."""
        leaves, treedef = tree_flatten(params)
        try:
            gleaves = leaves_by(treedef, grads)
        except StructureMismatch as e:
            raise ValueError(
                f"pullback: grads must have the structure of params (the same keys, lengths "
                f"and nesting): params{e.path} {_is(e.want)}, but grads{e.path} {_is(e.got)}"
            ) from None
        if not isinstance(state, OptState) or not isinstance(state.buffers, dict) or set(
                state.buffers) != set(self.buffers):
            raise TypeError(
                f"pullback: state must come from this optimizer's init, with buffers "
                f"{sorted(self.buffers)}; call {type(self).__name__}.init(params)"
            )
        count = state.count
        if isinstance(count, _np.ndarray) and count.shape == () and count.dtype.kind in "iu":
            count = int(count)  # (a state saved with np.savez and loaded: a 0-d array)
        if isinstance(count, bool) or not isinstance(count, _numbers.Integral) or count < 0:
            raise TypeError(
                f"pullback: state.count must be the number of updates made (an int of at "
                f"least 0), got {count!r}; use the state that init or update returned"
            )
        paths = _leaf_paths(treedef)
        slots = {name: self._buffers_for(name, treedef, paths, leaves, tree)
                 for name, tree in state.buffers.items()}
        lr = _lr_at(self.lr, count)
        gleaves = [_gradient(g, x, f"params{path}", f"grads{path}" if path else "grads")
                   for path, x, g in zip(paths, leaves, gleaves)]
        new_leaves: list[Any] = []
        new_slots: dict[str, list[Any]] = {name: [] for name in self.buffers}
        for i, (x, g) in enumerate(zip(leaves, gleaves)):
            delta, bufs = self._step(x, g, {n: slots[n][i] for n in self.buffers}, lr, count)
            new_leaves.append(x + delta)
            for name in self.buffers:
                new_slots[name].append(bufs[name])
        buffers = {name: tree_unflatten(treedef, new_slots[name]) for name in self.buffers}
        return tree_unflatten(treedef, new_leaves), OptState(count + 1, buffers)

    def _buffers_for(self, name, treedef, paths, leaves, tree):
        """The leaves of the buffer ``tree`` (``state.buffers[name]``) in the order of the
        params' leaves, checked to match them: a state made for other params (other keys,
        lengths or shapes) is refused, never applied to the wrong leaves."""
        where = f"state.buffers[{name!r}]"
        try:
            found = leaves_by(treedef, tree)
        except StructureMismatch as e:
            raise ValueError(
                f"pullback: the state was made by init for other params: params{e.path} "
                f"{_is(e.want)}, but {where}{e.path} {_is(e.got)}; call "
                f"opt.init(params) for these params"
            ) from None
        for path, x, b in zip(paths, leaves, found):
            shape = _np.shape(plain(x))
            if _dtype_of(plain(b)) is None or _np.shape(plain(b)) != shape:
                got = (f"is {_a(plain(b))}" if _dtype_of(plain(b)) is None
                       else f"has shape {_np.shape(plain(b))}")
                raise ValueError(
                    f"pullback: the state was made by init for other params: {where}{path} "
                    f"{got}, but params{path} has shape {shape}; call opt.init(params) for "
                    "these params"
                )
        return found

    # -- the Tracker face

    def step(self, ps: Ps, gs: Grads | None = None) -> Ps:
        """Update each param of ``ps`` (a ``pb.Params`` or an iterable of ``pb.param``) in
        place with its gradient in ``gs`` (a ``pb.Grads``), or its ``.grad`` when ``gs`` is
        None; each ``.grad`` is reset to zeros. Returns ``ps``.

        As in ``torch.optim``, a param whose gradient is None (``W.grad = None``) is
        skipped: it does not move and its state (buffers, step count) is not advanced. A
        ``.grad`` starts at zeros, so a step before any ``backward()`` is a step with a zero
        gradient (momentum and weight decay still act, as in PyTorch with zeroed grads);
        when every ``.grad`` is zero, step warns that ``backward()`` may be missing.

        Inside ``pb.grad``, a param made there from the function's argument takes a recorded
        step, so a training loop is differentiated (a meta-gradient)."""
        return self._step_params(ps, gs, "step()")

    def _step_params(self, ps, gs, fname):
        params = _param_list(ps, fname)
        if gs is not None and not isinstance(gs, Grads):
            raise TypeError(
                f"pullback: gs must be a pb.Grads (from pb.gradient), got {type(gs).__name__}"
            )
        lr = _lr_at(self.lr, self.count)
        moves = []  # every gradient is checked before any param moves
        for p in params:
            check_live(p, fname)
            what = f"the param of shape {_np.shape(plain(p))}"
            if gs is None:
                g, gwhat = p.grad, f"the .grad of {what}"
            elif p in gs:
                g, gwhat = gs[p], f"the gradient in gs for {what}"
            else:
                raise KeyError(
                    f"pullback: gs has no gradient for {what}; take gs with "
                    "pb.gradient(loss, ps) over the same params, or call step(ps) to use .grad"
                )
            if g is None:  # no gradient: skipped, as torch.optim does
                continue
            # (tracked where the param was made inside pb.grad from its argument: the step
            # is recorded there, so a training loop is differentiated)
            moves.append((p, _step_of(_gradient(g, plain(p), what, gwhat), p)))
        if gs is None and moves and all(
                type(g) is _np.ndarray and not g.any() for _, g in moves):
            _warnings.warn(
                f"pullback: {fname} found every .grad zero: was loss.backward() called since "
                "the last step? (.grad starts at zeros and step() resets it; the step is "
                "made with a zero gradient)", RuntimeWarning, stacklevel=3)
        for p, g in moves:
            x = _below(p.value, p.level)[0]
            _, count, buffers = self._slots.get(id(p), (p, 0, None))
            if buffers is None:
                buffers = {name: _np.zeros_like(plain(x)) for name in self.buffers}
            delta, buffers = self._step(x, g, buffers, lr, count)
            self._slots[id(p)] = (p, count + 1, buffers)  # holding p keeps its id unique
            if not isinstance(delta, Tracked):
                delta = _np.asarray(delta, dtype=_np.result_type(plain(x)))
            update_param(p, delta)
        if moves:
            self.count += 1
        return ps

    def state_dict(self, ps: Iterable[Param]) -> dict[str, Any]:
        """The Tracker face's state for the params ``ps``, as a flat dict of plain arrays
        for ``np.savez``: ``"step"``, the number of ``step`` calls, and for the param at
        position ``i`` of ``ps`` its step count ``"i.step"`` and its buffers
        (``"i.exp_avg"``, ...). A param not stepped yet has no entries.

        Args:
            ps: the params, in the order ``load_state_dict`` will be given them.

        Returns:
            A dict from str to array.

        >>> W = pb.param(np.ones(2)); opt = pb.optim.Adam(0.1)
        >>> np.sum(W ** 2).backward(); _ = opt.step([W])
        >>> sorted(opt.state_dict([W]))
        ['0.exp_avg', '0.exp_avg_sq', '0.step', 'step']
        """
        state: dict[str, Any] = {"step": _np.asarray(self.count)}
        for i, p in enumerate(_param_list(ps, "state_dict")):
            if id(p) in self._slots:
                _, count, buffers = self._slots[id(p)]
                state[f"{i}.step"] = _np.asarray(count)
                for name, b in buffers.items():
                    state[f"{i}.{name}"] = _np.array(plain(b))
        return state

    def load_state_dict(self, ps: Iterable[Param], state: Mapping[str, Any]) -> None:
        """Restore the state that ``state_dict(ps)`` gave (or ``np.load`` of its
        ``np.savez``) for the params ``ps``, given in the same order. Everything is checked
        before anything changes: an entry for no param, a missing buffer or a shape that is
        not its param's raises ``ValueError``.

        Args:
            ps: the params, in the order ``state_dict`` was given them (their values are
                restored separately, e.g. ``W.value = saved["W"]``).
            state: the dict, or the ``NpzFile`` that ``np.load`` returns.

        >>> W = pb.param(np.ones(2)); opt = pb.optim.Adam(0.1)
        >>> np.sum(W ** 2).backward(); _ = opt.step([W])
        >>> again = pb.optim.Adam(0.1); again.load_state_dict([W], opt.state_dict([W]))
        >>> again.state_dict([W])["0.exp_avg"]
        array([0.2, 0.2])
        """
        params = _param_list(ps, "load_state_dict")
        state = {str(k): state[k] for k in state}
        if "step" not in state:
            raise ValueError("pullback: load_state_dict's state has no 'step' entry; pass what "
                             "opt.state_dict(ps) returned (or np.load of its np.savez)")
        slots = {}
        for i, p in enumerate(params):
            prefix = f"{i}."
            entries = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
            if not entries:
                continue
            missing = [n for n in ("step", *self.buffers) if n not in entries]
            extra = [n for n in entries if n != "step" and n not in self.buffers]
            if missing or extra:
                raise ValueError(
                    f"pullback: load_state_dict: the entries for param {i} do not fit "
                    f"{type(self).__name__}: " + "; ".join(
                        part for part in (
                            f"missing {', '.join(prefix + n for n in missing)}" if missing
                            else "",
                            f"unknown {', '.join(prefix + n for n in extra)}" if extra else "",
                        ) if part) + " (was it saved from another optimizer?)")
            buffers = {}
            for name in self.buffers:
                b = _np.asarray(entries[name])
                if b.shape != _np.shape(plain(p)):
                    raise ValueError(
                        f"pullback: load_state_dict: {prefix}{name} has shape {b.shape}, but "
                        f"param {i} has shape {_np.shape(plain(p))}; give the params in the "
                        "order state_dict was given them")
                buffers[name] = b.astype(_np.result_type(plain(p)), copy=True)
            slots[id(p)] = (p, int(entries["step"]), buffers)
        known = {f"{i}." for i in range(len(params))}
        stray = [k for k in state if k != "step" and k[:k.index(".") + 1] not in known]
        if stray:
            raise ValueError(f"pullback: load_state_dict got entries for no param of the "
                             f"{len(params)} given: {', '.join(sorted(stray))}")
        self._slots.update(slots)
        self.count = int(state["step"])

    def _step(self, x: Any, g: Any, buffers: dict[str, Any], lr: float,
              count: int) -> tuple[Any, dict[str, Any]]:
        raise NotImplementedError(f"pullback: {type(self).__name__} must define _step")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


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
        denom = _np.sqrt(v) / _math.sqrt(1 - self.b2 ** t) + self.eps
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
        d = g / (_np.sqrt(s) + self.eps)
        if not self.momentum:
            return -lr * d, {"square_avg": s}
        b = self.momentum * buffers["momentum_buffer"] + d
        return -lr * b, {"square_avg": s, "momentum_buffer": b}


def _param_list(ps, fname):
    """The distinct params of ``ps`` (a param listed twice moves once), checked."""
    call = "step([W])" if fname == "step()" else "pb.optim.update(opt, [W], gs)"
    if isinstance(ps, Param):
        raise TypeError(f"pullback: {fname} takes a list or a pb.Params of params, got one "
                        f"param: {call}")
    if isinstance(ps, dict):
        if ps and all(isinstance(p, Param) for p in ps.values()):
            raise TypeError(f"pullback: {fname} takes a list or a pb.Params of params, got a "
                            "dict: pass list(d.values())")
        raise TypeError(
            f"pullback: {fname} takes a list or a pb.Params of pb.param values, got a dict; "
            "for a dict of arrays use params, state = opt.update(params, grads, state)"
        )
    if not isinstance(ps, Iterable) or isinstance(ps, (str, bytes)):
        raise TypeError(f"pullback: {fname} takes a list or a pb.Params of params, got "
                        f"{_a(ps)}: {call}")
    params = list({id(p): p for p in ps}.values())
    for p in params:
        if not isinstance(p, Param):
            raise TypeError(
                f"pullback: {fname} updates values made with pb.param, got "
                f"{type(p).__name__}; use opt.update(params, grads, state) for arrays"
            )
    return params


def update(opt: Optimizer, ps: Ps, gs: Grads | None = None) -> Ps:
    """``opt.step(ps, gs)``: Flux's ``update!(opt, ps, gs)``. Each param of ``ps`` moves in
    place and its ``.grad`` is reset.

    >>> W = pb.param(np.array([1.0, -1.0]))
    >>> ps = pb.Params([W])
    >>> gs = pb.gradient(lambda: np.sum(W ** 2), ps)
    >>> _ = pb.optim.update(pb.optim.SGD(0.25), ps, gs)
    >>> print(W.value)
    [ 0.5 -0.5]
    """
    if not isinstance(opt, Optimizer):
        raise TypeError(
            f"pullback: update(opt, ps, gs) needs an optimizer such as pb.optim.Adam(1e-3) "
            f"first, got {type(opt).__name__}"
        )
    return opt._step_params(ps, gs, "pb.optim.update(opt, ps, gs)")


# ---------------------------------------------------------------------------- clipping

def _gradients_of(grads, fname):
    """``(leaves, rebuild)``: the gradients in ``grads`` (a pytree of arrays, a
    ``pb.Grads``, or params, whose ``.grad`` is read) and the function that puts clipped
    ones back in the same form (for params: into their ``.grad``)."""
    if isinstance(grads, Grads):
        pairs = grads.items()
        return [g for _, g in pairs], lambda new: Grads(
            (p, g) for (p, _), g in zip(pairs, new))
    leaves, treedef = tree_flatten(list(grads) if isinstance(grads, Params) else grads)
    if leaves and all(isinstance(x, Param) for x in leaves):  # params: their .grad
        params = _param_list(leaves, fname)

        def into_grads(new):
            for p, g in zip(params, new):
                p.grad = g
            return grads

        return [p.grad for p in params], into_grads
    if any(isinstance(x, Param) for x in leaves):
        raise TypeError(f"pullback: {fname} takes gradients (a pytree of arrays or a "
                        "pb.Grads) or params (whose .grad it clips), not a mix of both")
    return leaves, lambda new: tree_unflatten(treedef, new)


def _squared_norm(g):
    return _np.sum(_np.real(g * _np.conj(g))) if _np.iscomplexobj(plain(g)) else _np.sum(g * g)


def global_norm(grads: Any) -> Any:
    """The 2-norm of all the gradients together, as if concatenated into one vector.

    Args:
        grads: a pytree of arrays, a ``pb.Grads``, or params (their ``.grad``); a
            gradient that is None is left out.

    >>> float(pb.optim.global_norm({"W": np.array([3.0]), "b": np.array([4.0])}))
    5.0
    """
    leaves, _ = _gradients_of(grads, "global_norm")
    return _np.sqrt(sum((_squared_norm(g) for g in leaves if g is not None), _np.float64(0.0)))


def clip_by_global_norm(grads: Any, max_norm: float) -> Any:
    """The gradients scaled by ``min(1, max_norm / global_norm(grads))``: all of them by
    one factor, so the direction stays (``torch.nn.utils.clip_grad_norm_``,
    ``optax.clip_by_global_norm``). Apply it between the gradient and the step.

    Args:
        grads: a pytree of arrays (returned clipped, in the same structure), a
            ``pb.Grads`` (a new ``Grads`` is returned), or params (a ``pb.Params`` or a
            list of ``pb.param``): then each ``.grad`` is replaced by its clipped gradient
            and the params are returned, ready for ``opt.step(ps)``.
        max_norm: the largest global norm let through, a positive float.

    >>> g = pb.optim.clip_by_global_norm({"W": np.array([3.0]), "b": np.array([4.0])}, 1.0)
    >>> g["W"], g["b"]
    (array([0.6]), array([0.8]))
    """
    _number(max_norm, "clip_by_global_norm's max_norm", low=0.0)
    if not max_norm > 0:
        raise ValueError(f"pullback: clip_by_global_norm's max_norm must be positive, got "
                         f"{max_norm!r}")
    leaves, rebuild = _gradients_of(grads, "clip_by_global_norm")
    norm = _np.sqrt(sum((_squared_norm(g) for g in leaves if g is not None),
                        _np.float64(0.0)))
    scale = max_norm / _np.maximum(norm, max_norm)  # exactly 1 at or below max_norm
    return rebuild([None if g is None else _scaled(g, scale) for g in leaves])


def _scaled(g, scale):
    """``g * scale`` in ``g``'s dtype (float32 gradients stay float32)."""
    out = g * scale
    dtype = _dtype_of(plain(g))
    return out.astype(dtype) if dtype is not None and out.dtype != dtype else out


def clip_by_value(grads: Any, low: float, high: float) -> Any:
    """Every entry of every gradient clipped to ``[low, high]`` (``np.clip``;
    ``torch.nn.utils.clip_grad_value_`` with ``low = -high``).

    Args:
        grads: as ``clip_by_global_norm``'s: a pytree, a ``pb.Grads``, or params (their
            ``.grad`` replaced).
        low: the smallest value let through.
        high: the largest, at least ``low``.

    >>> pb.optim.clip_by_value([np.array([-3.0, 0.5, 2.0])], -1.0, 1.0)
    [array([-1. ,  0.5,  1. ])]
    """
    _number(low, "clip_by_value's low", low=-_math.inf)
    _number(high, "clip_by_value's high", low=-_math.inf)
    if not low <= high:
        raise ValueError(f"pullback: clip_by_value needs low <= high, got low={low!r}, "
                         f"high={high!r}")
    leaves, rebuild = _gradients_of(grads, "clip_by_value")
    for g in leaves:
        if g is not None and _np.iscomplexobj(plain(g)):
            raise TypeError("pullback: clip_by_value of a complex gradient has no order to "
                            "clip by; use clip_by_global_norm")
    return rebuild([None if g is None else _np.clip(g, low, high) for g in leaves])


# ---------------------------------------------------------------------------- schedules

def _check_count(count, fname):
    if isinstance(count, bool) or not isinstance(count, _numbers.Real):
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
        return lr * ((1 - alpha) * 0.5 * (1 + _math.cos(_math.pi * fraction)) + alpha)

    return cosine_decay_schedule
