"""Lazy losses (Dask arrays): nothing is computed until the user asks.

A loss held by a Dask array is a graph, not a number, so pullback cannot look at it while
it differentiates: ``float(loss)`` or ``np.asarray(grad)`` would run the whole forward
pass, once for each. Instead the check that the loss is finite (``losscheck``) becomes a
task of the graph: ``checked`` wraps the loss so that computing it raises
``pb.LossError`` when it is NaN or infinite, and the seed of the backward pass is built
from that checked loss, so every gradient depends on the check too. ``dask.compute(value,
grad)`` then evaluates the forward pass, the check and the backward pass in one pass, and a
gradient computed on its own raises the same error. Dask is not imported here: a value is
lazy when it follows Dask's collection protocol (``__dask_graph__``), and Dask is imported
only to handle such a value, which means it is installed.
"""

import math

import numpy as np

from .registry import LossError


_EAGER = frozenset({np.ndarray, np.float64, np.float32, np.complex128, float, int, complex})


def is_lazy(v):
    """Whether ``v`` is a Dask collection (a Dask array): a graph that has not run yet."""
    return v.__class__ not in _EAGER and hasattr(v, "__dask_graph__")


def checked(v, fname):
    """The lazy scalar ``v`` with a check of its own: computing it raises ``LossError``
    when it is not finite. The task's name is a function of ``v`` and ``fname`` alone, so
    the value handed back and the seed built from it share one task in the graph."""
    from dask.base import tokenize

    return v.map_blocks(_finite, fname, dtype=v.dtype,
                        name="pullback-losscheck-" + tokenize(v, fname))


def _finite(block, fname):
    x = block.ravel()[0]
    if not math.isfinite(x):
        raise LossError(
            f"pullback: the loss of {fname} is {x}; find where it stops being finite (run "
            f"{fname} on a small NumPy slice of the data under pb.detect_anomaly()), or pass "
            "losscheck=False to differentiate it anyway. The loss is a Dask array, so it was "
            "checked when it was computed."
        )
    return block


def seed(v, fname, losscheck):
    """The seed of the lazy scalar loss ``v``: ones like ``v`` (built in ``v``'s graph,
    never a NumPy array shipped into it), which depend on the check of ``v`` with
    ``losscheck``."""
    if not losscheck:
        return np.ones_like(v)
    return checked(v, fname).map_blocks(np.ones_like, dtype=v.dtype)
