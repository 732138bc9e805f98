"""scipy.sparse matrices and arrays as constant operators, called as users call them: a
table over every format and both classes (spmatrix, sparray) by every product form, and
the solvers of scipy.sparse.linalg with a tracked right-hand side, each checked against
central finite differences of the same call on plain arrays, to second order."""

import warnings

import numpy as np
import pytest

import pullback as pb

from ..spec import Spec

sp = pytest.importorskip("scipy.sparse")
spl = pytest.importorskip("scipy.sparse.linalg")
rules = pytest.importorskip("pullback.rules.scipy.sparse")

FORMATS = ("csr", "csc", "coo", "dia", "lil", "bsr", "dok")
CLASSES = ("matrix", "array")

# a 4 x 3 operator with a zero row and a zero column, and a square one for the solvers
DENSE = np.array([[1.5, 0.0, -2.0], [0.0, 0.0, 0.0], [0.5, 3.0, 0.0], [0.0, 0.0, 1.0]])
SQUARE = (sp.diags([-1.0, 3.0, -1.5], [-1, 0, 1], shape=(5, 5))
          + sp.csr_array(([0.7, -0.4], ([0, 4], [3, 1])), shape=(5, 5))).tocsr()
SQUARE.sum_duplicates()  # (spsolve sorts a matrix's indices in place: pb.jit would see that)
LAPLACIAN = sp.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(5, 5), format="csr")  # symmetric
TIGHT = {"rtol": 1e-13, "atol": 1e-14}


def build(fmt, cls, dense=DENSE):
    return getattr(sp, f"{fmt}_{cls}")(dense)


def reached(A, name):
    """The registered method a product with ``A`` ends in (the class's own, or inherited)."""
    return rules.PRODUCTS[next(c for c in type(A).__mro__ if name in vars(c)), name]


def _product_rows():
    rows = []
    for fmt in FORMATS:
        for cls in CLASSES:
            A = build(fmt, cls)
            vec, mat = reached(A, "_matmul_vector"), reached(A, "_matmul_multivector")
            vec_t = reached(A.T, "_matmul_vector")
            blocks = getattr(sp, f"bsr_{cls}")(DENSE, blocksize=(2, 3))
            for func, shape, name, call in [
                (vec, (3,), "A @ x", lambda x, A=A: A @ x),
                (vec, (3,), "A.dot(x)", lambda x, A=A: A.dot(x)),
                (vec, (3, 1), "A @ column", lambda x, A=A: A @ x),
                (vec_t, (4,), "x @ A", lambda x, A=A: x @ A),
                (vec_t, (4,), "A.T @ y", lambda y, A=A: A.T @ y),
                (mat, (3, 2), "A @ X", lambda X, A=A: A @ X),
                *([(vec, (3,), "A @ x, 2 x 3 blocks", lambda x, B=blocks: B @ x)]
                  if fmt == "bsr" else []),
                (reached(A.T, "_matmul_multivector"), (2, 4), "X @ A", lambda X, A=A: X @ A),
            ] + ([  # an spmatrix's * is its product
                (vec, (3,), "A * x", lambda x, A=A: A * x),
                (vec_t, (4,), "x * A", lambda x, A=A: x * A),
            ] if cls == "matrix" else []):
                rows.append(Spec(func, [shape], call=call, name=f"{fmt}_{cls}: {name}"))
    return rows


def _complex_call(x):
    A = sp.csr_array(DENSE + 1j * np.roll(DENSE, 1, axis=1))
    return A @ x


