import numpy as np
import pytest

import pullback as pb

from ..spec import NUMPY2, Spec

fft = np.fft
NORMS = [None, "ortho", "forward"]
# inputs of length 3 (axis 0) and 4 (axis -1): n cuts some and pads others
ONE_D = [(5,), (3, 4)]
GRID_1D = {"n": [None, 2, 6], "axis": [0, -1], "norm": NORMS}
# a half spectrum of 2 or 4 bins: n = 3 and 9 read fewer or more bins than given
GRID_C2R = {"n": [None, 3, 9], "axis": [0, -1], "norm": NORMS}
# s = -1 (keep the input's length along that axis) is a NumPy 2 feature
GRID_ND = {"s": [None, (2, 6), *([(5, -1)] if NUMPY2 else [])], "axes": [(0, 1), (1, 0)],
           "norm": NORMS}
GRID_2D = {"s": [None, (2, 6)], "norm": NORMS}

SPECS = [
    Spec(fft.fft, ONE_D, domain="complex", kwargs=GRID_1D),
    Spec(fft.fft, ONE_D, kwargs=GRID_1D, name="np.fft.fft(real)"),
    Spec(fft.ifft, ONE_D, domain="complex", kwargs=GRID_1D),
    Spec(fft.rfft, ONE_D, kwargs=GRID_1D),
    Spec(fft.ihfft, ONE_D, kwargs=GRID_1D),
    Spec(fft.irfft, ONE_D, domain="complex", kwargs=GRID_C2R),
    Spec(fft.hfft, ONE_D, domain="complex", kwargs=GRID_C2R),
    Spec(fft.fftn, [(3, 4)], domain="complex", kwargs=GRID_ND),
    Spec(fft.fftn, [(2, 3, 2)], name="np.fft.fftn(real, all axes)"),
    Spec(fft.ifftn, [(3, 4)], domain="complex", kwargs=GRID_ND),
    Spec(fft.ifftn, [(2, 3, 2)], domain="complex", kwargs={"axes": [None, (-1,)]},
         name="np.fft.ifftn(default axes)"),
    Spec(fft.rfftn, [(3, 4)], kwargs=GRID_ND),
    Spec(fft.rfftn, [(2, 3, 2), (5,)], name="np.fft.rfftn(all axes)"),
    Spec(fft.irfftn, [(3, 4)], domain="complex", kwargs=GRID_ND),
    Spec(fft.irfftn, [(2, 3, 2)], domain="complex", kwargs={"axes": [None, (0, 2)]},
         name="np.fft.irfftn(default s)"),
    Spec(fft.fft2, [(3, 4), (2, 3, 4)], domain="complex", kwargs=GRID_2D),
    Spec(fft.ifft2, [(3, 4), (2, 3, 4)], domain="complex", kwargs=GRID_2D),
    Spec(fft.rfft2, [(3, 4), (2, 3, 4)], kwargs=GRID_2D),
    Spec(fft.irfft2, [(3, 4), (2, 3, 4)], domain="complex", kwargs=GRID_2D),
    Spec(fft.fftshift, [(5,), (3, 4)], kwargs={"axes": [None, 0, -1]}),
    Spec(fft.fftshift, [(3, 4)], kwargs={"axes": [(1, 0)]}, name="np.fft.fftshift(axes)"),
    Spec(fft.ifftshift, [(5,), (3, 4)], domain="complex", kwargs={"axes": [None, 0, -1]}),
    Spec(fft.ifftshift, [(3, 4)], kwargs={"axes": [(0, 1)]}, name="np.fft.ifftshift(axes)"),
]




SPECS += [Spec(np.fft.fft, [(6,)], call=lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2),
               name="power spectrum of a real signal")]


def test_out_is_refused_on_tracked_input():
    # NumPy 2's transforms take out=, which pullback refuses; NumPy 1.26's take no out=
    # at all, and its own TypeError comes through
    with pytest.raises(TypeError, match="out=" if NUMPY2 else "keyword argument 'out'"):
        pb.grad(lambda x: np.sum(np.fft.fft(x, out=np.empty(3, complex)).real))(np.ones(3))


def test_repeated_axes_have_no_rule():
    with pytest.raises(pb.NoRuleError, match="repeated axes"):
        pb.vjp(lambda x: np.fft.fftn(x, axes=(0, 0)), np.ones((2, 3)))
