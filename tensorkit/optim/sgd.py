"""Stochastic gradient descent, with momentum (heavy-ball or Nesterov) and weight decay."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, subtract_lr_times


class SGD(Optimizer):
    """Stochastic gradient descent.

    With ``momentum`` μ, dampening τ and weight decay λ, each step does
    ``g = grad + λ·p``, ``b = μ·b + (1 - τ)·g`` (``b = g`` on the first step),
    ``g = g + μ·b`` (Nesterov) or ``g = b``, then ``p -= lr·g``.
    """

    _supports_complex = True

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _validate.non_negative("learning rate", lr)
        _validate.non_negative("momentum value", momentum)
        _validate.non_negative("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[param]
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = state["momentum_buffer"] = grad.detach().clone()
            else:
                buffer.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buffer, alpha=momentum) if group["nesterov"] else buffer
        subtract_lr_times(param, grad, group["lr"])
