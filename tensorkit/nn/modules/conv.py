"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d, with PyTorch's arguments,
parameter shapes, default initialization and repr."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ...ops.creation import empty
from ...tensor import Tensor
from .. import functional as F  # noqa: N812
from .. import init
from ..functional.conv import transposed_size
from ..parameter import Parameter
from .module import Module

__all__ = [
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value: Any, n: int) -> tuple:
    """``value`` as an n-tuple (a sequence is kept as it is), as PyTorch's ``_ntuple``."""
    return tuple(value) if isinstance(value, Sequence) else (value,) * n


def _same_padding(kernel: tuple, dilation: tuple) -> list[int]:
    """F.pad amounts (last dim first) for padding='same': any odd extra goes after."""
    amounts = []
    for k, d in zip(reversed(kernel), reversed(dilation), strict=True):
        total = d * (k - 1)
        amounts += [total // 2, total - total // 2]
    return amounts


class _ConvNd(Module):
    """What every convolution layer shares: arguments, parameters, init and repr."""

    _dims = 0
    _functional: Callable[..., Tensor]

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any,
        padding: Any,
        dilation: Any,
        transposed: bool,
        output_padding: Any,
        groups: int,
        bias: bool,
        padding_mode: str,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        n = self._dims
        stride = _tuple(stride, n)
        _check_arguments(in_channels, out_channels, groups, padding, stride, padding_mode)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _tuple(kernel_size, n), stride
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation, self.output_padding = _tuple(dilation, n), _tuple(output_padding, n)
        self.transposed, self.groups, self.padding_mode = transposed, groups, padding_mode
        if padding == "same":
            self._reversed_padding_repeated_twice = _same_padding(self.kernel_size, self.dilation)
        elif padding == "valid":
            self._reversed_padding_repeated_twice = [0, 0] * n
        else:
            self._reversed_padding_repeated_twice = [
                p for p in reversed(self.padding) for _ in range(2)
            ]
        shape = (
            (in_channels, out_channels // groups)
            if transposed
            else (out_channels, in_channels // groups)
        )
        self.weight = Parameter(empty(shape + self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """kaiming_uniform_(a=sqrt(5)) weights, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self._dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._dims:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


def _check_arguments(
    in_channels: int, out_channels: int, groups: int, padding: Any, stride: tuple, mode: str
) -> None:
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups:
        raise ValueError("out_channels must be divisible by groups")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(
                f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
            )
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
    if mode not in _PADDING_MODES:
        raise ValueError(
            f"padding_mode must be one of {set(_PADDING_MODES)}, but got padding_mode='{mode}'"
        )


class _Conv(_ConvNd):
    """A convolution layer; non-zero padding modes pad with F.pad first."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            False,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def forward(self, input: Tensor) -> Tensor:
        x, padding = input, self.padding
        if self.padding_mode != "zeros":
            x = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        conv = type(self)._functional
        return conv(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or (C_in, L) input."""

    _dims = 1
    _functional = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W) input."""

    _dims = 2
    _functional = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W) input."""

    _dims = 3
    _functional = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    """A transposed convolution layer; ``forward`` may ask for an exact ``output_size``."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            True,
            output_padding,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple:
        """The output padding that gives ``output_size`` (which may include N and C)."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        leading = input.ndim - n
        sizes = [int(s) for s in output_size]
        if len(sizes) == leading + n:
            sizes = sizes[leading:]
        if len(sizes) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or "
                f"{leading + n} elements (got {len(output_size)})"
            )
        zeros = (0,) * n
        low = transposed_size(
            input.shape[leading:], self.kernel_size, self.stride, self.padding, zeros, self.dilation
        )
        high = [m + s - 1 for m, s in zip(low, self.stride, strict=True)]
        if any(not a <= s <= b for s, a, b in zip(sizes, low, high, strict=True)):
            raise ValueError(
                f"requested an output size of {sizes}, but valid sizes range from {list(low)} to "
                f"{high} (for an input of {list(input.shape[leading:])})"
            )
        return tuple(s - m for s, m in zip(sizes, low, strict=True))

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        conv = type(self)._functional
        return conv(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution (the gradient of Conv1d with respect to its input)."""

    _dims = 1
    _functional = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution (the gradient of Conv2d with respect to its input)."""

    _dims = 2
    _functional = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution (the gradient of Conv3d with respect to its input)."""

    _dims = 3
    _functional = staticmethod(F.conv_transpose3d)
