"""Compressed sparse columns (CSC) of a `SparsityPattern`, as SuperLU and KLU read them.

A pattern keeps its entries row-major, so pattern-order values are the matrix's CSR data.
`csc_layout` (cached per pattern) says where each entry goes in CSC order, once: the host
factorizations gather their data with it (`CSCLayout.data`, `CSCLayout.matrix`), and
`CSCLayout.operator` gives the product and infinity norm that check a host solve from the
same data (A's CSC arrays are A^T's CSR arrays), with no SciPy conversion.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ._scipy import sparse as sp
from ._sparsity import SparsityPattern


class CSCLayout:
    """The CSC structure of one pattern: pattern-order ``values`` have CSC data
    ``values[..., order]`` with row ``indices`` and column pointers ``indptr`` (int32, as
    KLU and SciPy take them)."""

    def __init__(self, pattern: SparsityPattern):
        m, n = pattern.shape
        self.shape = (m, n)
        self.order = np.lexsort((pattern.rows, pattern.cols))
        self.indices = pattern.rows[self.order].astype(np.int32)
        self.indptr = _pointers(pattern.cols, n)
        #: The row of each CSC entry in A and in A^T (its column in A), as bincount takes them.
        self._rows = (self.indices.astype(np.intp), pattern.cols[self.order].astype(np.intp))

    def data(self, values: np.ndarray) -> np.ndarray:
        """The CSC data of pattern-order ``values`` (along the last axis; a new array)."""
        return np.take(values, self.order, axis=-1)

    def matrix(self, data: np.ndarray) -> sp.csc_matrix:
        """The SciPy matrix of CSC ``data``."""
        return sp.csc_matrix((data, self.indices, self.indptr), shape=self.shape)

    def operator(self, data: np.ndarray, transpose: bool = False
                 ) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        """``(v -> A v, ||A||_inf)`` of the matrix of CSC ``data`` (of ``A^T`` with
        ``transpose``). A 1-D ``data`` of its own (not a view) is not copied."""
        if transpose:  # A's CSC arrays are A^T's CSR arrays
            matrix = sp.csr_matrix((data, self.indices, self.indptr), shape=self.shape[::-1])
        else:
            matrix = self.matrix(data)
        sums = np.bincount(self._rows[int(transpose)], np.abs(data), minlength=matrix.shape[0])
        return matrix.dot, float(sums.max(initial=0.0))


def _pointers(index: np.ndarray, size: int) -> np.ndarray:
    """Pointers (int32) to where each value below ``size`` starts in ``index`` sorted."""
    counts = np.bincount(index, minlength=size)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)


@functools.lru_cache(maxsize=32)
def csc_layout(pattern: SparsityPattern) -> CSCLayout:
    """The `CSCLayout` of ``pattern`` (cached)."""
    return CSCLayout(pattern)
