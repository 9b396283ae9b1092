"""Rprop: per-element step sizes grown or shrunk by the sign agreement of successive gradients."""

from __future__ import annotations

from typing import Any

from ..ops.binary import where
from ..ops.creation import full_like, ones_like, zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, differentiable_copy, step_counter


class Rprop(Optimizer):
    """Resilient backpropagation (Riedmiller & Braun, 1993).

    Each element's step size ``η`` (``lr`` at first) is multiplied by ``etaplus`` when the
    gradient kept its sign, by ``etaminus`` when it flipped (and that gradient is then taken
    as 0), and clamped to ``step_sizes``; then ``p -= η·sign(g)``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        _validate.non_negative("learning rate", lr)
        _validate.etas(etas)
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
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
            state["prev"] = zeros_like(param)
            state["step_size"] = full_like(grad, float(group["lr"]))
        etaminus, etaplus = group["etas"]
        if group["maximize"]:
            grad = -grad
        state["step"].add_(1)
        prev, step_size = state["prev"], state["step_size"]
        agreement = grad.mul(differentiable_copy(prev, group)).sign()
        factor = where(agreement > 0, etaplus, where(agreement < 0, etaminus, ones_like(agreement)))
        step_size.mul_(factor).clamp_(*group["step_sizes"])
        grad = where(agreement < 0, 0.0, grad)
        param.addcmul_(grad.sign(), differentiable_copy(step_size, group), value=-1)
        prev.copy_(grad)
