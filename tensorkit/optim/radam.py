"""RAdam: Adam whose adaptive step is switched on once the variance estimate is tractable."""

from __future__ import annotations

from typing import Any

from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, differentiable_copy, step_counter


class RAdam(Optimizer):
    """RAdam (Liu et al., 2019).

    With ``m``, ``v`` as in Adam, ``rho_inf = 2/(1-β2) - 1`` and
    ``rho_t = rho_inf - 2tβ2^t/(1-β2^t)``: when ``rho_t > 5`` the step is
    ``lr·r_t·m̂·sqrt(1-β2^t)/(sqrt(v) + eps)`` with the rectification ``r_t``, else plain
    momentum ``lr·m̂``. ``decoupled_weight_decay`` scales the parameter by ``1 - lr·λ``
    instead of adding ``λ·p`` to the gradient.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _validate.common(lr, eps, weight_decay)
        _validate.betas(betas)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = step_counter()
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        lr, weight_decay = group["lr"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        step = state["step"].add_(1).item()
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg = state["exp_avg"].lerp_(grad, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction2 = 1 - beta2**step
        corrected_avg = differentiable_copy(exp_avg, group) / (1 - beta1**step)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * beta2**step / bias_correction2
        if rho_t > 5.0:
            rect = (
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            ) ** 0.5
            adaptive_lr = bias_correction2**0.5 / (exp_avg_sq.sqrt() + group["eps"])
            param.add_(corrected_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(corrected_avg * lr, alpha=-1.0)
