"""Products: einsum, and the products that are einsums (outer, inner, kron, tensordot),
vdot, cross, convolve and correlate; and trapezoid, interp and polyval.

A product is linear in each operand: the cotangent of one operand is the product of the
output's cotangent with the conjugated other operands, summed onto that operand's indices
(an einsum whose output is the operand's subscripts). Leading batch axes of the cotangent
ride along as the einsum's '...'. Pullbacks hand back each cotangent as a thunk, so that
no work is spent on an operand that is a constant.
"""

import functools
import string
from collections import Counter

import numpy as np

from ...extend import is_complex, not_implemented, on_backend, plain, rrule, shape_of
from .._util import as_array, batch_shape, conj_if_complex, rrule_if_present, zero_of
from .indexing import index_add

# einsum's labels; in the interleaved form, integer label i is _LABELS[i]
_LABELS = string.ascii_uppercase + string.ascii_lowercase


# ---------------------------------------------------------------------------- einsum

def _einsum_subscripts(args):
    """The subscripts string of an einsum call, and the positions of its operands."""
    if isinstance(args[0], str):
        return args[0], list(range(1, len(args)))
    # interleaved form: operand, sublist, operand, sublist, ..., [output sublist]
    positions = list(range(0, len(args) - 1, 2))

    def letters(sublist):
        return "".join("..." if s is Ellipsis else _LABELS[s] for s in sublist)

    subscripts = ",".join(letters(args[i + 1]) for i in positions)
    if len(args) % 2:
        subscripts += "->" + letters(args[-1])
    return subscripts, positions


def _explicit(subscripts, shapes):
    """Each operand's subscripts and the output's, with '...' written out in letters of
    its own and the output made explicit; and the letters still unused."""
    subscripts = subscripts.replace(" ", "")
    lhs, arrow, rhs = subscripts.partition("->")
    ins = lhs.split(",")
    free = [c for c in _LABELS if c not in subscripts]
    # an ellipsis stands for the axes no letter names; they broadcast from the right
    spans = [len(shape) - (len(s) - 3) if "..." in s else 0 for s, shape in zip(ins, shapes)]
    width = max(spans, default=0)
    dots, free = "".join(free[:width]), free[width:]
    if arrow:
        out = rhs.replace("...", dots)
    else:  # implicit output: the ellipsis axes, then letters used once, alphabetically
        counts = Counter(lhs.replace("...", "").replace(",", ""))
        out = dots + "".join(sorted(c for c, k in counts.items() if k == 1))
    ins = [s.replace("...", dots[width - k:]) for s, k in zip(ins, spans)]
    return ins, out, free


def _einsum_vjp(ins, out, operands, free, optimize=False, shapes=None):
    """The pullback of ``einsum('ins->out', *operands)``: for a cotangent, one thunk per
    operand, giving its cotangent (reshaped to ``shapes[k]`` when given)."""
    own = [shape_of(op) for op in operands]

    def einsum_cotangent(g, k):
        terms = ["..." + out] + [s for j, s in enumerate(ins) if j != k]
        ops = [g] + [conj_if_complex(op) for j, op in enumerate(operands) if j != k]
        # a letter repeated in the operand (a diagonal, 'ii') becomes a fresh letter joined
        # to the first by an identity: the cotangent lies on that diagonal
        target, fresh = "", iter(free)
        for c, n in zip(ins[k], own[k]):
            if c in target:
                d = next(fresh)
                terms.append(c + d)
                ops.append(on_backend(np.eye(n), g))
                c = d
            target += c
        # a letter summed over in this operand alone: the cotangent is constant along it
        named = set("".join(terms))
        for c, n in zip(target, own[k]):
            if c not in named:
                terms.append(c)
                ops.append(on_backend(np.ones(n), g))
        ct = np.einsum(",".join(terms) + "->..." + target, *ops, optimize=optimize)
        if shapes is None:
            return ct
        return np.reshape(ct, batch_shape(g, len(out)) + shapes[k])

    def einsum_vjp(g):
        return [functools.partial(einsum_cotangent, g, k) for k in range(len(operands))]

    return einsum_vjp


@rrule(np.einsum, batched=True)
def einsum_rule(*args, **kwargs):
    ans = np.einsum(*args, **kwargs)
    subscripts, positions = _einsum_subscripts(args)
    operands = [args[i] for i in positions]
    dtype = kwargs.get("dtype")
    if dtype is not None and np.dtype(dtype).kind != "c":
        # a real dtype= (under casting='unsafe') computes with the operands' real parts
        operands = [np.real(op) if is_complex(op) else op for op in operands]
    ins, out, free = _explicit(subscripts, [shape_of(op) for op in operands])
    vjp = _einsum_vjp(ins, out, operands, free, kwargs.get("optimize", False))

    def einsum_pullback(g):
        cts = [None] * len(args)
        for i, ct in zip(positions, vjp(g)):
            cts[i] = ct
        return tuple(cts)

    return ans, einsum_pullback


