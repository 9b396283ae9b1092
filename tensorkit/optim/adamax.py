"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from typing import Any

from ..ops.binary import maximum
from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, differentiable_copy, step_counter


class Adamax(Optimizer):
    """Adamax (Kingma & Ba, 2014, section 7).

    ``m = β1·m + (1-β1)·g``, ``u = max(β2·u, |g| + eps)``, ``p -= lr/(1-β1^t) · m/u``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _validate.common(lr, eps, weight_decay)
        _validate.betas(betas)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = step_counter()
            state["exp_avg"] = zeros_like(param)
            state["exp_inf"] = zeros_like(param)
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        step = state["step"].add_(1).item()
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        exp_avg = state["exp_avg"].lerp_(grad, 1 - beta1)
        exp_inf = state["exp_inf"]
        decayed = differentiable_copy(exp_inf.mul_(beta2), group)
        exp_inf.copy_(maximum(decayed, grad.abs() + group["eps"]))
        clr = group["lr"] / (1 - beta1**step)
        param.addcdiv_(
            differentiable_copy(exp_avg, group), differentiable_copy(exp_inf, group), value=-clr
        )
