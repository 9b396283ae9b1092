"""Op families, and the Tensor methods and operators that call them.

``install_methods`` runs once at import: it binds each op as a Tensor method (``t.exp()``),
makes the in-place forms (``t.exp_()``) from the out-of-place ones, and wires the Python
operators (``a + b``, ``a @ b``, ``a += b``, ``a[i] = v``).
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import (
    binary,
    conversion,
    creation,
    indexing,
    inplace,
    matmul,
    reduction,
    shape,
    softmax,
    special,
    unary,
)
from . import complex as complex_ops
from .inplace import make_inplace

# Tensor methods named as the module-level function they call.
_METHODS_BY_MODULE = {
    unary: (
        "neg negative exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal square sin cos tan "
        "asin acos atan sinh cosh tanh asinh acosh atanh arcsin arccos arctan arcsinh arccosh "
        "arctanh sigmoid relu erf erfc abs absolute sign floor ceil trunc fix frac round "
        "nan_to_num isnan isinf isposinf isneginf isfinite signbit logical_not bitwise_not positive"
        " sgn sinc logit deg2rad rad2deg frexp"
    ),
    binary: (
        "add sub mul div true_divide floor_divide remainder fmod pow atan2 maximum minimum fmax "
        "fmin clamp clip lerp eq ne lt le gt ge logical_and logical_or logical_xor bitwise_and "
        "bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift isclose allclose equal "
        "addcmul addcdiv clamp_min clamp_max"
        " greater greater_equal less less_equal not_equal multiply subtract divide arctan2 xlogy"
        " hypot copysign heaviside gcd lcm ldexp nextafter float_power logaddexp logaddexp2"
    ),
    reduction: (
        "sum mean nansum nanmean prod amax amin argmax argmin max min aminmax var std "
        "logsumexp cumsum cumprod all any count_nonzero median nanmedian mode cummax cummin "
        "logcumsumexp trace diff"
        " dist sum_to_size cov corrcoef"
        " histc bincount renorm quantile nanquantile"
    ),
    shape: (
        "reshape view view_as reshape_as flatten unflatten permute transpose swapaxes swapdims "
        "t movedim moveaxis squeeze unsqueeze expand expand_as broadcast_to narrow diagonal split "
        "chunk tensor_split unbind repeat tile repeat_interleave flip fliplr flipud roll tril "
        "triu diag diag_embed rot90"
        " ravel select hsplit vsplit dsplit split_with_sizes diagflat narrow_copy unfold"
    ),
    indexing: (
        "gather scatter scatter_add take_along_dim index_select index_add masked_fill "
        "masked_select masked_scatter nonzero argwhere argsort sort msort topk kthvalue unique "
        "scatter_reduce index_copy index_fill take unique_consecutive"
        " slice_scatter select_scatter diagonal_scatter index_put index_put_ put put_"
        " fill_diagonal_"
    ),
    matmul: (
        "matmul mm bmm mv dot vdot outer ger tensordot addmm addmv addbmm baddbmm kron cross "
        "det inverse"
        " inner addr slogdet logdet cholesky pinverse matrix_power matrix_exp svd qr"
        " cholesky_solve cholesky_inverse lu_solve"
    ),
    softmax: "softmax log_softmax",
    complex_ops: "conj angle",
    conversion: "clone contiguous type_as",
    special: "lgamma digamma mvlgamma erfinv i0 igamma igammac",
}

# Out-of-place methods that also get an in-place form ``name_``.
_INPLACE = (
    "neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal square sin cos tan asin acos "
    "atan sinh cosh tanh asinh acosh atanh sigmoid relu erf erfc abs sign floor ceil trunc frac "
    "round nan_to_num add sub mul div true_divide floor_divide remainder fmod pow atan2 clamp "
    "clip lerp logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor "
    "masked_fill scatter scatter_add index_add addcmul addcdiv tril triu clamp_min clamp_max "
    "scatter_reduce index_copy index_fill addmm addmv addbmm baddbmm "
    "eq ne lt le gt ge"
    " cumsum cumprod"
    " greater greater_equal less less_equal not_equal multiply subtract divide negative absolute"
    " arccos arccosh arcsin arcsinh arctan arctanh arctan2 fix sgn bitwise_not logical_not"
    " bitwise_left_shift bitwise_right_shift sinc logit xlogy hypot copysign heaviside gcd lcm"
    " ldexp nextafter deg2rad rad2deg"
    " renorm addr"
    " lgamma digamma polygamma mvlgamma erfinv i0 igamma igammac"
)

_OPERATORS = {
    "__add__": binary.add,
    "__radd__": lambda self, other: binary.add(other, self),
    "__sub__": binary.sub,
    "__rsub__": lambda self, other: binary.sub(other, self),
    "__mul__": binary.mul,
    "__rmul__": lambda self, other: binary.mul(other, self),
    "__truediv__": binary.div,
    "__rtruediv__": lambda self, other: binary.div(other, self),
    "__floordiv__": binary.floor_divide,
    "__rfloordiv__": lambda self, other: binary.floor_divide(other, self),
    "__mod__": binary.remainder,
    "__rmod__": lambda self, other: binary.remainder(other, self),
    "__pow__": binary.pow,
    "__rpow__": lambda self, other: binary.pow(other, self),
    "__matmul__": matmul.matmul,
    "__rmatmul__": lambda self, other: matmul.matmul(other, self),
    "__neg__": unary.neg,
    "__pos__": unary.positive,
    "__abs__": unary.abs,
    "__invert__": unary.invert,
    "__and__": binary.bitwise_and,
    "__rand__": lambda self, other: binary.bitwise_and(other, self),
    "__or__": binary.bitwise_or,
    "__ror__": lambda self, other: binary.bitwise_or(other, self),
    "__xor__": binary.bitwise_xor,
    "__rxor__": lambda self, other: binary.bitwise_xor(other, self),
    "__lshift__": binary.bitwise_left_shift,
    "__rlshift__": lambda self, other: binary.bitwise_left_shift(other, self),
    "__rshift__": binary.bitwise_right_shift,
    "__rrshift__": lambda self, other: binary.bitwise_right_shift(other, self),
    # ``t == None`` is False and ``t != None`` True, as in PyTorch (Python's fallback).
    "__eq__": lambda self, other: NotImplemented if other is None else binary.eq(self, other),
    "__ne__": lambda self, other: NotImplemented if other is None else binary.ne(self, other),
    "__lt__": binary.lt,
    "__le__": binary.le,
    "__gt__": binary.gt,
    "__ge__": binary.ge,
    "__getitem__": indexing.getitem,
    "__setitem__": indexing.setitem,
}

_INPLACE_OPERATORS = {
    "__iadd__": "add_",
    "__isub__": "sub_",
    "__imul__": "mul_",
    "__itruediv__": "div_",
    "__ifloordiv__": "floor_divide_",
    "__imod__": "remainder_",
    "__ipow__": "pow_",
    "__iand__": "bitwise_and_",
    "__ior__": "bitwise_or_",
    "__ixor__": "bitwise_xor_",
}


def _new_factory(function: Any) -> Any:
    """``t.new_zeros(shape)`` and friends: same dtype and device as ``t`` unless given."""

    def method(
        self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
    ) -> Tensor:
        return function(
            *size,
            dtype=dtype or self.dtype,
            device=device if device is not None else self.device,
            requires_grad=requires_grad,
        )

    return method


def _new_full(
    self: Tensor,
    size: Any,
    fill_value: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    return creation.full(
        size,
        fill_value,
        dtype=dtype or self.dtype,
        device=device if device is not None else self.device,
        requires_grad=requires_grad,
    )


def _new_tensor(
    self: Tensor, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return creation.tensor(
        data,
        dtype=dtype or self.dtype,
        device=device if device is not None else self.device,
        requires_grad=requires_grad,
    )


def norm(
    input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None
) -> Tensor:
    """``torch.norm``: vector p-norms, 'fro' and 'nuc' (see ``tk.linalg`` for the details)."""
    from ..linalg import tensor_norm

    return tensor_norm(input, p, dim, keepdim, dtype)


def _where_method(self: Tensor, condition: Tensor, y: Any) -> Tensor:
    """``x.where(condition, y)`` is ``where(condition, x, y)``."""
    return binary.where(condition, self, y)


def _cast_method(target: str) -> Any:
    def method(self: Tensor) -> Tensor:
        from .. import _dtype

        return conversion.to(self, getattr(_dtype, target))

    method.__name__ = target
    return method


def _properties() -> dict[str, Any]:
    return {
        "T": property(shape.reversed_dims),
        "mT": property(shape.matrix_transpose),
        "H": property(lambda self: self.T.conj() if self.is_complex() else self.T),
        "mH": property(lambda self: self.mT.conj() if self.is_complex() else self.mT),
        "real": property(
            lambda self: self if not self.is_complex() else complex_part(self, "real")
        ),
        "imag": property(lambda self: complex_part(self, "imag")),
    }


def complex_part(tensor: Tensor, which: str) -> Tensor:
    return getattr(complex_ops, which)(tensor)


def install_methods() -> None:
    for module, names in _METHODS_BY_MODULE.items():
        for name in names.split():
            setattr(Tensor, name, getattr(module, name))
    Tensor.polygamma = special.polygamma_method  # torch.polygamma(n, x) but x.polygamma(n)
    for name in _INPLACE.split():
        setattr(Tensor, name + "_", make_inplace(getattr(Tensor, name), name + "_"))
    for dunder, function in _OPERATORS.items():
        setattr(Tensor, dunder, function)
    for dunder, method_name in _INPLACE_OPERATORS.items():
        setattr(Tensor, dunder, getattr(Tensor, method_name))
    for name, value in _properties().items():
        setattr(Tensor, name, value)
    Tensor.norm = norm
    Tensor.where = _where_method
    Tensor.copy_ = inplace.copy_
    Tensor.fill_ = inplace.fill_
    Tensor.zero_ = inplace.zero_
    for name in ("squeeze_", "unsqueeze_", "t_", "transpose_", "swapaxes_", "swapdims_"):
        setattr(Tensor, name, getattr(inplace, name))
    Tensor.new_zeros = _new_factory(creation.zeros)
    Tensor.new_ones = _new_factory(creation.ones)
    Tensor.new_empty = _new_factory(creation.empty)
    Tensor.new_full = _new_full
    Tensor.new_tensor = _new_tensor
    for name in (
        "float",
        "double",
        "half",
        "int",
        "long",
        "short",
        "bool",
        "byte",
        "char",
        "cfloat",
        "cdouble",
    ):
        setattr(Tensor, name, _cast_method(_CAST_TARGETS[name]))
    Tensor.__hash__ = lambda self: id(self)


_CAST_TARGETS = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "bool": "bool_",
    "byte": "uint8",
    "char": "int8",
    "cfloat": "complex64",
    "cdouble": "complex128",
}
