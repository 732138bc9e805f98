"""Saving the Tracker face's state (``Optimizer.state_dict``) as a flat dict of plain
arrays for ``np.savez``, and checking it when it comes back (``load_state_dict``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._engine.core import plain
from ..tracker.leaf import Param

Slots = dict[int, tuple[Param, int, dict[str, Any]]]  # id(param) -> (param, count, buffers)


def saved_state(slots: Slots, count: int, params: list[Param]) -> dict[str, Any]:
    """``opt.state_dict(params)``: ``"step"``, the optimizer's ``count``, and for the param
    at position ``i`` that has slots its step count ``"i.step"`` and its buffers."""
    state: dict[str, Any] = {"step": np.asarray(count)}
    for i, p in enumerate(params):
        if id(p) in slots:
            _, steps, buffers = slots[id(p)]
            state[f"{i}.step"] = np.asarray(steps)
            for name, b in buffers.items():
                state[f"{i}.{name}"] = np.array(plain(b))
    return state


def loaded_state(params: list[Param], state: Mapping[str, Any], names: tuple[str, ...],
                 optimizer: str) -> tuple[Slots, int]:
    """The slots and the step count that ``state`` (from ``state_dict(params)``) holds for
    ``params``, for an optimizer named ``optimizer`` with the buffers ``names``; everything
    is checked before the optimizer changes."""
    state = {str(k): state[k] for k in state}
    if "step" not in state:
        raise ValueError("pullback: load_state_dict's state has no 'step' entry; pass what "
                         "opt.state_dict(ps) returned (or np.load of its np.savez)")
    slots: Slots = {}
    for i, p in enumerate(params):
        prefix = f"{i}."
        entries = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
        if not entries:
            continue
        missing = [n for n in ("step", *names) if n not in entries]
        extra = [n for n in entries if n != "step" and n not in names]
        if missing or extra:
            raise ValueError(
                f"pullback: load_state_dict: the entries for param {i} do not fit "
                f"{optimizer}: " + "; ".join(
                    part for part in (
                        f"missing {', '.join(prefix + n for n in missing)}" if missing
                        else "",
                        f"unknown {', '.join(prefix + n for n in extra)}" if extra else "",
                    ) if part) + " (was it saved from another optimizer?)")
        buffers = {}
        for name in names:
            b = np.asarray(entries[name])
            if b.shape != np.shape(plain(p)):
                raise ValueError(
                    f"pullback: load_state_dict: {prefix}{name} has shape {b.shape}, but "
                    f"param {i} has shape {np.shape(plain(p))}; give the params in the "
                    "order state_dict was given them")
            buffers[name] = b.astype(np.result_type(plain(p)), copy=True)
        slots[id(p)] = (p, int(entries["step"]), buffers)
    known = {f"{i}." for i in range(len(params))}
    stray = [k for k in state if k != "step" and k[:k.index(".") + 1] not in known]
    if stray:
        raise ValueError(f"pullback: load_state_dict got entries for no param of the "
                         f"{len(params)} given: {', '.join(sorted(stray))}")
    return slots, int(state["step"])
