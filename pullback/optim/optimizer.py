"""What every optimizer shares (``Optimizer``): the functional face ``init``/``update`` on
pytrees, with its state ``OptState``, and the Tracker face ``step`` on params, with
``update(opt, ps, gs)``, Flux's ``update!``."""

from __future__ import annotations

import collections
import numbers
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

from .._engine.core import Tracked, plain
from ..tracker.containers import Grads
from ..tracker.leaf import Param, _below, _step_of, check_live
from ..tracker.leaf import update as update_param
from ..tree import StructureMismatch, kind_of, leaves_by, tree_flatten, tree_unflatten
from .checks import _dtype_of, _gradient, _is, _leaf_paths, _param_list, _real_float
from .saving import Slots, loaded_state, saved_state
from .schedules import Schedule, _lr_at, _schedule

Ps = TypeVar("Ps", bound=Iterable[Param])


# the field ``count`` shadows the method tuple.count, which type checkers reject in a
# typing.NamedTuple; the same namedtuple, with its fields annotated on a subclass, is typed
class OptState(collections.namedtuple("OptState", ["count", "buffers"])):
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


class Optimizer:
    """What every optimizer shares: ``init``/``update`` on pytrees, ``step`` on params.
    A subclass names its ``buffers`` and gives ``_step(x, g, buffers, lr, count)``, which
    returns the change of ``x`` and the new buffers, computed without writing to any
    input."""

    buffers: tuple[str, ...] = ()

    def __init__(self, lr: float | Schedule) -> None:
        self.lr = _schedule(lr)
        self._slots: Slots = {}  # the Tracker face's state: id(param) -> (param, count, buffers)
        self.count = 0  # the number of step() calls made

    # -- the functional face

    def init(self, params: Any) -> OptState:
        """The state for ``update``: step count 0 and zero buffers shaped as ``params``."""
        leaves, treedef = tree_flatten(params)
        for path, x in zip(_leaf_paths(treedef), leaves):
            _real_float(x, f"params{path}")
        return OptState(0, {name: tree_unflatten(treedef, [np.zeros_like(plain(x))
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
        if isinstance(count, np.ndarray) and count.shape == () and count.dtype.kind in "iu":
            count = int(count)  # (a state saved with np.savez and loaded: a 0-d array)
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
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
            shape = np.shape(plain(x))
            if _dtype_of(plain(b)) is None or np.shape(plain(b)) != shape:
                got = (f"is {kind_of(plain(b))}" if _dtype_of(plain(b)) is None
                       else f"has shape {np.shape(plain(b))}")
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
            what = f"the param of shape {np.shape(plain(p))}"
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
                type(g) is np.ndarray and not g.any() for _, g in moves):
            warnings.warn(
                f"pullback: {fname} found every .grad zero: was loss.backward() called since "
                "the last step? (.grad starts at zeros and step() resets it; the step is "
                "made with a zero gradient)", RuntimeWarning, stacklevel=3)
        for p, g in moves:
            x = _below(p.value, p.level)[0]
            _, count, buffers = self._slots.get(id(p), (p, 0, None))
            if buffers is None:
                buffers = {name: np.zeros_like(plain(x)) for name in self.buffers}
            delta, buffers = self._step(x, g, buffers, lr, count)
            self._slots[id(p)] = (p, count + 1, buffers)  # holding p keeps its id unique
            if not isinstance(delta, Tracked):
                delta = np.asarray(delta, dtype=np.result_type(plain(x)))
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
        return saved_state(self._slots, self.count, _param_list(ps, "state_dict"))

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
        slots, count = loaded_state(params, state, self.buffers, type(self).__name__)
        self._slots.update(slots)
        self.count = count

    def _step(self, x: Any, g: Any, buffers: dict[str, Any], lr: float,
              count: int) -> tuple[Any, dict[str, Any]]:
        raise NotImplementedError(f"pullback: {type(self).__name__} must define _step")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


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
