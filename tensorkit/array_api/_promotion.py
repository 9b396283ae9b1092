"""The standard's type promotion, on top of tensorkit's dtype table.

Within a kind tensorkit's table agrees with the standard; where they differ is in how operands
take part. Tensorkit follows PyTorch, where 0-d tensors and scalars only raise a result's
category. The standard promotes every array by dtype alone, 0-d or not, and a Python scalar
takes the dtype of the array it meets. The helpers here compute the standard's dtype and cast
operands to it before calling a tensorkit op, so the op's own promotion has nothing left to do.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._backend import device
from .._dtype import dtype, promote_types, result_type_of
from ..ops.creation import tensor as make_tensor
from ..tensor import Tensor

Scalar = bool | int | float | complex


def is_scalar(value: object) -> bool:
    """True for Python (and NumPy) scalars: the operands the standard lets stand for arrays."""
    return isinstance(value, Scalar | np.generic)


def python_scalar(value: Any) -> Any:
    """A NumPy scalar as the Python scalar of the same kind; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def promote_dtypes(dtypes: Sequence[dtype]) -> dtype:
    """The common dtype of ``dtypes`` by the promotion table."""
    return functools.reduce(promote_types, dtypes)


def result_dtype(operands: Sequence[Any]) -> dtype:
    """The standard's result dtype of arrays, dtypes and Python scalars.

    A scalar of a kind the arrays already cover takes their dtype; one of a higher kind (a
    float with integer arrays, which the standard leaves unspecified) gives the default dtype
    of its kind, as tensorkit does.
    """
    dtypes = []
    scalars = []
    for operand in operands:
        if isinstance(operand, Tensor):
            dtypes.append(operand.dtype)
        elif isinstance(operand, dtype):
            dtypes.append(operand)
        elif is_scalar(operand):
            scalars.append(python_scalar(operand))
        else:
            raise TypeError(
                f"expected arrays, dtypes or Python scalars, got {type(operand).__name__}"
            )
    if not dtypes:
        raise TypeError("at least one array or dtype is required")
    result = promote_dtypes(dtypes)
    return result_type_of([result], [], scalars) if scalars else result


def cast(x: Tensor, target: dtype) -> Tensor:
    """``x`` as ``target`` (``x`` itself when it already is; differentiable otherwise)."""
    return x if x.dtype is target else x.to(target)


def common(*operands: Any) -> tuple[Any, ...]:
    """Array operands cast to the standard's result dtype; scalars stay Python scalars."""
    target = result_dtype(operands)
    return tuple(cast(x, target) if isinstance(x, Tensor) else python_scalar(x) for x in operands)


def common_tensors(*operands: Any) -> tuple[Tensor, ...]:
    """Like :func:`common`, with scalars made 0-d tensors on the arrays' device."""
    target = result_dtype(operands)
    dev = operand_device(operands)
    return tuple(
        cast(x, target)
        if isinstance(x, Tensor)
        else make_tensor(python_scalar(x), dtype=target, device=dev)
        for x in operands
    )


def operand_device(operands: Sequence[Any]) -> device:
    """The device of the first array among ``operands``."""
    for operand in operands:
        if isinstance(operand, Tensor):
            return operand.device
    raise TypeError("at least one operand must be an array")
