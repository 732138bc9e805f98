import numpy as np

from pullback._engine.writes import index_update, reread, ufunc_where

from ..spec import UNARY, Spec
from .test_indexing import INDICES, X


def _filled(buffer):
    buffer[...] = 2.0
    return buffer


_MASK = np.array([[True, False, True], [False, True, True]])  # where= of a (2, 3) result


def _row(label, index, broadcast=False):
    shape = np.empty(X)[index].shape
    if broadcast:  # v broadcast along the written block's leading axes
        shape = (1,) * (len(shape) > 0) + shape[1:]
    return Spec(index_update, [(X, shape)], call=lambda x, v: index_update(x, index, v),
                name=f"index_update({label}{', broadcast' if broadcast else ''})")


SPECS = [_row(label, index) for label, index in INDICES]
SPECS += [_row(label, index, broadcast=True) for label, index in INDICES[:6]]
SPECS += [
    Spec(index_update, [((3,), ())], call=lambda x, v: index_update(x, 1, v),
         name="index_update(scalar)"),
    # the view x[:, 1:] of a (2, 3) array, read again from the base
    Spec(reread, [((2, 2), (2, 3))], call=lambda old, b: reread(old, b, (8, (2, 2), (24, 8), "C"))),
    Spec(reread, [((3, 2), (2, 3))], call=lambda old, b: reread(old, b, (0, (3, 2), (8, 24), "C")),
         name="reread(transpose)"),
    # a broadcast view (strides 0): each element of the base read twice, its cotangent added
    Spec(reread, [((2, 3), (3,))], call=lambda old, b: reread(old, b, (0, (2, 3), (0, 8), "C")),
         name="reread(broadcast)"),
    # np.divide(a, b, out=fill, where=mask), np.log(p, where=mask) ...
    Spec(ufunc_where, [((2, 3), (2, 3), (2, 3)), ((2, 3), (2, 1), (3,))],
         domain=("real", "real", "nonzero"),
         call=lambda fill, a, b: ufunc_where(np.divide, _MASK, fill, a, b)),
    Spec(ufunc_where, [((2, 3),), ((3,),)], domain="positive", name="ufunc_where(no out)",
         call=lambda p: ufunc_where(np.log, _MASK, None, p)),
    Spec(ufunc_where, [((2, 3), (2, 3)), ((3,), (3,))], domain="complex",
         name="ufunc_where(complex)",
         call=lambda fill, z: ufunc_where(np.exp, _MASK, fill, z)),
    Spec(ufunc_where, [((2, 3), (3,), ())], name="ufunc_where(subtract, a scalar)",
         call=lambda fill, a, c: ufunc_where(np.subtract, _MASK, fill, a, c)),
    Spec(np.zeros_like, UNARY),
    Spec(np.ones_like, UNARY),
    Spec(np.empty_like, UNARY, call=lambda x: _filled(np.empty_like(x)) * x),
    Spec(np.empty_like, UNARY, name="np.empty_like(every argument by position)",
         call=lambda x: _filled(np.empty_like(x, np.float64, "K", True, None)) * x),
    Spec(np.full_like, [((3,), ()), ((2, 3), ())]),
]
