"""tensorkit: a PyTorch-style tensor library with a tape-based autograd you can watch.

>>> import tensorkit as tk
>>> x = tk.tensor([1.0, 2.0, 3.0], requires_grad=True)
>>> (x * x).sum().backward()
>>> x.grad
tensor([2., 4., 6.])
"""

import warnings as _warnings

from . import _compiled

_compiled.install()  # before the compiled modules load: stale ones run from source

from . import _state, autograd, cuda, serialization
from ._backend import device
from ._backend.host_allocator import keep_large_buffers as _keep_large_buffers
from ._backend.precision import get_float32_matmul_precision, set_float32_matmul_precision
from ._backend.threads import get_num_threads, set_num_threads
from ._dtype import (
    bool_ as bool,  # noqa: A004
)
from ._dtype import (
    complex64,
    complex128,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from ._interop import (
    can_cast,
    from_dlpack,
    is_complex,
    is_floating_point,
    is_tensor,
    numel,
    result_type,
)
from ._repr import set_printoptions
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .multiprocessing import install as _install_sharing
from .ops import install_methods as _install_methods
from .ops import norm
from .ops.binary import *  # noqa: F403
from .ops.complex import angle, complex, conj, imag, real  # noqa: A004
from .ops.conversion import clone, contiguous
from .ops.creation import *  # noqa: F403
from .ops.indexing import (
    argsort,
    argwhere,
    bucketize,
    diagonal_scatter,
    gather,
    index_add,
    index_copy,
    index_fill,
    index_put,
    index_put_,
    index_select,
    kthvalue,
    masked_fill,
    masked_scatter,
    masked_select,
    msort,
    nonzero,
    put,
    scatter,
    scatter_add,
    scatter_reduce,
    searchsorted,
    select_scatter,
    slice_scatter,
    sort,
    take,
    take_along_dim,
    topk,
    unique,
    unique_consecutive,
)
from .ops.matmul import (
    addbmm,
    addmm,
    addmv,
    addr,
    baddbmm,
    bmm,
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    cross,
    det,
    dot,
    einsum,
    ger,
    inner,
    inner_product,
    inverse,
    kron,
    logdet,
    lu_solve,
    matmul,
    matrix_exp,
    matrix_power,
    mm,
    mv,
    outer,
    pinverse,
    qr,
    slogdet,
    svd,
    tensordot,
    vdot,
)
from .ops.reduction import (
    all,  # noqa: A004
    amax,
    amin,
    aminmax,
    any,  # noqa: A004
    argmax,
    argmin,
    bincount,
    corrcoef,
    count_nonzero,
    cov,
    cummax,
    cummin,
    cumprod,
    cumsum,
    diff,
    dist,
    histc,
    logcumsumexp,
    logsumexp,
    max,  # noqa: A004
    mean,
    median,
    min,  # noqa: A004
    mode,
    nanmean,
    nanmedian,
    nanquantile,
    nansum,
    prod,
    quantile,
    renorm,
    std,
    std_mean,
    sum,  # noqa: A004
    trace,
    var,
    var_mean,
)
from .ops.shape import *  # noqa: F403
from .ops.softmax import log_softmax, softmax
from .ops.special import (
    digamma,
    erfinv,
    i0,
    igamma,
    igammac,
    lgamma,
    mvlgamma,
    polygamma,
)
from .ops.unary import *  # noqa: F403
from .ops.unary import abs, round  # noqa: A004
from .random import (
    Generator,
    bernoulli,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
)
from .random import install_methods as _install_random_methods
from .serialization import load, save
from .tensor import Size, Tensor

__version__ = "0.1.0"

# Floating-point warnings raised inside tensorkit's own ops (overflow in exp, 0/0, ...) are
# silenced: like PyTorch, results carry inf/nan instead. Users' own NumPy code is unaffected.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tensorkit\.")

half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

_install_methods()
_install_random_methods()
_install_sharing()
_keep_large_buffers()


_LAZY_SUBMODULES = (
    "linalg",
    "fft",
    "special",
    "func",
    "array_api",
    "optim",
    "utils",
    "nn",
    "profiler",
    "memory",
    "notebook",
    "distributed",
    "jit",
    "onnx",
    "backends",
    "library",
)


def __getattr__(name: str) -> object:
    """Load the larger submodules on first use, which keeps ``import tensorkit`` fast."""
    if name in _LAZY_SUBMODULES:
        import importlib

        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    if name == "compile":  # torch.compile's place: tk.compile is tk.jit.compile
        from .jit import compile as compile_function

        globals()[name] = compile_function
        return compile_function
    raise AttributeError(f"module 'tensorkit' has no attribute {name!r}")
