"""Adam and AdamW: moment estimates with bias correction, optional AMSGrad."""

from __future__ import annotations

from typing import Any

from .. import _state
from ..ops.binary import maximum
from ..ops.creation import zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, differentiable_copy, step_counter


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2014).

    ``m = β1·m + (1-β1)·g``, ``v = β2·v + (1-β2)·g²`` (``v`` replaced by its running maximum
    with ``amsgrad``), then ``p -= lr/(1-β1^t) · m / (sqrt(v/(1-β2^t)) + eps)``. Weight decay
    adds ``λ·p`` to the gradient, or with ``decoupled_weight_decay`` (AdamW) scales the
    parameter by ``1 - lr·λ`` first. With ``capturable`` (and always inside a ``tk.jit``
    capture) the bias corrections are computed from the step count as tensor ops.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        _validate.common(lr, eps, weight_decay)
        _validate.betas(betas)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = step_counter()
            state["exp_avg"] = zeros_like(param)
            state["exp_avg_sq"] = zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(param)
        lr, weight_decay = group["lr"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grad = -grad
        step_count = state["step"].add_(1)
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg, second_moment = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        second_moment.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        if group["amsgrad"]:
            largest = state["max_exp_avg_sq"]
            previous, current = (differentiable_copy(t, group) for t in (largest, second_moment))
            second_moment = largest.copy_(maximum(previous, current))
        moment = differentiable_copy(exp_avg, group)
        if group["capturable"] or _state.tracer is not None:
            # The step stays a tensor (as torch's capturable path, and torch.compile): a
            # tk.jit capture then computes the bias corrections from it on every replay.
            count = step_count.to(param.device)
            step_size = (1 - beta1**count).reciprocal() * -lr
            denom = second_moment.sqrt() / (1 - beta2**count).sqrt() + group["eps"]
            param.addcdiv_(moment * step_size, denom)
            return
        step = step_count.item()
        step_size = lr / (1 - beta1**step)
        denom = second_moment.sqrt() / (1 - beta2**step) ** 0.5 + group["eps"]
        param.addcdiv_(moment, denom, value=-step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2017): the parameter is scaled by
    ``1 - lr·weight_decay`` before the Adam step instead of decay entering the moments."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
