"""Linear algebra: the ``tk.linalg`` namespace (factorizations, solvers, norms, products).

Each factorization (and inv, det, solve, pinv, ...) is one op whose forward calls
``xp.linalg`` (NumPy or CuPy) and whose gradient rule is written with tensorkit ops, so
gradients of gradients work as well. The other functions (norms, matrix_power, multi_dot, ...)
are compositions of differentiable ops.

Inputs are float32, float64, complex64 or complex128 tensors; complex ones get PyTorch's
conjugate Wirtinger gradients (the rules are written with conjugate transposes, ``.mH``,
which are plain transposes on real tensors). Like PyTorch, the gradients
of ``svd`` and ``eigh`` (and so of ``svdvals``, ``eigvalsh`` and the spectral norms) are
undefined when singular values or eigenvalues repeat: they come out as inf or nan there; and
a loss on complex singular vectors must not depend on their phases (an error otherwise).
"""

__all__ = [
    "LinAlgError",
    "inv",
    "det",
    "slogdet",
    "solve",
    "solve_triangular",
    "cholesky",
    "qr",
    "svd",
    "svdvals",
    "eigh",
    "eigvalsh",
    "pinv",
    "vector_norm",
    "matrix_norm",
    "norm",
    "tensor_norm",
    "matmul",
    "cross",
    "vecdot",
    "matrix_power",
    "multi_dot",
    "diagonal",
    "lstsq",
    "lu_factor",
    "lu_factor_ex",
    "lu",
    "lu_solve",
    "matrix_rank",
    "matrix_exp",
    "cond",
    "eig",
    "eigvals",
    "inv_ex",
    "cholesky_ex",
    "solve_ex",
    "tensorinv",
    "tensorsolve",
    "vander",
    "householder_product",
]

from ..ops.matmul import matmul
from ._common import LinAlgError
from .compositions import householder_product, tensorinv, tensorsolve, vander
from .decompositions import cholesky, eigh, eigvalsh, qr, svd, svdvals
from .eig import eig, eigvals
from .exp import matrix_exp
from .inverse import det, inv, slogdet
from .lu import cholesky_ex, inv_ex, lu, lu_factor, lu_factor_ex, lu_solve, solve_ex
from .norms import matrix_norm, norm, tensor_norm, vector_norm
from .pinv import pinv
from .products import cross, diagonal, matrix_power, multi_dot, vecdot
from .rank import cond, lstsq, matrix_rank
from .solve import solve, solve_triangular