# ---------------------------------------------------------------------------- einsums

@rrule(np.tensordot, batched=True)
def tensordot_rule(a, b, axes=2):
    ans = np.tensordot(a, b, axes)
    na, nb = len(shape_of(a)), len(shape_of(b))
    if np.ndim(axes) == 0:
        axes = (list(range(na - int(axes), na)), list(range(int(axes))))
    sa, sb = list(_LABELS[:na]), list(_LABELS[na:na + nb])
    pairs = [(int(i) % na, int(j) % nb) for i, j in zip(*(np.atleast_1d(x) for x in axes))]
    for i, j in pairs:
        sb[j] = sa[i]
    summed = {sa[i] for i, _ in pairs}
    out = "".join(c for c in sa + sb if c not in summed)
    vjp = _einsum_vjp(["".join(sa), "".join(sb)], out, [a, b], _LABELS[na + nb:], True)

    def tensordot_pullback(g):
        return (*vjp(g), None)

    return ans, tensordot_pullback


@rrule(np.inner, batched=True)
def inner_rule(a, b):
    ans = np.inner(a, b)
    na, nb = len(shape_of(a)), len(shape_of(b))
    sa, sb = _LABELS[:na], _LABELS[na:na + nb]
    if na and nb:  # sums over the last axes; with a scalar it is a product
        sa, sb = sa[:-1] + "z", sb[:-1] + "z"
    out = (sa + sb).replace("z", "")
    vjp = _einsum_vjp([sa, sb], out, [a, b], _LABELS[na + nb:], True)

    def inner_pullback(g):
        return tuple(vjp(g))

    return ans, inner_pullback


@rrule(np.outer, batched=True)
def outer_rule(a, b):
    ans = np.outer(a, b)
    shapes = [shape_of(a), shape_of(b)]
    vjp = _einsum_vjp(["i", "j"], "ij", [np.ravel(a), np.ravel(b)], "", True, shapes)

    def outer_pullback(g):
        return tuple(vjp(g))

    return ans, outer_pullback


@rrule(np.kron, batched=True)
def kron_rule(a, b):
    ans = np.kron(a, b)
    sa, sb = shape_of(a), shape_of(b)
    d = max(len(sa), len(sb))
    sa_, sb_ = (1,) * (d - len(sa)) + sa, (1,) * (d - len(sb)) + sb
    # kron(a, b)[i * nb + j] = a[i] b[j] on each axis: split every output axis in two
    ia, ib = _LABELS[:d], _LABELS[d:2 * d]
    out = "".join(x + y for x, y in zip(ia, ib))
    grown = [np.reshape(a, sa_), np.reshape(b, sb_)]
    vjp = _einsum_vjp([ia, ib], out, grown, "", True, [sa, sb])
    split = tuple(n for pair in zip(sa_, sb_) for n in pair)

    def kron_pullback(g):
        return tuple(vjp(np.reshape(g, batch_shape(g, d) + split)))

    return ans, kron_pullback


@rrule(np.vdot, batched=True)
def vdot_rule(a, b):
    # vdot(a, b) = sum(conj(a) * b) over the flattened arrays: antilinear in a
    def vdot_pullback(g):
        batch = np.shape(plain(g))
        column = np.expand_dims(g, -1)

        def vdot_a():
            return np.reshape(conj_if_complex(column) * np.ravel(b), batch + shape_of(a))

        def vdot_b():
            return np.reshape(column * np.ravel(a), batch + shape_of(b))

        return vdot_a, vdot_b

    return np.vdot(a, b), vdot_pullback


# ---------------------------------------------------------------------------- cross

