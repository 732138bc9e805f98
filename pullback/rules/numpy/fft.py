"""numpy.fft. Every transform is linear, so its pullback is its adjoint (the complex
convention makes the cotangent of ``F x`` equal to ``F^H g``), and the adjoint of each
transform is its partner with the opposite normalization:

    fft <-> ifft,  rfft <-> irfft,  hfft <-> ihfft,  fftshift <-> ifftshift

``norm="backward"`` and ``"forward"`` swap, ``"ortho"`` stays. Padding or truncation of
the input (``n``, ``s``) is transposed by resizing the cotangent back to the input's length.

The half-spectrum transforms hold each conjugate pair of bins once: the real part of the
adjoint of a real-input transform weighs the DC bin (and the Nyquist bin for an even
length) once and the other bins half, and a real-output transform, whose output counts
the other bins twice, gets those weights inverted.
"""

import numpy as np

from ...extend import NoRuleError, linear, name_of, on_backend, rrule, shape_of, zeros_on

_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _negative(axis, ndim):
    return int(axis) % ndim - ndim


def _index_from_end(ax, index):
    """An index selecting ``index`` along axis ``ax`` (negative), past any batch axes."""
    return (Ellipsis, index) + (slice(None),) * (-ax - 1)


def _resize(y, axes, sizes):
    """``y`` cut or zero-padded at the end of each of ``axes`` (negative) to ``sizes``: the
    transpose of the padding or truncation a transform applies to its input."""
    for ax, m in zip(axes, sizes):
        shape = shape_of(y)
        n = shape[ax]
        if m < n:
            y = y[_index_from_end(ax, slice(0, m))]
        elif m > n:
            pad = list(shape)
            pad[ax] = m - n
            y = np.concatenate([y, zeros_on(y, tuple(pad), np.result_type(y))], axis=ax)
    return y


def _half_weights(n, ax):
    """Weights of the ``n // 2 + 1`` bins of a half spectrum of length-``n`` signals along
    axis ``ax``: 1 for DC (and Nyquist when ``n`` is even), 1/2 for the bins that stand
    for a conjugate pair."""
    w = np.full(n // 2 + 1, 0.5)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return np.reshape(w, (-1,) + (1,) * (-ax - 1))


def _check_out(func, out):
    if out is not None:
        raise TypeError(
            f"pullback: {name_of(func)}(..., out=...) writes into an existing array, "
            "which cannot record a gradient; use the returned array"
        )


def _pullback(adjoint, kind, in_shape, sizes, axes, norm):
    """The pullback of a transform over ``axes`` (negative) with transform lengths
    ``sizes``. ``kind``: "c2c", "r2c" (real input, half spectrum out) or "c2r"."""
    swapped = _SWAP[norm]
    back = [in_shape[ax] for ax in axes]

    def fft_pullback(g):
        if kind == "r2c":
            g = g * on_backend(_half_weights(sizes[-1], axes[-1]), g)
        y = adjoint(g, sizes, axes, swapped)
        if kind == "c2r":
            y = y / on_backend(_half_weights(sizes[-1], axes[-1]), y)
        return (_resize(y, axes, back), None, None, None, None)

    return fft_pullback


def _rule_1d(func, adjoint, kind):
    def fft_rule(a, n=None, axis=-1, norm=None, out=None):
        _check_out(func, out)
        ans = func(a, n, axis, norm)
        in_shape = shape_of(a)
        ax = _negative(axis, len(in_shape))
        size = shape_of(ans)[ax]
        if kind == "r2c":  # the signal's length, not the half spectrum's
            size = in_shape[ax] if n is None else int(n)
        return ans, _pullback(adjoint, kind, in_shape, [size], [ax], norm)

    return fft_rule


def _resolve(func, in_shape, out_shape, s, axes, kind):
    """Negative axes and transform lengths of an n-d transform, as NumPy resolves them: the
    output's lengths, except the last axis of a real-input transform (``s[-1]``, or the
    input's length for None and -1)."""
    if axes is None:
        axes = range(len(in_shape)) if s is None else range(-len(s), 0)
    axes = [_negative(ax, len(in_shape)) for ax in axes]
    if len(set(axes)) != len(axes):
        raise NoRuleError(f"pullback: {name_of(func)} with repeated axes has no rule")
    sizes = [out_shape[ax] for ax in axes]
    if kind == "r2c":
        n = None if s is None else s[-1]
        sizes[-1] = in_shape[axes[-1]] if n is None or n == -1 else int(n)
    return sizes, axes


def _rule_nd(func, adjoint, kind, default_axes):
    def fftn_rule(a, s=None, axes=default_axes, norm=None, out=None):
        _check_out(func, out)
        ans = func(a, s=s, axes=axes, norm=norm)
        in_shape = shape_of(a)
        sizes, neg_axes = _resolve(func, in_shape, shape_of(ans), s, axes, kind)
        return ans, _pullback(adjoint, kind, in_shape, sizes, neg_axes, norm)

    return fftn_rule


def _adjoint_1d(func):
    def adjoint(g, sizes, axes, norm):
        return func(g, sizes[0], axes[0], norm)

    return adjoint


def _adjoint_nd(func):
    def adjoint(g, sizes, axes, norm):
        return func(g, s=sizes, axes=axes, norm=norm)

    return adjoint


_fft = np.fft
for _func, _adjoint, _kind in [
    (_fft.fft, _fft.ifft, "c2c"), (_fft.ifft, _fft.fft, "c2c"),
    (_fft.rfft, _fft.irfft, "r2c"), (_fft.irfft, _fft.rfft, "c2r"),
    (_fft.ihfft, _fft.hfft, "r2c"), (_fft.hfft, _fft.ihfft, "c2r"),
]:
    rrule(_func, batched=True)(_rule_1d(_func, _adjoint_1d(_adjoint), _kind))

for _func, _adjoint, _kind, _axes in [
    (_fft.fft2, _fft.ifftn, "c2c", (-2, -1)), (_fft.ifft2, _fft.fftn, "c2c", (-2, -1)),
    (_fft.fftn, _fft.ifftn, "c2c", None), (_fft.ifftn, _fft.fftn, "c2c", None),
    (_fft.rfft2, _fft.irfftn, "r2c", (-2, -1)), (_fft.irfft2, _fft.rfftn, "c2r", (-2, -1)),
    (_fft.rfftn, _fft.irfftn, "r2c", None), (_fft.irfftn, _fft.rfftn, "c2r", None),
]:
    rrule(_func, batched=True)(_rule_nd(_func, _adjoint_nd(_adjoint), _kind, _axes))


def _shift_transpose(inverse):
    """The transpose of a shift: the opposite shift (``inverse``) of the same axes."""

    def shift_transpose(g, ans, x, axes=None):
        ndim = len(shape_of(x))
        if axes is None:
            back = tuple(range(-ndim, 0))
        elif isinstance(axes, (int, np.integer)):
            back = _negative(axes, ndim)
        else:
            back = tuple(_negative(ax, ndim) for ax in axes)
        return inverse(g, back)

    return shift_transpose


linear(_fft.fftshift, _shift_transpose(_fft.ifftshift), batched=True)
linear(_fft.ifftshift, _shift_transpose(_fft.fftshift), batched=True)
