"""scipy.fft's transforms on tracked values: np.fft's of the same arguments, whose rules
they then take (SciPy's transform is NumPy's, to rounding). ``overwrite_x``, ``workers``
and ``plan`` only say how to compute it, and are not used. A plain call is SciPy's own.
The cosine and sine transforms have no rule yet: on a tracked value they raise NoRuleError
naming themselves (pocketfft's own error named no function)."""

import numpy as np
from scipy import fft as scipy_fft

from ..extend import composite
from ._util import intercept

ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
TWO_D = ("fft2", "ifft2", "rfft2", "irfft2")
N_D = ("fftn", "ifftn", "rfftn", "irfftn")


def _one_d(transform):
    def impl(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *, plan=None):
        return transform(x, n, axis, norm)

    return impl


def _many_d(transform, default_axes):
    def impl(x, s=None, axes=default_axes, norm=None, overwrite_x=False, workers=None, *,
             plan=None):
        return transform(x, s, axes, norm)

    return impl


for _name in ONE_D:
    composite(intercept(scipy_fft, _name), _one_d(getattr(np.fft, _name)))
for _name in TWO_D + N_D:
    composite(intercept(scipy_fft, _name),
              _many_d(getattr(np.fft, _name), (-2, -1) if _name in TWO_D else None))
for _name in ("dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn"):
    intercept(scipy_fft, _name)
