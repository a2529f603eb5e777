"""`CSCLayout`: the CSC data, matrix, products and norms of pattern-order values."""

import numpy as np
import pytest
import scipy.sparse as sp

from solvers.linear._csc import csc_layout
from solvers.linear._sparsity import SparsityPattern


def _case(seed, m, n, density):
    """A pattern with empty rows and columns, its values and SciPy's matrix of them."""
    rng = np.random.default_rng(seed)
    coo = sp.random(m, n, density=density, random_state=seed, format="coo")
    pattern = SparsityPattern(coo.row, coo.col, (m, n))
    values = rng.normal(size=pattern.nnz)
    return pattern, values, sp.csc_matrix((values, (pattern.rows, pattern.cols)), shape=(m, n))


@pytest.mark.parametrize("seed, m, n, density", [(0, 30, 30, 0.1), (1, 7, 12, 0.2),
                                                 (2, 40, 40, 0.01), (3, 5, 5, 0.0)])
def test_layout_equals_scipy(seed, m, n, density):
    pattern, values, expected = _case(seed, m, n, density)
    layout = csc_layout(pattern)
    assert csc_layout(pattern) is layout  # cached per pattern
    assert layout.indices.dtype == layout.indptr.dtype == np.int32
    matrix = layout.matrix(layout.data(values))
    np.testing.assert_array_equal(matrix.indptr, expected.indptr)
    np.testing.assert_array_equal(matrix.indices, expected.indices)
    np.testing.assert_array_equal(matrix.data, expected.data)
    batch = np.stack([values, 2 * values])  # data gathers along the last axis
    np.testing.assert_array_equal(layout.data(batch)[1], 2 * expected.data)
    x = np.random.default_rng(seed).normal(size=max(m, n))
    for transpose, a in ((False, expected), (True, expected.T)):
        matvec, norm = layout.operator(layout.data(values), transpose)
        np.testing.assert_allclose(matvec(x[:a.shape[1]]), a @ x[:a.shape[1]],
                                   rtol=1e-14, atol=1e-14)
        assert norm == pytest.approx(np.abs(a.toarray()).sum(axis=1).max(initial=0.0),
                                     rel=1e-14)
