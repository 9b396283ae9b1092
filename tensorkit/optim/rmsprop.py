"""RMSprop: gradients scaled by a running root mean square, optionally centered."""

from __future__ import annotations

from typing import Any

from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, differentiable_copy, step_counter, subtract_lr_times


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture notes; centered form of Graves, 2013).

    ``v = alpha·v + (1-alpha)·g²``; centered: ``a = alpha·a + (1-alpha)·g`` and
    ``v̂ = v - a²``; then with momentum μ ``b = μ·b + g/(sqrt(v̂) + eps)`` and ``p -= lr·b``,
    else ``p -= lr·g/(sqrt(v̂) + eps)``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _validate.common(lr, eps, weight_decay)
        _validate.non_negative("momentum value", momentum)
        _validate.non_negative("alpha value", alpha)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = step_counter()
            state["square_avg"] = zeros_like(param)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = zeros_like(param)
        alpha = group["alpha"]
        if group["maximize"]:
            grad = -grad
        state["step"].add_(1)
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        square_avg = state["square_avg"].mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = differentiable_copy(state["grad_avg"].lerp_(grad, 1 - alpha), group)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg + group["eps"]
        if group["momentum"] > 0:
            buffer = state["momentum_buffer"].mul_(group["momentum"]).addcdiv_(grad, avg)
            subtract_lr_times(param, buffer, group["lr"])
        else:
            param.addcdiv_(grad, avg, value=-group["lr"])
