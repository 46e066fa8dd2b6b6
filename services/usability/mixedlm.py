"""statsmodels' MixedLM on sparse variance-component designs (the usability analysis's linear
mixed model): fast_mixedlm() swaps statsmodels' Woodbury kernels for ones that keep the sparse
designs sparse and factor a dense Cholesky (same algebra; dense designs use statsmodels' own),
with BLAS single-threaded, and puts them back afterwards."""

from __future__ import annotations

import contextlib
import threading
import weakref

import numpy as np
from scipy import linalg, sparse

_PATCH_LOCK = threading.RLock()

# A' and A'M for the model's fixed sparse matrices (the random-effects design A, each variance
# component's design M), computed once per fit instead of at every likelihood evaluation. Keyed
# by id (sparse arrays are unhashable) with a weak reference that confirms the object and
# drops the entry when it is freed.
_PRODUCTS: dict[tuple, tuple] = {}
_PRODUCTS_LOCK = threading.Lock()


def _memo(key_objs: tuple, compute):
    key = tuple(id(o) for o in key_objs)
    with _PRODUCTS_LOCK:
        hit = _PRODUCTS.get(key)
    if hit is not None and all(r() is o for r, o in zip(hit[0], key_objs)):
        return hit[1]
    value = compute()
    refs = tuple(weakref.ref(o) for o in key_objs)
    with _PRODUCTS_LOCK:
        _PRODUCTS[key] = (refs, value)
    for o in key_objs:
        weakref.finalize(o, _PRODUCTS.pop, key, None)
    return value


def _transpose(A):
    return _memo((A,), lambda: A.T.tocsr())


def _projected(at, rhs) -> np.ndarray:
    """at @ rhs as a dense array; memoised for a sparse rhs (the design matrices, which do
    not change during a fit)."""
    if not sparse.issparse(rhs):
        return np.asarray(at @ rhs)
    return _memo((at, rhs), lambda: (at @ rhs).toarray())


def _sparse_smw_solver(original):
    def solver_factory(s, A, AtA, Qi, di):
        if not sparse.issparse(A):
            return original(s, A, AtA, Qi, di)
        q = AtA.toarray() if sparse.issparse(AtA) else np.array(AtA, dtype=float)
        q = q / s
        m = Qi.shape[0]
        q[0:m, 0:m] += Qi
        dim = q.shape[0]
        q.flat[m * (dim + 1) :: dim + 1] += di
        chol = linalg.cho_factor(q, lower=True, check_finite=False)
        at = _transpose(A)

        def solver(rhs):
            atr = _projected(at, rhs)
            out = A @ linalg.cho_solve(chol, atr, check_finite=False)
            out *= -1.0 / s**2
            if sparse.issparse(rhs):  # add rhs / s in place: no dense copy of rhs
                c = rhs.tocoo()
                np.add.at(out, (c.row, c.col), c.data / s)
            else:
                out += rhs / s
            return out

        return solver

    return solver_factory


def _sparse_smw_logdet(original):
    def logdet(s, A, AtA, Qi, di, B_logdet):
        if not sparse.issparse(AtA):
            return original(s, A, AtA, Qi, di, B_logdet)
        # statsmodels' dense branch uses A only for its row count
        return original(s, np.empty((A.shape[0], 0)), AtA.toarray(), Qi, di, B_logdet)

    return logdet


@contextlib.contextmanager
def fast_mixedlm():
    """While active, statsmodels' MixedLM Woodbury kernels work on sparse variance-component
    designs with a dense Cholesky factor (same algebra; dense designs use statsmodels' own),
    and BLAS runs single-threaded."""
    # lazy import (statsmodels, threadpoolctl): heavy; needed only when a model is fitted
    import statsmodels.regression.mixed_linear_model as mlm
    from threadpoolctl import threadpool_limits

    with _PATCH_LOCK, threadpool_limits(limits=1, user_api="blas"):
        solver, logdet = mlm._smw_solver, mlm._smw_logdet
        mlm._smw_solver, mlm._smw_logdet = _sparse_smw_solver(solver), _sparse_smw_logdet(logdet)
        try:
            yield
        finally:
            mlm._smw_solver, mlm._smw_logdet = solver, logdet