def _linear_operator_rows():
    A = build("csr", "array")
    vec = reached(A, "_matmul_vector")
    L = spl.aslinearoperator(A)
    return [
        Spec(vec, [(3,)], call=lambda x: L @ x, name="aslinearoperator(A) @ x"),
        Spec(vec, [(3,)], call=lambda x: L.matvec(x), name="aslinearoperator(A).matvec(x)"),
        Spec(vec, [(3,)], call=lambda x: L.dot(x), name="aslinearoperator(A).dot(x)"),
        Spec(vec, [(4,)], call=lambda y: y @ L, name="y @ aslinearoperator(A)"),
        Spec(vec, [(4,)], call=lambda y: y * L, name="y * aslinearoperator(A) (a product)"),
        Spec(reached(A.T, "_matmul_vector"), [(4,)], call=lambda y: L.rmatvec(y),
             name="aslinearoperator(A).rmatvec(y)"),
        Spec(vec, [(3,)], domain="complex", call=_complex_call, name="complex A @ complex x"),
        Spec(reached(sp.coo_array(DENSE[0]), "_matmul_vector"), [(3,)],
             call=lambda x: sp.coo_array(DENSE[0]) @ x, name="1-d coo_array @ x (a scalar)"),
    ]


def _solver_rows():
    csc = SQUARE.tocsc()
    complex_csc = (csc + 1j * sp.random(5, 5, density=0.4, random_state=3)).tocsc()
    solve = rules.superlu_solve  # (a factorization made while differentiating)
    rows = [
        Spec(rules.spsolve, [(5,), (5, 2), (5, 1)], call=lambda b: spl.spsolve(SQUARE, b),
             name="spsolve(A, b)"),
        Spec(rules.spsolve, [(5,)], call=lambda b: spl.spsolve(csc, b),
             name="spsolve(A csc, b)"),
        Spec(solve, [(5,), (5, 3)], call=lambda b: spl.splu(csc).solve(b),
             name="splu(A).solve(b)"),
        Spec(solve, [(5,)], kwargs={"trans": ["N", "T", "H"]},
             call=lambda b, trans: spl.splu(csc).solve(b, trans), name="splu(A).solve(b, trans)"),
        Spec(solve, [(5,)], domain="complex", kwargs={"trans": ["N", "T", "H"]},
             call=lambda b, trans: spl.splu(complex_csc).solve(b, trans),
             name="splu(complex A).solve(complex b, trans)"),
        Spec(solve, [(5,)], call=lambda b: spl.factorized(csc)(b), name="factorized(A)(b)"),
        Spec(solve, [(5,)], call=lambda b: spl.spilu(csc, drop_tol=0.0).solve(b),
             name="spilu(A).solve(b)"),
        Spec(rules.cg, [(5,)], call=lambda b: spl.cg(LAPLACIAN, b, **TIGHT)[0], rtol=1e-5,
             name="cg(A, b)"),
        Spec(rules.cg, [(5,)], call=lambda b: spl.cg(spl.aslinearoperator(LAPLACIAN), b,
                                                   M=sp.diags(1 / LAPLACIAN.diagonal()),
                                                   **TIGHT)[0],
             rtol=1e-5, name="cg(LinearOperator, b, M=Jacobi)"),
        Spec(rules.minres, [(5,)], call=lambda b: spl.minres(LAPLACIAN, b, rtol=1e-14)[0],
             rtol=1e-5, name="minres(A, b)"),
        Spec(rules.gmres, [(5,)], call=lambda b: spl.gmres(SQUARE, b, **TIGHT)[0], rtol=1e-5,
             name="gmres(A, b)"),
        Spec(rules.gmres, [(5,)], call=lambda b: spl.gmres(SQUARE, b, M=sp.diags(
            1 / SQUARE.diagonal()), **TIGHT)[0], rtol=1e-5, name="gmres(A, b, M=Jacobi)"),
        Spec(rules.expm_multiply, [(5,), (5, 2)], call=lambda b: spl.expm_multiply(-SQUARE, b),
             name="expm_multiply(A, b)"),
        Spec(rules.expm_multiply, [(5,)], call=lambda b: spl.expm_multiply(
            -SQUARE, b, start=0.0, stop=1.0, num=3), name="expm_multiply(A, b) on times"),
        Spec(rules.expm_multiply, [(5,)], call=lambda b: spl.expm_multiply(
            -SQUARE.toarray(), b, start=0.5, stop=1.0, num=2, endpoint=False),
             name="expm_multiply(dense A, b) on times, no endpoint"),
    ]
    return rows


