"""Decompositions. Eigenvectors and singular vectors have arbitrary phases (signs), so
their rows check gauge-invariant functions of them: |v|^2 elementwise."""

import numpy as np
import pytest

import pullback as pb

from .spec import NUMPY2, Spec
from .test_linalg import spd


def hpd(rng, shape):
    """Hermitian positive definite matrices."""
    m = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return m @ np.conj(np.swapaxes(m, -1, -2)) + shape[-1] * np.eye(shape[-1])


def sym(rng, shape):
    """Symmetric indefinite matrices with well-separated eigenvalues."""
    m = rng.standard_normal(shape)
    return m + np.swapaxes(m, -1, -2) + np.diag(np.arange(shape[-1]) * 1.5 - 1.6)


def _eigh(a, **kw):
    w, v = np.linalg.eigh(a, **kw)
    return w, np.abs(v) ** 2


def _eig(a):
    w, v = np.linalg.eig(a)
    return w, np.abs(v) ** 2


def _svd(a, **kw):
    u, s, vh = np.linalg.svd(a, **kw)
    k = s.shape[-1]
    # a full u or vh: the columns (rows) past k span a complement that only moves as a
    # whole, so they are checked through their squared norm along each row (column)
    return (np.abs(u[..., :k]) ** 2, s, np.abs(vh[..., :k, :]) ** 2,
            np.sum(np.abs(u[..., k:]) ** 2, axis=-1), np.sum(np.abs(vh[..., k:, :]) ** 2, -2))


SQUARE = [(3, 3), (2, 3, 3)]
UPPER = {"upper": [False, True]} if NUMPY2 else {}  # cholesky's upper= came in NumPy 2
RECT = [(3, 3), (4, 3), (3, 4), (2, 4, 3)]

SPECS = [
    Spec(np.linalg.cholesky, SQUARE, domain=spd, kwargs=UPPER),
    Spec(np.linalg.cholesky, [(3, 3)], domain=hpd, kwargs=UPPER, name="cholesky(complex)"),
    Spec(np.linalg.qr, RECT, kwargs={"mode": ["reduced", "r"]}),
    Spec(np.linalg.qr, [(3, 3), (3, 4)], kwargs={"mode": ["complete"]},
         name="qr(complete)"),
    Spec(np.linalg.qr, [(4, 3), (3, 4)], domain="complex", name="qr(complex)"),
    Spec(np.linalg.eigh, SQUARE, domain=sym, kwargs={"UPLO": ["L", "U"]}, call=_eigh),
    Spec(np.linalg.eigh, [(3, 3)], domain=hpd, kwargs={"UPLO": ["L", "U"]}, call=_eigh,
         name="eigh(complex)"),
    Spec(np.linalg.eigvalsh, SQUARE, domain=sym, kwargs={"UPLO": ["L", "U"]}),
    Spec(np.linalg.eigvalsh, [(3, 3)], domain=hpd, name="eigvalsh(complex)"),
    Spec(np.linalg.eig, SQUARE, call=_eig),
    Spec(np.linalg.eig, [(3, 3)], domain="complex", call=_eig, name="eig(complex)"),
    Spec(np.linalg.eig, [(3, 3)], domain=sym, call=_eig, name="eig(real eigenvalues)"),
    Spec(np.linalg.eigvals, SQUARE),
    Spec(np.linalg.eigvals, [(3, 3)], domain="complex", name="eigvals(complex)"),
    Spec(np.linalg.svd, RECT + [(5, 3)], kwargs={"full_matrices": [False, True]}, call=_svd),
    Spec(np.linalg.svd, [(4, 3), (3, 4)], domain="complex", kwargs={"full_matrices": [False]},
         call=_svd, name="svd(complex)"),
    Spec(np.linalg.svd, RECT, kwargs={"compute_uv": [False]}, name="svd(compute_uv=False)"),
    Spec(np.linalg.svd, [(3, 3)], domain=sym, kwargs={"hermitian": [True]}, call=_svd,
         name="svd(hermitian)"),
    Spec(np.linalg.svd, [(3, 3)], domain=hpd, kwargs={"hermitian": [True]}, call=_svd,
         name="svd(hermitian, complex)"),
    Spec(getattr(np.linalg, "svdvals", None), RECT),
    Spec(getattr(np.linalg, "svdvals", None), [(3, 4)], domain="complex", name="svdvals(complex)"),
]



@pytest.mark.parametrize("mode", ["complete", "raw"])
def test_qr_modes_without_a_derivative_raise(mode):
    with pytest.raises(pb.NoRuleError):
        pb.grad(lambda a: np.sum(np.linalg.qr(a, mode=mode)[0]))(np.ones((4, 3)))



def test_value_only_losses_at_repeated_eigenvalues_are_finite():
    # the eigenvector terms (1 / gaps) are skipped when only the values are used
    # (first order: second derivatives of eigenvalues at repeated ones do not exist)
    eye = np.eye(3)
    pb.check_grads(lambda a: np.sum(np.linalg.eigh(a)[0] ** 2), eye, order=1)
    pb.check_grads(lambda a: np.sum(np.linalg.svd(a)[1]), eye, order=1)
    pb.check_grads(lambda a: np.sum(np.linalg.eig(a)[0]), eye, order=1)
