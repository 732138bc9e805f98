"""``np.emath`` (``numpy.lib.scimath``): the elementwise functions whose result is complex
where the real one is undefined (``np.emath.sqrt(-1) == 1j``), each NumPy's own function
of the input made complex where it must be, so the table rows of ``np.sqrt``, ``np.log``,
... give its derivatives. ``arcsin`` and ``arccos`` have none: beyond +-1 their real
arguments lie on the complex functions' branch cuts, where the derivative of the complex
function is not the one along the real axis."""

import numpy as np

from ...extend import composite, is_complex

scimath = np.lib.scimath


def _complex_where(x, outside):
    """``x``, made complex when it is real and some entry lies ``outside`` the real
    function's domain (NumPy's ``_fix_real_lt_zero`` and ``_fix_real_abs_gt_1``)."""
    if not is_complex(x) and np.any(outside(x)):
        return x.astype(np.result_type(x, 1j))
    return x


def _negative(x):
    return x < 0


def _beyond_one(x):
    return np.abs(x) > 1


def _unary(ufunc, outside):
    def impl(x):
        return ufunc(_complex_where(x, outside))

    impl.__name__ = impl.__qualname__ = f"emath_{ufunc.__name__}"
    return impl


for _name, _ufunc, _outside in [("sqrt", np.sqrt, _negative), ("log", np.log, _negative),
                                ("log2", np.log2, _negative), ("log10", np.log10, _negative),
                                ("arctanh", np.arctanh, _beyond_one)]:
    composite(getattr(scimath, _name), _unary(_ufunc, _outside))


def _logn(n, x):
    return np.log(_complex_where(x, _negative)) / np.log(_complex_where(n, _negative))


def _power(x, p):  # (a negative integer exponent of an integer base: no tracked value)
    return np.power(_complex_where(x, _negative), p)


composite(scimath.logn, _logn)
composite(scimath.power, _power)
