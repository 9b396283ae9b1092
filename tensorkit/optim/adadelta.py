"""Adadelta: steps scaled by the ratio of running RMS of updates and of gradients."""

from __future__ import annotations

from typing import Any

from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, step_counter, subtract_lr_times


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012).

    ``v = rho·v + (1-rho)·g²``, ``Δ = sqrt(u + eps)/sqrt(v + eps) · g``,
    ``u = rho·u + (1-rho)·Δ²``, ``p -= lr·Δ``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _validate.non_negative("learning rate", lr)
        _validate.in_unit_interval("rho value", rho)
        _validate.non_negative("epsilon value", eps)
        _validate.non_negative("weight_decay value", weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = step_counter()
            state["square_avg"] = zeros_like(param)
            state["acc_delta"] = zeros_like(param)
        rho, eps = group["rho"], group["eps"]
        state["step"].add_(1)
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        square_avg = state["square_avg"].mul_(rho).addcmul_(grad, grad, value=1 - rho)
        std = square_avg.add(eps).sqrt_()
        delta = state["acc_delta"].add(eps).sqrt_().div_(std).mul_(grad)
        state["acc_delta"].mul_(rho).addcmul_(delta, delta, value=1 - rho)
        subtract_lr_times(param, delta, group["lr"])
