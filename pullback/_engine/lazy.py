"""Lazy losses (Dask arrays): nothing is computed until the user asks.

A loss held by a Dask array is a graph, not a number, so pullback cannot look at it while
it differentiates: ``float(loss)`` or ``np.asarray(grad)`` would run the whole forward
pass, once for each. So the seed of the backward pass is ``np.ones_like(loss)``, built in
the loss's graph (never a NumPy array shipped into it), and the check that the loss is
finite (``losscheck``) becomes a task of the graph: ``checked`` wraps the loss so that
computing it raises ``pb.LossError`` when it is NaN or infinite, and ``after`` makes each
gradient wait for that check at its very end (the chunks of the backward pass do not wait
for the whole loss, which would keep every chunk of the forward pass in memory).
``dask.compute(value, grad)`` evaluates the forward pass, the backward pass and the check
in one pass, and a gradient computed on its own raises the same error. Dask is not
imported here: a value is lazy when it is one of Dask's collections, following their
protocol (``__dask_graph__``), and Dask is imported only to handle such a value.
"""

import math

import numpy as np

from .registry import LossError

_EAGER = frozenset({np.ndarray, np.float64, np.float32, np.complex128, float, int, complex})


def is_lazy(v):
    """Whether ``v`` is a Dask collection (a Dask array): a graph that has not run yet.
    Another library's object that follows the protocol (an xarray.DataArray, which may
    hold a Dask array or not) is not one: it is refused as a loss, naming its type."""
    cls = v.__class__
    return cls not in _EAGER and hasattr(v, "__dask_graph__") and (
        cls.__module__.partition(".")[0] in _DASK)


_DASK = frozenset({"dask", "dask_expr"})  # the packages of Dask's collections


def checked(v, fname):
    """The lazy scalar ``v`` with a check of its own: computing it raises ``LossError``
    when it is not finite (a task named ``pullback-losscheck-...`` in the graph)."""
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


def after(g, check):
    """``g`` computed only once ``check`` (the checked loss) has been: the same values."""
    if not is_lazy(g):
        return g
    return g.map_blocks(_first, check, dtype=g.dtype)


def _first(block, check):
    return block
