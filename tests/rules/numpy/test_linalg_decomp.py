"""Decompositions. Eigenvectors and singular vectors have arbitrary phases (signs), so
their rows check gauge-invariant functions of them: |v|^2 elementwise."""

import numpy as np
import pytest

import pullback as pb

from ..spec import NUMPY2, Spec, check_unreached
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


def _vectors(decompose, k=0):
    """A loss of vector ``k`` of ``decompose`` that depends on which one it is (not on its
    sign): its squared entries, weighted."""
    def loss(a):
        v = decompose(a)
        return np.sum(np.abs(v[..., :, k]) ** 2 * np.arange(1.0, v.shape[-2] + 1))
    return loss


_EIGH_V = _vectors(lambda a: np.linalg.eigh(a)[1])
_EIG_V = _vectors(lambda a: np.linalg.eig(a)[1])
_SVD_U = _vectors(lambda a: np.linalg.svd(a)[0])
_SVD_VH = _vectors(lambda a: np.swapaxes(np.linalg.svd(a)[2], -1, -2).conj())


@pytest.mark.parametrize("loss, a", [
    (_EIGH_V, np.eye(2)), (_EIGH_V, np.diag([1.0, 2.0, 1.0])),
    (_EIGH_V, np.eye(2, dtype=complex)), (_EIG_V, np.eye(2)), (_SVD_U, np.eye(2)),
    (_SVD_VH, np.diag([2.0, -2.0])), (_SVD_U, np.zeros((2, 2))),
    # invariant within the eigenspace, but not told apart from the losses above
    (lambda a: np.sum((lambda w, v: (v * w) @ v.T)(*np.linalg.eigh(a)) ** 2), np.eye(2)),
    (lambda a: np.sum((lambda u, s, vh: (u * s) @ vh)(*np.linalg.svd(a)) ** 2), np.eye(2)),
    (lambda a: np.sum(np.linalg.svd(a, hermitian=True)[0][:, 0] ** 2 * np.arange(1.0, 3.0)),
     np.diag([1.0, -1.0])),
], ids=["eigh", "eigh-3", "eigh-complex", "eig", "svd-u", "svd-vh", "svd-zeros",
        "eigh-reconstruction", "svd-reconstruction", "svd-hermitian"])
def test_vectors_at_repeated_values_raise(loss, a):
    # the vectors of a repeated eigenvalue (singular value) are any basis of its space: a
    # loss that uses them has no derivative there (the finite differences of a loss of the
    # vectors themselves are arbitrary), and raises instead of NaN
    with pytest.raises(pb.NoRuleError, match="are repeated"):
        pb.grad(loss)(a)
    loss(a + 1e-3 * np.diag(np.arange(len(a))))  # (apart, the values are fine)


def _top_eigenvector(a):
    # eig's order is LAPACK's: the vector of the largest eigenvalue, wherever it is
    w, v = np.linalg.eig(a)
    return v[..., :, np.argmax(w.real)]


_ROTATION = np.linalg.qr(np.array([[1.0, 0.3, -0.2], [0.4, 1.0, 0.1], [0.2, -0.5, 1.0]]))[0]
_REPEATED = _ROTATION @ np.diag([1.0, 1.0, 3.0]) @ _ROTATION.T  # 1 twice, to rounding


@pytest.mark.parametrize("loss, a", [
    (_vectors(lambda a: np.linalg.eigh(a)[1], k=2), _REPEATED),
    (lambda a: np.sum(np.abs(_top_eigenvector(a)) ** 2 * np.arange(1.0, 4.0)), _REPEATED),
    (_vectors(lambda a: np.linalg.svd(a)[0], k=0), _REPEATED * [[1.0], [-1.0], [1.0]]),
    (lambda a: np.sum(np.linalg.eigh(a)[0] ** 3), _REPEATED),
], ids=["eigh", "eig", "svd", "values"])
def test_vectors_of_distinct_values_next_to_repeated_ones_have_their_gradient(loss, a):
    # the repeated values' vectors are not used: their terms are skipped, and the gradient
    # is the finite differences' (the first order of check_grads)
    assert np.any(np.abs(np.diff(np.linalg.svd(a, compute_uv=False))) < 1e-12)
    pb.check_grads(loss, a, order=1)


def test_singular_vectors_of_a_zero_singular_value_on_the_longer_side_raise():
    # a rank-deficient tall matrix: u's column of the zero singular value is any unit vector
    # orthogonal to the others; a loss of the singular values alone keeps its gradient
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    with pytest.raises(pb.NoRuleError, match="singular value is 0"):
        pb.grad(_vectors(lambda a: np.linalg.svd(a, full_matrices=False)[0], k=1))(a)
    pb.check_grads(lambda a: np.linalg.svd(a, compute_uv=False)[0], a, order=1)
    # its u of the nonzero singular value is determined: no error, finite differences
    pb.check_grads(_vectors(lambda a: np.linalg.svd(a, full_matrices=False)[0]), a, order=1)


def test_eigvals_of_a_defective_matrix_raise_a_clear_error():
    # a nilpotent shift: LAPACK's eigenvectors are exactly dependent, not to rounding
    a = np.eye(3, k=1)
    assert np.linalg.matrix_rank(np.linalg.eig(a)[1]) < 3
    with pytest.raises(pb.NoRuleError, match="defective"):
        pb.grad(lambda a: np.sum(np.linalg.eigvals(a).real ** 2))(a)


@pytest.mark.parametrize("f", [
    np.linalg.cholesky, lambda a: np.linalg.eigvalsh(a), lambda a: np.linalg.eigh(a)[0],
    lambda a: np.linalg.eigvalsh(a, UPLO="U"),
] + ([lambda a: np.linalg.cholesky(a, upper=True)] if NUMPY2 else []),
    ids=["cholesky", "eigvalsh", "eigh", "eigvalsh-upper"]
    + (["cholesky-upper"] if NUMPY2 else []))
def test_an_infinite_cotangent_reaches_only_the_triangle_read(f):
    # these read one triangle of a: the other gets exactly 0, even from an inf or NaN
    # cotangent (within the triangle read, the triangular factors' zeros still meet it in
    # products, where inf * 0 is NaN: it is not checked there)
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, -0.2], [0.5, -0.2, 2.0]])
    with np.errstate(invalid="ignore"):
        assert check_unreached(f, a, whole=True) > 0
