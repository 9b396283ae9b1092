"""Adagrad: per-coordinate steps scaled by the root of the summed squared gradients."""

from __future__ import annotations

from typing import Any

from ..ops.creation import full_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, step_counter


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011).

    ``s += g²``, ``p -= lr/(1 + (t-1)·lr_decay) · g/(sqrt(s) + eps)``; ``s`` starts at
    ``initial_accumulator_value``. As in PyTorch, state is made for every parameter at
    construction (so ``state_dict()`` has it before the first step).
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _validate.non_negative("learning rate", lr)
        _validate.non_negative("lr_decay value", lr_decay)
        _validate.non_negative("weight_decay value", weight_decay)
        _validate.non_negative("initial_accumulator_value value", initial_accumulator_value)
        _validate.non_negative("epsilon value", eps)
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for param in group["params"]:
                self._init_state(param, group)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        state["step"] = step_counter()
        state["sum"] = full_like(param, group["initial_accumulator_value"])

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:  # a parameter added with add_param_group after construction
            self._init_state(param, group)
        step = state["step"].add_(1).item()
        if group["maximize"]:
            grad = -grad
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"].addcmul_(grad, grad, value=1)
        param.addcdiv_(grad, state_sum.sqrt() + group["eps"], value=-clr)