SPECS = _product_rows() + _linear_operator_rows() + _solver_rows()


def test_the_table_covers_every_format_and_class():
    names = {s.name.split(":")[0] for s in SPECS}
    assert {f"{f}_{c}" for f in FORMATS for c in CLASSES} <= names


@pytest.mark.parametrize("fmt", FORMATS)
def test_jit_of_grad_matches_eager(fmt):
    A = build(fmt, "array")

    def f(x, X):
        return np.sum(np.tanh(A @ x) ** 2) + np.sum((x @ A.T) * (A @ X)[:, 0])

    x, X = np.linspace(-1.0, 1.0, 3), np.linspace(0.5, 2.0, 6).reshape(3, 2)
    jitted = pb.jit(pb.grad(f))
    for shift in (0.0, 0.3):  # a trace, then a replay
        np.testing.assert_allclose(jitted(x + shift, X), pb.grad(f)(x + shift, X),
                                   rtol=1e-13, atol=1e-14)


def test_jit_of_grad_through_solvers_matches_eager():
    def f(b):
        lu = spl.splu(SQUARE.tocsc())  # (a factorization made while differentiating)
        return (np.sum(spl.spsolve(SQUARE, b) ** 2) + np.sum(np.sin(lu.solve(b)))
                + np.sum(spl.cg(LAPLACIAN, b, **TIGHT)[0] ** 3)
                + np.sum(spl.expm_multiply(-SQUARE, b)))

    b = np.linspace(-1.0, 1.0, 5)
    jitted = pb.jit(pb.grad(f))
    for shift in (0.0, 0.2):
        np.testing.assert_allclose(jitted(b + shift), pb.grad(f)(b + shift), rtol=1e-10)


def test_a_graph_laplacian_energy_to_second_order():
    # the Dirichlet energy of a path graph, as written with a sparse Laplacian
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4]])
    W = sp.coo_array((np.ones(4), (edges[:, 0], edges[:, 1])), shape=(5, 5))
    W = W + W.T
    Lap = sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W

    def energy(u):
        return u @ (Lap @ u) + np.sum(np.cos(u))

    u = np.linspace(0.0, 1.0, 5)
    pb.check_grads(energy, u, order=2)
    np.testing.assert_allclose(pb.hessian(energy)(u),
                               2 * Lap.toarray() - np.diag(np.cos(u)), rtol=1e-12)


def test_a_sparse_matrix_from_tracked_nonzeros_is_refused_naming_the_alternatives():
    i, j = np.array([0, 1, 2]), np.array([1, 2, 0])
    x = np.array([1.0, 2.0, 3.0])
    for build_it in (lambda d: sp.csr_matrix((d, (i, j)), shape=(3, 3)),
                     lambda d: sp.coo_array((d, (i, j)), shape=(3, 3)),
                     lambda d: sp.csr_array(np.diag(d))):
        with pytest.raises(TypeError, match=r"scipy.sparse matrix or array built from a "
                                            r"tracked value.*np.bincount.*pb.index_add"):
            pb.grad(lambda d, build_it=build_it: np.sum(build_it(d) @ x))(np.ones(3))

    # the two alternatives the message names give the gradient of the sparse product
    def by_bincount(d):
        return np.sum(np.sin(np.bincount(i, weights=d * x[j], minlength=3)))

    def by_index_add(d):
        return np.sum(np.sin(pb.index_add(d, (i, j), (3, 3)) @ x))

    def plain(d):
        return np.sum(np.sin(sp.csr_matrix((d, (i, j)), shape=(3, 3)) @ x))

    d = np.array([0.5, -1.0, 2.0])
    for f in (by_bincount, by_index_add):
        assert f(d) == pytest.approx(plain(d))
        pb.check_grads(f, d, order=2)


