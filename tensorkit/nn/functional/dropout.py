"""Dropout: zero elements (or whole channels) at random in training, scaling the rest.

Masks are drawn from tensorkit's default generator (``tk.manual_seed`` makes them
reproducible); they do not match PyTorch's random streams.
"""

from __future__ import annotations

import warnings

from ..._dtype import reject_complex
from ..._ranges import composite
from ...random import bernoulli
from ...tensor import Tensor
from ._inplace import maybe_inplace

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout"]


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _masked(input: Tensor, p: float, mask_shape: tuple[int, ...]) -> Tensor:
    """``input * mask / (1 - p)`` with a Bernoulli(1 - p) mask of ``mask_shape``."""
    reject_complex(input._data.dtype, "bernoulli_scalar_cpu_")
    if p == 1.0:
        return input * 0.0
    keep = bernoulli(input.detach().new_empty(mask_shape), 1.0 - p)
    return input * (keep / (1.0 - p))


@composite
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    return maybe_inplace(input, inplace, "dropout_", lambda x: _masked(x, p, tuple(x.shape)))


def _feature_dropout(
    input: Tensor, p: float, training: bool, inplace: bool, spatial: int, name: str
) -> Tensor:
    """Zero whole channels: the mask covers all dims but the last ``spatial`` ones."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    shape = tuple(input.shape[: input.ndim - spatial]) + (1,) * spatial
    return maybe_inplace(input, inplace, name + "_", lambda x: _masked(x, p, shape))


def _check_dims(name: str, input: Tensor, batched: int) -> None:
    if input.ndim not in (batched - 1, batched):
        raise RuntimeError(
            f"{name}: Expected {batched - 1}D or {batched}D input, but received a "
            f"{input.ndim}D input."
        )


@composite
def dropout1d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) inputs."""
    _check_dims("dropout1d", input, 3)
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


@composite
def dropout2d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, H, W) inputs. A 3D input is taken as (N, C, L), with
    PyTorch's warning."""
    _check_dims("dropout2d", input, 4)
    spatial = 2
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret "
            "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain the "
            "1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
        spatial = 1
    return _feature_dropout(input, p, training, inplace, spatial, "dropout2d")


@composite
def dropout3d(
    input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _check_dims("dropout3d", input, 5)
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")


_SELU_NEGATIVE = 1.7580993408473766  # SELU's limit for -inf: scale * alpha


@composite
def alpha_dropout(
    input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
) -> Tensor:
    """Set each element to SELU's negative saturation with probability ``p``, then scale and
    shift so that a zero-mean unit-variance input keeps its mean and variance."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    reject_complex(input._data.dtype, "bernoulli_scalar_cpu_")

    def drop(x: Tensor) -> Tensor:
        if p == 1.0:
            return x * 0.0
        keep = bernoulli(x.detach().new_empty(tuple(x.shape)), 1.0 - p)
        a = 1.0 / ((_SELU_NEGATIVE**2 * p + 1) * (1 - p)) ** 0.5
        shift = (keep - 1) * (_SELU_NEGATIVE * a) + _SELU_NEGATIVE * a * p
        return x * (keep * a) + shift

    return maybe_inplace(input, inplace, "alpha_dropout_", drop)
