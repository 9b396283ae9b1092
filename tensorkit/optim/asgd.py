"""ASGD: SGD with a decaying step size and a running (Polyak) average of the iterates."""

from __future__ import annotations

from typing import Any

from ..ops.creation import ones_like, tensor, zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, step_counter


class ASGD(Optimizer):
    """Averaged stochastic gradient descent (Polyak & Juditsky, 1992).

    ``g = grad + λw·p``, ``p = p·(1 - lambd·η) - η·g``; the average ``ax`` follows
    ``ax += μ·(p - ax)``; then ``η = lr / (1 + lambd·lr·t)^alpha`` and
    ``μ = 1 / max(1, t - t0)``. ``eta`` and ``mu`` are kept, as in PyTorch, as 0-d tensors of
    the step count's dtype.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        _validate.non_negative("learning rate", lr)
        _validate.non_negative("weight_decay value", weight_decay)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        lr, lambd = float(group["lr"]), group["lambd"]
        if not state:
            state["step"] = step = step_counter()
            state["eta"] = tensor(lr, dtype=step.dtype, device=param.device)
            state["mu"] = ones_like(step, device=param.device)
            state["ax"] = zeros_like(param)
        if group["maximize"]:
            grad = -grad
        step = state["step"].add_(1).item()
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        eta, mu, ax = state["eta"], state["mu"], state["ax"]
        eta_value = eta.item()
        param.mul_(1 - lambd * eta_value)
        param.add_(grad, alpha=-eta_value)
        mu_value = mu.item()
        if mu_value != 1:
            ax.add_(param.sub(ax).mul_(mu_value))
        else:
            ax.copy_(param)
        eta.fill_(lr / ((1 + lambd * lr * step) ** group["alpha"]))
        mu.fill_(1 / max(1, step - group["t0"]))
