"""Full backward hooks: identity ops around a module call that report (and may replace) the
gradients flowing out of its outputs and into its inputs.

One call of a module with backward hooks makes a ``BackwardHookRun``. Its identity on the
outputs sees the output gradients first (running the backward pre-hooks); its identity on the
inputs then sees the input gradients and runs the full backward hooks with both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...autograd.function import Function
from ...tensor import Tensor


class _HookIdentity(Function):
    """Returns its tensors unchanged; in backward, hands their gradients to a callback."""

    @staticmethod
    def forward(ctx: Any, callback: Callable, *tensors: Tensor) -> Any:
        ctx.callback = callback
        return tensors if len(tensors) > 1 else tensors[0]

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple:
        return (None, *ctx.callback(grads))


def _through_identity(values: list, callback: Callable) -> tuple[list, list[int]]:
    """``values`` with the tensors that require grad replaced by identity outputs, and the
    positions of those tensors."""
    positions = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
    if not positions:
        return values, positions
    outs = _HookIdentity.apply(callback, *(values[i] for i in positions))
    outs = outs if isinstance(outs, tuple) else (outs,)
    replaced = list(values)
    for position, out in zip(positions, outs, strict=True):
        replaced[position] = out
    return replaced, positions


class BackwardHookRun:
    """The backward hooks of one module call."""

    def __init__(self, module: Any, pre_hooks: list[Callable], hooks: list[Callable]) -> None:
        self.module = module
        self.pre_hooks = pre_hooks
        self.hooks = hooks
        self.arg_count = 0
        self.input_positions: list[int] = []
        self.grad_output: tuple = ()

    def wrap_inputs(self, args: tuple) -> tuple:
        self.arg_count = len(args)
        wrapped, self.input_positions = _through_identity(list(args), self._on_input_grads)
        return tuple(wrapped)

    def wrap_outputs(self, result: Any) -> Any:
        single = isinstance(result, Tensor)
        values = [result] if single else list(result) if isinstance(result, tuple) else None
        if values is None:
            return result
        wrapped, _ = _through_identity(values, self._on_output_grads)
        return wrapped[0] if single else tuple(wrapped)

    def _on_output_grads(self, grads: tuple) -> tuple:
        for hook in self.pre_hooks:
            replaced = hook(self.module, grads)
            if replaced is not None:
                grads = self._checked(replaced, len(grads), "backward pre hook")
        self.grad_output = grads
        if not self.input_positions:
            self._run_hooks((None,) * self.arg_count)
        return grads

    def _on_input_grads(self, grads: tuple) -> tuple:
        grad_input: list = [None] * self.arg_count
        for position, grad in zip(self.input_positions, grads, strict=True):
            grad_input[position] = grad
        result = self._run_hooks(tuple(grad_input))
        return tuple(result[position] for position in self.input_positions)

    def _run_hooks(self, grad_input: tuple) -> tuple:
        for hook in self.hooks:
            replaced = hook(self.module, grad_input, self.grad_output)
            if replaced is not None:
                grad_input = self._checked(replaced, len(grad_input), "backward hook")
        return grad_input

    @staticmethod
    def _checked(replaced: Any, expected: int, kind: str) -> tuple:
        replaced = tuple(replaced) if isinstance(replaced, tuple | list) else (replaced,)
        if len(replaced) != expected:
            raise RuntimeError(
                f"{kind} returned an invalid number of grad_input, got {len(replaced)}, but "
                f"expected {expected}"
            )
        return replaced
