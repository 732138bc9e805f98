import numpy as np
import scipy.fft
import scipy.signal

import pullback as pb
from pullback.rules.scipy import fft as scipy_fft

from ..spec import Spec

NORMS = [None, "ortho", "forward"]
GRID_1D = {"n": [None, 2, 6], "axis": [0, -1], "norm": NORMS}
GRID_C2R = {"n": [None, 3, 9], "axis": [0, -1], "norm": NORMS}
GRID_ND = {"s": [None, (2, 6)], "axes": [(0, 1), (1, 0)], "norm": NORMS}
GRID_2D = {"s": [None, (2, 6)], "norm": NORMS}
COMPLEX_IN = {"ifft", "irfft", "hfft", "ifft2", "irfft2", "ifftn", "irfftn", "fft", "fft2",
              "fftn"}


def _row(name, shapes, grid):
    return Spec(getattr(scipy_fft.scipy_fft, name), shapes, kwargs=grid,
                domain="complex" if name in COMPLEX_IN else "real",
                call=getattr(scipy.fft, name), name=f"scipy.fft.{name}")


SPECS = [_row(n, [(5,), (3, 4)], GRID_C2R if n in ("irfft", "hfft") else GRID_1D)
         for n in scipy_fft.ONE_D]
SPECS += [_row(n, [(3, 4), (2, 3, 4)], GRID_2D) for n in scipy_fft.TWO_D]
SPECS += [_row(n, [(3, 4)], GRID_ND) for n in scipy_fft.N_D]
SPECS += [Spec(scipy_fft.scipy_fft.fft, [(3, 4)], call=lambda x: scipy.fft.fft(
    x, workers=2, overwrite_x=True), name="scipy.fft.fft(real, workers, overwrite_x)")]


def test_scipy_fft_of_tracked_values_as_users_write_it():
    def power(x):
        spectrum = scipy.fft.rfft(x * np.hanning(len(x)))
        return np.sum(np.abs(spectrum) ** 2) + np.sum(scipy.fft.irfft(spectrum * 0.5) ** 2)

    x = np.random.default_rng(0).standard_normal(8)
    pb.check_grads(power, x, order=2)
    pb.check_grads(lambda x: np.sum(scipy.signal.fftconvolve(x, x[:3]) ** 2), x, order=2)
    assert type(scipy.fft.fft(x)) is np.ndarray  # a plain call is SciPy's own


def test_the_cosine_and_sine_transforms_name_themselves_without_a_rule():
    import pytest

    for name in ("dct", "idct", "dst", "idst", "dctn"):
        transform = getattr(scipy.fft, name)
        with pytest.raises(pb.NoRuleError, match=f"scipy.fft.{name}"):
            pb.grad(lambda x, t=transform: np.sum(t(x)))(np.ones(4))
        assert transform(np.ones(4)).shape == (4,)  # a plain call is SciPy's