@rrule(np.cross, batched=True)
def cross_rule(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    ans = np.cross(a, b, axisa, axisb, axisc, axis)
    if axis is not None:
        axisa = axisb = axisc = axis
    na, nb = len(shape_of(a)), len(shape_of(b))
    axisa, axisb = int(axisa) % na - na, int(axisb) % nb - nb
    a3, b3 = _as_3_vectors(a, axisa), _as_3_vectors(b, axisb)
    out_ndim = len(shape_of(ans))
    planar = shape_of(a)[axisa] == shape_of(b)[axisb] == 2  # the output is the z component

    def cross_pullback(g):
        if planar:
            g3 = _pad_last(np.expand_dims(g, -1), 2, 0)
        else:
            g3 = np.moveaxis(g, int(axisc) % out_ndim - out_ndim, -1)
        # <g, a x b> = <conj(b) x g, a> = <g x conj(a), b>
        def cross_a():
            ct = np.cross(conj_if_complex(b3), g3)[..., :shape_of(a)[axisa]]
            return np.moveaxis(ct, -1, axisa)

        def cross_b():
            ct = np.cross(g3, conj_if_complex(a3))[..., :shape_of(b)[axisb]]
            return np.moveaxis(ct, -1, axisb)

        # the axis arguments are integers: one None each, as the call above passes all six
        return cross_a, cross_b, None, None, None, None

    return ans, cross_pullback


def _pad_last(x, before, after):
    return np.pad(x, [(0, 0)] * (len(shape_of(x)) - 1) + [(before, after)])


def _as_3_vectors(x, axis):
    """``x`` with its vectors along the last axis, 2-vectors given a zero z component."""
    moved = np.moveaxis(x, axis, -1)
    return _pad_last(moved, 0, 1) if shape_of(moved)[-1] == 2 else moved


# ---------------------------------------------------------------------------- convolution

def _convolve_vjp(g, a, v, mode, size):
    """Thunks for the cotangents of ``np.convolve(a, v, mode)``, whose output of ``size``
    entries lies inside the full convolution: out[n] = sum_k a[k] v[n - k]."""
    m, n = len(plain(a)), len(plain(v))
    mode = {0: "valid", 1: "same", 2: "full"}.get(mode, mode)  # NumPy's numeric modes
    start = {"full": 0, "same": (min(m, n) - 1) // 2, "valid": min(m, n) - 1}[mode]
    full = _pad_last(g, start, m + n - 1 - start - size)
    # a[k] meets v[j] at output k + j: gather those windows of the cotangent
    windows = np.arange(m)[:, None] + np.arange(n)[None, :]

    def convolve_a():
        return np.matmul(full[..., windows], conj_if_complex(v))

    def convolve_v():
        return np.matmul(full[..., windows.T], conj_if_complex(a))

    return convolve_a, convolve_v


@rrule(np.convolve, batched=True)
def convolve_rule(a, v, mode="full"):
    ans = np.convolve(a, v, mode)

    def convolve_pullback(g):
        return (*_convolve_vjp(g, a, v, mode, len(ans)), None)

    return ans, convolve_pullback


@rrule(np.correlate, batched=True)
def correlate_rule(a, v, mode="valid"):
    # correlate(a, v) = convolve(a, conj(v[::-1]))
    ans = np.correlate(a, v, mode)

    def correlate_pullback(g):
        ct_a, ct_w = _convolve_vjp(g, a, conj_if_complex(np.flip(v)), mode, len(ans))

        def correlate_v():
            return conj_if_complex(np.flip(ct_w(), -1))

        return ct_a, correlate_v, None

    return ans, correlate_pullback


# ---------------------------------------------------------------------------- integration

@rrule_if_present(np, "trapezoid")
def trapezoid_rule(y, x=None, dx=1.0, axis=-1):
    ans = np.trapezoid(y, x, dx, axis)
    ndim = len(shape_of(y))
    ax = int(axis) % ndim - ndim
    if x is None:
        width = dx
    elif np.ndim(plain(x)) == 1:  # spacing along the axis, the same for every line
        width = np.reshape(np.diff(x), (-1,) + (1,) * (-ax - 1))
    else:
        width = np.diff(x, axis=ax)
    tail = (slice(None),) * (-ax - 1)
    spaced = shape_of(y)[:ndim + ax] + (shape_of(y)[ax] - 1,) + shape_of(y)[ndim + ax + 1:]

    def trapezoid_pullback(g):
        if shape_of(y)[ax] == 0:  # an empty axis: the value is the empty sum, 0
            return None, None, None, None
        # trapezoid = sum(width * (y[1:] + y[:-1]) / 2) along the axis
        ge = np.broadcast_to(np.expand_dims(g, ax), batch_shape(g, ndim - 1) + spaced)

        def trapezoid_y():
            ct_sum = ge * conj_if_complex(width) / 2  # of each sum of neighbours
            return _pad_axis(ct_sum, ax, 1, 0) + _pad_axis(ct_sum, ax, 0, 1)

        def trapezoid_width():
            values = as_array(y)
            sums = values[(Ellipsis, slice(1, None)) + tail] + values[(Ellipsis, slice(-1)) + tail]
            return ge * conj_if_complex(sums / 2)

        def trapezoid_x():
            # width = diff(x): its transpose is minus the difference of the padding
            ct = -np.diff(_pad_axis(trapezoid_width(), ax, 1, 1), axis=ax)
            if np.ndim(plain(x)) == 1:
                ct = np.sum(ct, axis=tuple(i for i in range(-ndim, 0) if i != ax))
            return ct

        if x is None:
            return trapezoid_y, None, trapezoid_width, None
        return trapezoid_y, trapezoid_x, None, None

    return ans, trapezoid_pullback



def _pad_axis(x, ax, before, after):
    widths = [(0, 0)] * len(shape_of(x))
    widths[ax] = (before, after)
    return np.pad(x, widths)


# ---------------------------------------------------------------------------- interpolation

NO_XP = not_implemented("the sample points xp")


@rrule(np.interp, batched=True)
def interp_rule(x, xp, fp, left=None, right=None, period=None):
    """Derivatives with respect to fp, x (the slope: at a knot, that of the interval to its
    right, at the last knot to its left; zero outside the knots), left and right. The knots
    xp are constants."""
    ans = np.interp(x, xp, fp, left, right, period)
    lo, hi, start, step, shift, below, above = _interp_knots(x, xp, period)
    n = len(plain(xp))
    # where left/right replace the value, neither fp nor x matters
    fill = (below & (left is not None)) | (above & (right is not None))
    between = ~(below | above) & (step > 0)  # elsewhere the value is fp[lo] or fp[hi]
    values = as_array(fp)

    def interp_pullback(g):
        batch = batch_shape(g, np.ndim(plain(x)))
        flat = np.reshape(g, batch + (lo.size,)) * ~fill
        zero = zero_of(g)

        def interp_fp():
            # out = (1 - w) fp[lo] + w fp[hi], w = (x - xp[lo]) / step between the knots
            w = np.where(between, (np.ravel(x) - shift - start) / np.where(between, step, 1),
                         np.where(below, 0.0, 1.0))
            parts = np.concatenate([flat * (1 - w), flat * w], axis=-1)
            back = index_add(np.moveaxis(parts, -1, 0), (np.concatenate([lo, hi]),),
                             (n,) + batch)
            return np.moveaxis(back, 0, -1)

        def interp_x():
            slope = (values[hi] - values[lo]) / np.where(between, step, np.inf)
            return np.reshape(flat * conj_if_complex(slope), shape_of(g))

        def interp_left():
            return np.where(np.reshape(below, shape_of(x)), g, zero)

        def interp_right():
            return np.where(np.reshape(above, shape_of(x)), g, zero)

        return (interp_x, NO_XP, interp_fp, None if left is None else interp_left,
                None if right is None else interp_right, None)

    return ans, interp_pullback


def _interp_knots(x, xp, period):
    """For each entry of x (flattened): the knots it lies between (``lo``, ``hi``, as
    positions in fp), the first one's place and the spacing, the shift NumPy subtracts from
    x (a multiple of the period), and whether it lies below or above the knots."""
    xq, knots = np.ravel(plain(x)).astype(float), np.asarray(plain(xp), dtype=float)
    order, shift = np.arange(len(knots)), 0.0
    if period is not None:  # NumPy reduces both modulo the period and wraps the knots
        p = abs(period)
        shift = xq - xq % p
        xq, knots = xq - shift, knots % p
        order = np.argsort(knots)
        knots = np.concatenate([knots[order][-1:] - p, knots[order], knots[order][:1] + p])
        order = np.concatenate([order[-1:], order, order[:1]])
    last = len(knots) - 1
    j = np.clip(np.searchsorted(knots, xq, side="right") - 1, 0, max(last - 1, 0))
    k = np.minimum(j + 1, last)
    below, above = xq < knots[0], xq > knots[-1]
    return order[j], order[k], knots[j], knots[k] - knots[j], shift, below, above


# ---------------------------------------------------------------------------- polynomials

@rrule(np.polyval, batched=True)
def polyval_rule(p, x):
    ans = np.polyval(p, x)
    n = shape_of(plain(p))[0]  # (len of an np.poly1d is its order)

    def polyval_pullback(g):
        def polyval_p():
            # d/dp[k] = x ** (n - 1 - k): the rows of a Vandermonde matrix
            powers = np.vander(np.ravel(x), n)
            flat = np.reshape(g, batch_shape(g, np.ndim(plain(x))) + (-1,))
            return np.matmul(flat, conj_if_complex(powers))

        def polyval_x():
            derivative = as_array(p)[:-1] * on_backend(np.arange(n - 1, 0, -1), g)
            return g * conj_if_complex(np.polyval(derivative, x))

        return polyval_p, polyval_x if n > 1 else None

    return ans, polyval_pullback
