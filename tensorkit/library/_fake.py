"""Fake tensors for ``register_fake`` functions: a tensor of the right shape, dtype and
device whose storage is one element broadcast (so it costs no memory and its values mean
nothing), and the comparison of a fake function's outputs with the real ones."""

from __future__ import annotations

from typing import Any

from .. import _state
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor, wrap


def fake_tensor(tensor: Tensor) -> Tensor:
    """A stand-in for ``tensor``: same shape, dtype, device and requires_grad; no data."""
    data = tensor._data
    xp = tensor._device.xp
    fake = wrap(xp.broadcast_to(xp.zeros((), data.dtype), data.shape), tensor._device)
    fake._requires_grad = tensor._requires_grad
    return fake


def meta(tensor: Any) -> tuple[tuple[int, ...], str, str] | str:
    """(shape, dtype, device) of a tensor, or its type's name for anything else."""
    if not isinstance(tensor, Tensor):
        return type(tensor).__name__
    return tuple(tensor._data.shape), tensor._data.dtype.name, str(tensor._device)


def fake_outputs(op: Any, arguments: dict[str, Any]) -> list:
    """The (shape, dtype, device) of each output ``op``'s fake function gives for
    ``arguments`` (bound by name), run on fake tensors with no observer or tracer."""
    fake_args = {
        name: fake_tensor(value) if isinstance(value, Tensor) else value
        for name, value in arguments.items()
    }
    tracer, _state.tracer = _state.tracer, None
    observers = _state.observers
    for observer in observers:
        _state.remove_observer(observer)
    try:
        with no_grad():
            result = op.fake_fn(**fake_args)
    finally:
        for observer in observers:
            _state.add_observer(observer)
        _state.tracer = tracer
    results = result if isinstance(result, tuple | list) else (result,)
    return [meta(r) for r in results]


def describe(entry: Any) -> str:
    if isinstance(entry, str):
        return f"a {entry}"
    shape, dtype, device = entry
    return f"shape {list(shape)}, dtype {dtype}, device {device}"
