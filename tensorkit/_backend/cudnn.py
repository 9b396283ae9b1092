"""cuDNN through CuPy's bindings (``cupyx.cudnn``, ``cupy.cuda.cudnn``): whether it can be
used, the ``tk.backends.cudnn`` flags, and the array-level calls the nn ops make.

:func:`use_cudnn` is the one dispatch decision: a tensor on CUDA, a dtype cuDNN has (float16,
float32, float64), the ``enabled`` flag and a cuDNN that loads. Everything else takes the
im2col / NumPy-style path. cuDNN arrives with CuPy up to v13 (``cupyx.cudnn`` plus a cuDNN
library, e.g. the ``nvidia-cudnn-cu12`` wheel); CuPy v14 removed its cuDNN bindings, so there
``is_available()`` is False and every op takes the fallback.

The calls below translate tensorkit's arguments (symmetric padding per spatial dim, 1-D ops
as 2-D ones with a unit height) into cupyx.cudnn's and pass ``benchmark`` as ``auto_tune`` and
``deterministic`` on; inputs are made C-contiguous, as cupyx.cudnn requires.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

__all__ = [
    "FLAGS",
    "is_available",
    "libraries",
    "use_cudnn",
    "version",
]

# enabled, benchmark, deterministic, allow_tf32: PyTorch's defaults.
FLAGS = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}
_CUDNN_DTYPES = frozenset({"float16", "float32", "float64"})
_probed: dict[int, tuple[ModuleType, ModuleType] | None] = {}  # by id of the cupy module


def libraries() -> tuple[ModuleType, ModuleType] | None:
    """(cupyx.cudnn, cupy.cuda.cudnn), or None when either is missing or cuDNN does not load;
    probed once per CuPy module (a test's stand-in CuPy gets its own answer)."""
    key = id(sys.modules.get("cupy"))
    if key not in _probed:
        try:
            high = importlib.import_module("cupyx.cudnn")
            low = importlib.import_module("cupy.cuda.cudnn")
            low.getVersion()
            _probed[key] = (high, low)
        except Exception:  # ImportError, a missing libcudnn, no driver, ...
            _probed[key] = None
    return _probed[key]


def is_available() -> bool:
    """Whether cuDNN can be used: CuPy's cuDNN bindings import and the library loads."""
    return libraries() is not None


def version() -> int | None:
    """cuDNN's version number (e.g. 8907), or None without cuDNN."""
    found = libraries()
    return None if found is None else int(found[1].getVersion())


def use_cudnn(device: Any, dtype_name: str) -> bool:
    """The dispatch: True when an op on ``device`` with this dtype goes to cuDNN."""
    return (
        device.type == "cuda"
        and FLAGS["enabled"]
        and dtype_name in _CUDNN_DTYPES
        and libraries() is not None
    )


def conv_allowed(dtype_name: str) -> bool:
    """cuDNN convolutions may use TF32 for float32 on Ampere and later, and CuPy's bindings
    cannot forbid it: with ``allow_tf32`` off, float32 convolutions stay on im2col."""
    return dtype_name != "float32" or FLAGS["allow_tf32"]


# --------------------------------------------------------------------------- the calls
def _contiguous(xp: Any, *arrays: Any) -> list[Any]:
    return [xp.ascontiguousarray(a) for a in arrays]


def conv_forward(
    xp: Any, x: Any, w: Any, pad: tuple, stride: tuple, dilation: tuple, groups: int
) -> Any:
    """y = conv(x, w) (cross-correlation), y's shape from cuDNN's own formula."""
    high, _ = libraries()
    x, w = _contiguous(xp, x, w)
    out = tuple(
        (n + 2 * p - d * (k - 1) - 1) // s + 1
        for n, k, p, s, d in zip(x.shape[2:], w.shape[2:], pad, stride, dilation, strict=True)
    )
    y = xp.empty((x.shape[0], w.shape[0], *out), x.dtype)
    high.convolution_forward(
        x,
        w,
        None,
        y,
        pad,
        stride,
        dilation,
        groups,
        auto_tune=FLAGS["benchmark"],
        tensor_core="auto",
    )
    return y


def conv_backward_data(
    xp: Any, g: Any, w: Any, size: tuple, pad: tuple, stride: tuple, dilation: tuple, groups: int
) -> Any:
    """The input gradient of conv, of shape ``size``, from the output gradient ``g``."""
    high, _ = libraries()
    g, w = _contiguous(xp, g, w)
    gx = xp.empty(size, g.dtype)
    high.convolution_backward_data(
        w,
        g,
        None,
        gx,
        pad,
        stride,
        dilation,
        groups,
        deterministic=FLAGS["deterministic"],
        auto_tune=FLAGS["benchmark"],
        tensor_core="auto",
    )
    return gx


def conv_backward_filter(
    xp: Any, x: Any, g: Any, size: tuple, pad: tuple, stride: tuple, dilation: tuple, groups: int
) -> Any:
    """The weight gradient of conv, of shape ``size``, from the input and ``g``."""
    high, _ = libraries()
    x, g = _contiguous(xp, x, g)
    gw = xp.empty(size, x.dtype)
    high.convolution_backward_filter(
        x,
        g,
        gw,
        pad,
        stride,
        dilation,
        groups,
        deterministic=FLAGS["deterministic"],
        auto_tune=FLAGS["benchmark"],
        tensor_core="auto",
    )
    return gw


def pool_mode(kind: str) -> int:
    """cuDNN's pooling mode for "max", "avg_include_pad" or "avg_exclude_pad"."""
    _, low = libraries()
    if kind == "max":
        name = "CUDNN_POOLING_MAX_DETERMINISTIC" if FLAGS["deterministic"] else "CUDNN_POOLING_MAX"
    elif kind == "avg_include_pad":
        name = "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING"
    else:
        name = "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING"
    return getattr(low, name)


def pool_forward(
    xp: Any, x: Any, out: tuple, kernel: tuple, stride: tuple, pad: tuple, kind: str
) -> Any:
    high, _ = libraries()
    (x,) = _contiguous(xp, x)
    y = xp.empty(x.shape[:2] + out, x.dtype)
    return high.pooling_forward(x, y, kernel, stride, pad, pool_mode(kind))


def pool_backward(
    xp: Any, x: Any, y: Any, g: Any, kernel: tuple, stride: tuple, pad: tuple, kind: str
) -> Any:
    high, _ = libraries()
    x, y, g = _contiguous(xp, x, y, g)
    return high.pooling_backward(x, y, g, kernel, stride, pad, pool_mode(kind))


def batch_norm_forward_training(
    xp: Any,
    x: Any,
    gamma: Any,
    beta: Any,
    running_mean: Any,
    running_var: Any,
    eps: float,
    momentum: float,
) -> tuple:
    """(y, mean, inv_std) of (N, C, H, W) ``x``, per channel; the running statistics (arrays
    of shape (C,)) are updated in place with ``momentum``, the variance unbiased."""
    high, low = libraries()
    x, gamma, beta = _contiguous(xp, x, gamma, beta)
    return high.batch_normalization_forward_training(
        x,
        gamma,
        beta,
        running_mean,
        running_var,
        None,
        None,
        eps,
        1.0 - momentum,
        True,
        low.CUDNN_BATCHNORM_SPATIAL,
        False,
    )


def batch_norm_backward(
    xp: Any, x: Any, gamma: Any, g: Any, mean: Any, inv_std: Any, eps: float
) -> tuple:
    """(gx, ggamma, gbeta) of the training batch norm, from the saved mean and inv_std."""
    high, low = libraries()
    x, gamma, g = _contiguous(xp, x, gamma, g)
    return high.batch_normalization_backward(
        x,
        gamma,
        g,
        mean,
        inv_std,
        eps,
        True,
        low.CUDNN_BATCHNORM_SPATIAL,
        False,
    )
