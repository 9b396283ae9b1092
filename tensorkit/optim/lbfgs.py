"""L-BFGS: a quasi-Newton method that keeps a short history of steps and gradient changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..autograd.grad_mode import enable_grad, no_grad
from ..ops.creation import zeros
from ..ops.shape import cat
from ..tensor import Tensor
from . import _validate
from ._line_search import Scalar, strong_wolfe
from .optimizer import Optimizer, ParamsT


class LBFGS(Optimizer):
    """L-BFGS (after minFunc), over all parameters as one flat vector.

    Each ``step(closure)`` runs up to ``max_iter`` iterations (``max_eval`` closure calls):
    the two-loop recursion over the last ``history_size`` curvature pairs gives a direction,
    and the step along it is ``lr`` (the first ever: ``lr·min(1, 1/|g|₁)``) or, with
    ``line_search_fn="strong_wolfe"``, found by a strong-Wolfe line search. The closure must
    clear the gradients, compute the loss, call ``backward`` and return the loss. One
    parameter group only.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        _validate.non_negative("learning rate", lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_iter * 5 // 4 if max_eval is None else max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    def _flat_grad(self) -> Tensor:
        parts = [
            zeros(p.numel(), dtype=p.dtype, device=p.device)
            if p.grad is None
            else p.grad.reshape(-1)
            for p in self._params
        ]
        return cat(parts, 0)

    def _move_params(self, step: Scalar, direction: Tensor) -> None:
        offset = 0
        for param in self._params:
            count = param.numel()
            piece = direction[offset : offset + count].reshape(param.shape)
            param.add_(piece, alpha=float(step))
            offset += count

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run one L-BFGS minimization (several iterations); returns the first loss."""
        with no_grad():
            return self._minimize(closure)

    def _evaluate(self, closure: Callable[[], Any]) -> tuple[Any, float, Tensor]:
        with enable_grad():
            loss = closure()
        return loss, float(loss), self._flat_grad()

    def _minimize(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        # LBFGS's state is global; it is kept under the first parameter, as in PyTorch.
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        first_loss, loss, flat_grad = self._evaluate(closure)
        evaluations = 1
        state["func_evals"] += 1
        if flat_grad.abs().max().item() <= tolerance_grad:
            return first_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro, h_diag = [], [], [], 1.0
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:  # keep the pair only where the curvature is positive
                    if len(old_dirs) == group["history_size"]:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                d = _two_loop_direction(flat_grad, old_dirs, old_stps, ro, h_diag)
            prev_flat_grad = flat_grad.clone()
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                break

            used = 0
            if group["line_search_fn"] is not None:
                start = [p.clone() for p in self._params]

                def along(step: Scalar, start: list[Tensor] = start, d: Tensor = d) -> tuple:
                    self._move_params(step, d)
                    _, value, grad = self._evaluate(closure)
                    for param, original in zip(self._params, start, strict=True):
                        param.copy_(original)
                    return value, grad

                loss, flat_grad, t, used = strong_wolfe(
                    along, t, d, loss, flat_grad, gtd, max_ls=max_eval - evaluations
                )
                self._move_params(t, d)
                optimal = flat_grad.abs().max().item() <= tolerance_grad
            else:
                self._move_params(t, d)
                optimal = False
                if n_iter != max_iter:  # no re-evaluation after the last iteration
                    _, loss, flat_grad = self._evaluate(closure)
                    optimal = flat_grad.abs().max().item() <= tolerance_grad
                    used = 1
            evaluations += used
            state["func_evals"] += used

            if n_iter == max_iter or evaluations >= max_eval or optimal:
                break
            if d.mul(t).abs().max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(
            d=d,
            t=t,
            old_dirs=old_dirs,
            old_stps=old_stps,
            ro=ro,
            H_diag=h_diag,
            prev_flat_grad=prev_flat_grad,
            prev_loss=prev_loss,
        )
        return first_loss


def _two_loop_direction(
    grad: Tensor, dirs: list[Tensor], steps: list[Tensor], ro: list[Tensor], h_diag: Scalar
) -> Tensor:
    """``-H·grad`` for the L-BFGS inverse-Hessian estimate ``H`` (the two-loop recursion)."""
    q = grad.neg()
    alphas: list[Scalar] = [0.0] * len(dirs)
    for i in reversed(range(len(dirs))):
        alphas[i] = steps[i].dot(q) * ro[i]
        q.add_(dirs[i], alpha=-float(alphas[i]))
    r = q.mul(h_diag)
    for i in range(len(dirs)):
        beta = dirs[i].dot(r) * ro[i]
        r.add_(steps[i], alpha=float(alphas[i] - beta))
    return r
