import numpy as np

import pullback as pb

from .spec import Spec


def _pair(func):
    return lambda x, y, **kw: func([x, y], **kw)


SPECS = [
    # joining
    Spec(np.concatenate, [((3,), (2,)), ((2, 3), (1, 3))], call=_pair(np.concatenate)),
    Spec(np.concatenate, [((2, 3), (2, 1))], kwargs={"axis": [-1, 1]},
         call=_pair(np.concatenate)),
    Spec(np.concatenate, [((2, 3), (4,)), ((), (3,))], kwargs={"axis": [None]},
         call=_pair(np.concatenate)),
    Spec(np.concatenate, [((2,), (3,))], name="np.concatenate(with a constant)",
         call=lambda x, y: np.concatenate([x, np.ones(2), y])),
    Spec(np.stack, [((), ()), ((3,), (3,))], call=_pair(np.stack)),
    Spec(np.stack, [((2, 3), (2, 3))], kwargs={"axis": [1, -1]}, call=_pair(np.stack)),
    Spec(np.vstack, [((), ()), ((3,), (3,)), ((2, 3), (3,))], call=_pair(np.vstack)),
    Spec(np.hstack, [((), (2,)), ((3,), (2,)), ((2, 3), (2, 1))], call=_pair(np.hstack)),
    Spec(np.dstack, [((3,), (3,)), ((2, 3), (2, 3)), ((2, 3, 2), (2, 3, 1))],
         call=_pair(np.dstack)),
    Spec(np.column_stack, [((), ()), ((3,), (3,)), ((3,), (3, 2))], call=_pair(np.column_stack)),
    Spec(np.block, [((2,), (3,)), ((2, 2), (2, 1))], call=lambda x, y: np.block([x, y])),
    Spec(np.block, [(2, 3)], call=np.block, name="np.block(one array)"),
    Spec(np.block, [((2, 2), (2, 1), (3,))], name="np.block(nested)",
         call=lambda a, b, c: np.block([[a, b], [c]])),
    Spec(np.block, [((2, 2), (2, 4))], name="np.block(deeper)",
         call=lambda a, c: np.block([[[a, a]], [[c]]])),
    Spec(np.append, [((3,), (2,)), ((2, 3), ()), ((), (2, 2))]),
    Spec(np.append, [((2, 3), (1, 3))], kwargs={"axis": [0, -2]}),
    Spec(np.append, [((2, 3), (2, 1))], kwargs={"axis": [1, -1]}),
    Spec(np.append, [(2, 3)], call=lambda x: np.append(x, [1.0, 2.0]),
         name="np.append(a constant)"),
    Spec(np.append, [(3,)], call=lambda x: np.append(np.ones((2, 2)), x),
         name="np.append(to a constant)"),
    # splitting: each piece is an output; the pullback joins their cotangents
    Spec(np.split, [(6,), (2, 6)], kwargs={"indices_or_sections": [3, [1, 4]]},
         call=lambda x, indices_or_sections: np.split(x, indices_or_sections, axis=-1)),
    Spec(np.split, [(4, 3)], kwargs={"indices_or_sections": [2], "axis": [0]}),
    Spec(np.array_split, [(5,), (2, 5)], kwargs={"indices_or_sections": [3]},
         call=lambda x, indices_or_sections: np.array_split(x, indices_or_sections, -1)),
    Spec(np.hsplit, [(4,), (2, 4)], kwargs={"indices_or_sections": [2, [1]]}),
    Spec(np.vsplit, [(4, 3)], kwargs={"indices_or_sections": [2]}),
    Spec(np.dsplit, [(2, 3, 4)], kwargs={"indices_or_sections": [[1, 3]]}),
    # building
    Spec(np.meshgrid, [((3,), (2,))], kwargs={"indexing": ["xy", "ij"], "sparse": [False, True]},
         call=lambda x, y, **kw: np.meshgrid(x, y, **kw)),
    Spec(np.meshgrid, [((3,), (2,), (4,)), ((2, 2), (3,), ())], kwargs={"indexing": ["xy"]},
         call=lambda *xs, **kw: np.meshgrid(*xs, **kw), name="np.meshgrid(three)"),
    Spec(np.meshgrid, [(3,)], call=lambda x: np.meshgrid(x), name="np.meshgrid(one)"),
    Spec(np.diagflat, [(3,), (2, 2)], kwargs={"k": [0, 1, -2]}),
    Spec(np.vander, [(3,), (4,)], kwargs={"N": [None, 1, 4], "increasing": [False, True]}),
    Spec(np.linspace, [((), ()), ((3,), ()), ((2, 1), (3,))],
         kwargs={"num": [1, 2, 5], "endpoint": [True, False]}),
    Spec(np.linspace, [((3,), (2, 3))], kwargs={"num": [4], "axis": [1, -1, 0]}),
    Spec(np.linspace, [((), ()), ((2,), (2,))], kwargs={"num": [1, 4], "endpoint": [True, False]},
         call=lambda start, stop, **kw: np.linspace(start, stop, retstep=True, **kw)[0],
         name="np.linspace(retstep: the samples)"),
    Spec(np.linspace, [((), ()), ((2,), (2,))], kwargs={"endpoint": [True, False]},
         call=lambda start, stop, endpoint: np.linspace(start, stop, 4, endpoint, retstep=True),
         name="np.linspace(retstep: samples and step)"),
    Spec(np.linspace, [()], call=lambda stop: np.linspace(0.0, stop ** 2, 3),
         name="np.linspace(constant start)"),
    Spec(np.full_like, [((3,), ()), ((2, 3), (3,))], call=lambda a, v: np.full_like(a, v * 2.0)),
    Spec(np.full_like, [(3,)], call=lambda a: np.full_like(a, a[0]) * a,
         name="np.full_like(a, a[0])"),
]




def test_split_pieces_not_used_get_zero_cotangents():
    x = np.arange(6.0)
    g = pb.grad(lambda x: np.sum(np.split(x, 3)[1] ** 2))(x)
    np.testing.assert_array_equal(g, [0, 0, 4, 6, 0, 0])
