"""NAdam: Adam with Nesterov momentum and a momentum schedule."""

from __future__ import annotations

from typing import Any

from ..ops.creation import ones_like, zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, differentiable_copy, step_counter


class NAdam(Optimizer):
    """NAdam (Dozat, 2016).

    ``μ_t = β1·(1 - 0.96^(t·ψ)/2)`` with ψ = ``momentum_decay``; with ``m``, ``v`` as in Adam,
    ``p -= lr·(1-μ_t)/(1-Πμ_{≤t}) · g/d + lr·μ_{t+1}/(1-Πμ_{≤t+1}) · m/d`` where
    ``d = sqrt(v/(1-β2^t)) + eps``. ``decoupled_weight_decay`` gives NAdamW's decay.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        _validate.common(lr, eps, weight_decay)
        _validate.betas(betas)
        _validate.non_negative("momentum_decay value", momentum_decay)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = step_counter()
            state["mu_product"] = ones_like(state["step"])
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
        lr, weight_decay, decay = group["lr"], group["weight_decay"], group["momentum_decay"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        step = state["step"].add_(1).item()
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        # The running product lives in a tensor of the step's dtype, rounded as PyTorch's is.
        mu_product = state["mu_product"].mul_(mu).item()
        mu_product_next = mu_product * mu_next
        exp_avg = state["exp_avg"].lerp_(grad, 1 - beta1)
        exp_avg_sq = state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = differentiable_copy(exp_avg_sq, group).div(1 - beta2**step).sqrt() + group["eps"]
        param.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
        param.addcdiv_(
            differentiable_copy(exp_avg, group),
            denom,
            value=-lr * mu_next / (1.0 - mu_product_next),
        )