def test_expm_multiply_of_a_linear_operator():
    # not a table row: SciPy's norm estimate for a LinearOperator draws random vectors,
    # which pb.jit refuses to replay
    def f(b):
        return np.sum(np.sin(spl.expm_multiply(spl.aslinearoperator(-SQUARE), b,
                                               traceA=-SQUARE.trace())))

    pb.check_grads(f, np.linspace(-1.0, 1.0, 5), order=2)


def test_the_matrix_gets_no_gradient_and_says_so():
    with pytest.raises(NotImplementedError, match="dense matrix A"):
        pb.grad(lambda A: np.sum(spl.expm_multiply(A, np.ones(5))))(-np.eye(5))


def test_splu_keeps_scipys_factorization():
    keep = pb.param(np.zeros(1))  # while differentiating: pullback's factorization
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lu = spl.splu(SQUARE.tocsc())
    del keep
    assert isinstance(lu, rules.SuperLU)
    assert lu.shape == (5, 5) and lu.L.shape == (5, 5) and lu.perm_r.shape == (5,)
    b = np.arange(5.0)
    np.testing.assert_allclose(SQUARE @ lu.solve(b), b, rtol=1e-12)
    assert "SuperLU" in repr(lu)


def test_an_operand_numpy_defers_to_gets_the_operator():
    class Operator:  # as scipy's LinearOperator: NumPy leaves @ to it
        __array_ufunc__ = None

        def __rmatmul__(self, x):
            return "rmatmul", x

    class Prioritized:  # as scipy.sparse: a higher priority and no __array_ufunc__
        __array_priority__ = 10.1

        def __rmul__(self, x):
            return "rmul", x

        def __radd__(self, x):  # as scipy.sparse's, for a NumPy array only
            return NotImplemented if isinstance(x, pb.Tracked) else x + 3.0

    assert np.ones(2).__matmul__(Operator()) is NotImplemented  # NumPy's own behaviour
    assert np.ones(2).__mul__(Prioritized()) is NotImplemented

    def f(x):
        assert x @ Operator() == ("rmatmul", x) and x * Prioritized() == ("rmul", x)
        return np.sum(x + Prioritized())  # declined: computed as with any other operand

    np.testing.assert_array_equal(pb.grad(f)(np.ones(2)), np.ones(2))


def test_jit_of_hessian_matches_eager():
    def f(b):
        lu = spl.splu(SQUARE.tocsc())
        return np.sum(np.sin(SQUARE @ b) * lu.solve(b)) + np.sum(spl.spsolve(SQUARE, b) ** 3)

    jitted = pb.jit(pb.hessian(f))
    for b in (np.linspace(-1.0, 1.0, 5), np.linspace(0.0, 2.0, 5)):
        np.testing.assert_allclose(jitted(b), pb.hessian(f)(b), rtol=1e-12, atol=1e-13)


def test_gmres_of_an_operator_without_an_adjoint_says_what_to_give():
    M = np.array([[3.0, 1.0], [0.5, 2.0]])
    with_adjoint = spl.LinearOperator((2, 2), matvec=lambda v: M @ v, rmatvec=lambda v: M.T @ v)
    pb.check_grads(lambda b: spl.gmres(with_adjoint, b, **TIGHT)[0], np.ones(2), order=2,
                   rtol=1e-5)
    without = spl.LinearOperator((2, 2), matvec=lambda v: M @ v)
    with pytest.raises(pb.NoRuleError, match=r"gmres\(A, b\) in b solves with A's adjoint.*"
                                             r"rmatvec=\.\.\."):
        pb.grad(lambda b: np.sum(spl.gmres(without, b, **TIGHT)[0]))(np.ones(2))
