"""Learning-rate schedulers: they set ``group["lr"]`` of an optimizer's groups at each step.

Schedulers are chainable as in PyTorch: most compute the next rate from the current
``group["lr"]`` (so two schedulers on one optimizer compose), and the same float operations
as PyTorch's give the same values. ``step(epoch)`` (deprecated) jumps to ``epoch`` with the
closed form where a scheduler has one.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from copy import deepcopy
from typing import Any, SupportsFloat

from .optimizer import Optimizer

__all__ = [
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "ConstantLR",
    "LinearLR",
    "PolynomialLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "OneCycleLR",
    "SequentialLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
]

_EPOCH_DEPRECATION = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available."
)


_STEP_ORDER = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and "
    "later, you should call them in the opposite order: `optimizer.step()` before "
    "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value "
    "of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _per_group(name: str, optimizer: Optimizer, value: Any) -> list:
    """``value`` for each parameter group: a list or tuple of one per group, or one for all."""
    groups = len(optimizer.param_groups)
    if isinstance(value, list | tuple):
        if len(value) != groups:
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(value)} values, param_groups has {groups}."
            )
        return list(value)
    return [value] * groups


class LRScheduler:
    """Base class: keeps ``last_epoch`` and ``base_lrs`` (the groups' ``initial_lr``) and
    writes ``get_lr()``'s values into the optimizer at each ``step()``.

    Making a scheduler performs its first step (``last_epoch`` -1 becomes 0). Resuming with
    ``last_epoch >= 0`` needs ``initial_lr`` in every group (from a loaded optimizer state).
    ``verbose=True`` prints each new learning rate.
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1, verbose: bool = False) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        for index, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"param 'initial_lr' is not specified in param_groups[{index}] when "
                    "resuming a scheduler with last_epoch >= 0 (load the optimizer's state "
                    "first)"
                )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for ``last_epoch`` (already advanced by ``step``)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr")

    def get_last_lr(self) -> list[float]:
        """The learning rates the last step set."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or, deprecated, jump to ``epoch``) and set the new rates. The
        first call warns if the optimizer has not stepped yet (a schedule shifted by one)."""
        if self._step_count == 1 and not self.optimizer._opt_called:
            warnings.warn(_STEP_ORDER, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_closed_form_lr", None)
            values = closed_form() if closed_form is not None else self.get_lr()
        self._set_lrs(values)

    def _set_lrs(self, values: Iterable[float]) -> None:
        for index, (group, lr) in enumerate(zip(self.optimizer.param_groups, values, strict=True)):
            group["lr"] = lr
            if self.verbose:
                print(f"Adjusting learning rate of group {index} to {lr:.4e}.")
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """A copy of every attribute but the optimizer."""
        return {key: deepcopy(value) for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by ``state_dict()``."""
        self.__dict__.update(deepcopy(state_dict))


def _lr_lambdas(optimizer: Optimizer, lr_lambda: Any) -> list:
    """One ``lr_lambda`` per parameter group: a list or tuple of one per group, or one for all."""
    _check_optimizer(optimizer)
    groups = len(optimizer.param_groups)
    if isinstance(lr_lambda, list | tuple):
        if len(lr_lambda) != groups:
            raise ValueError(f"Expected {groups} lr_lambdas, but got {len(lr_lambda)}")
        return list(lr_lambda)
    return [lr_lambda] * groups


def _callable_state(fn: Callable) -> dict[str, Any] | None:
    """The attributes of a callable object, ``None`` for a plain function (not saved)."""
    return None if isinstance(fn, types.FunctionType) else deepcopy(fn.__dict__)


class _NestedState(LRScheduler):
    """Base of schedulers holding a list attribute (named by ``_nested``) whose items
    ``state_dict()`` saves one by one with ``_save_item`` and ``load_state_dict()`` restores
    with ``_load_item``."""

    _nested: str

    def _save_item(self, item: Any) -> Any:
        raise NotImplementedError

    def _load_item(self, item: Any, saved: Any) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        state = {
            key: deepcopy(value)
            for key, value in self.__dict__.items()
            if key not in ("optimizer", self._nested)
        }
        state[self._nested] = [self._save_item(item) for item in getattr(self, self._nested)]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = {key: value for key, value in state_dict.items() if key != self._nested}
        super().load_state_dict(state)
        for item, saved in zip(getattr(self, self._nested), state_dict[self._nested], strict=True):
            self._load_item(item, saved)


class _LambdaScheduler(_NestedState):
    """Base of the schedulers driven by ``self.lr_lambdas``: their state saves the attributes
    of callable objects, not plain functions."""

    _nested = "lr_lambdas"
    _require_callable = False  # check each lr_lambda is callable when made (MultiplicativeLR)
    lr_lambdas: list[Callable[[int], float]]

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.lr_lambdas = _lr_lambdas(optimizer, lr_lambda)
        if self._require_callable:
            for fn in self.lr_lambdas:
                if not callable(fn):
                    raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch, verbose)

    def _save_item(self, item: Any) -> Any:
        return _callable_state(item)

    def _load_item(self, item: Any, saved: Any) -> None:
        if saved is not None:
            item.__dict__.update(deepcopy(saved))


class _SchedulerList(_NestedState):
    """Base of the schedulers that drive ``self._schedulers``: their state holds each one's."""

    _nested = "_schedulers"
    _schedulers: list[LRScheduler]

    def _save_item(self, item: Any) -> Any:
        return item.state_dict()

    def _load_item(self, item: Any, saved: Any) -> None:
        item.load_state_dict(saved)


class LambdaLR(_LambdaScheduler):
    """``lr = base_lr · lr_lambda(epoch)``, with one function for all groups or one per group.

    ``state_dict()`` saves the attributes of callable objects, not plain functions.
    """

    def get_lr(self) -> list[float]:
        return [
            base_lr * factor(self.last_epoch)
            for factor, base_lr in zip(self.lr_lambdas, self.base_lrs, strict=True)
        ]


class MultiplicativeLR(_LambdaScheduler):
    """Multiply the learning rate by ``lr_lambda(epoch)`` every epoch, with one function for
    all groups or one per group.

    ``state_dict()`` saves the attributes of callable objects, not plain functions.
    """

    _require_callable = True

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        return [
            lr * factor(self.last_epoch)
            for factor, lr in zip(self.lr_lambdas, self._current_lrs(), strict=True)
        ]


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(
        self,
        optimizer: Optimizer,
        step_size: int,
        gamma: float = 0.1,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone epoch (a milestone listed
    twice multiplies by ``gamma²``)."""

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch."""

    def __init__(
        self, optimizer: Optimizer, gamma: float, last_epoch: int = -1, verbose: bool = False
    ) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the learning rate by ``factor`` for the first ``total_iters`` epochs, then
    restore it."""

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [
            base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
            for base in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """Scale the learning rate by a factor going linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` epochs, then keep it."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal "
                "to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        change = self.end_factor - self.start_factor
        ratio = 1.0 + change / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * change
        )
        return [lr * ratio for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        return [
            base * (self.start_factor + (self.end_factor - self.start_factor) * progress)
            for base in self.base_lrs
        ]


class PolynomialLR(LRScheduler):
    """Decay the learning rate as ``base_lr·(1 - epoch/total_iters)^power`` until
    ``total_iters``, then keep it."""

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        decay = (
            (1.0 - self.last_epoch / self.total_iters)
            / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [lr * decay for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (1.0 - progress) ** self.power for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneal from the base rate to ``eta_min`` along half a cosine over ``T_max`` epochs (and
    back up over the next ``T_max``: the schedule is periodic), in PyTorch's recursive form."""

    def __init__(
        self,
        optimizer: Optimizer,
        T_max: int,  # noqa: N803 (PyTorch's name)
        eta_min: float = 0.0,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        epoch, period, low = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and epoch > 0:
            return [
                low + (base - low) * (1 + math.cos(epoch * math.pi / period)) / 2
                for base in self.base_lrs
            ]
        if (epoch - 1 - period) % (2 * period) == 0:
            return [
                lr + (base - low) * (1 - math.cos(math.pi / period)) / 2
                for lr, base in zip(self._current_lrs(), self.base_lrs, strict=True)
            ]
        ratio = (1 + math.cos(math.pi * epoch / period)) / (
            1 + math.cos(math.pi * (epoch - 1) / period)
        )
        return [ratio * (lr - low) + low for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        cosine = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base rate to ``eta_min`` over ``T_i`` epochs, restarting at
    the base rate; the first period is ``T_0`` and each next one ``T_mult`` times longer
    (SGDR). ``step(epoch)`` may take fractional epochs."""

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,  # noqa: N803 (PyTorch's name)
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, float | int):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        cosine = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (which may be fractional, e.g.
        ``epoch + batch / batches``)."""
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch < self.T_0:
            self.T_i = self.T_0
            self.T_cur = epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            restarts = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**restarts - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**restarts
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())


_TWO_PHASES = (
    ("initial_lr", "max_lr", "max_momentum", "base_momentum"),
    ("max_lr", "min_lr", "base_momentum", "max_momentum"),
)
_THREE_PHASES = (
    ("initial_lr", "max_lr", "max_momentum", "base_momentum"),
    ("max_lr", "initial_lr", "base_momentum", "max_momentum"),
    ("initial_lr", "min_lr", "max_momentum", "max_momentum"),
)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2017), stepped once per batch.

    The rate rises from ``max_lr/div_factor`` to ``max_lr`` over the first ``pct_start`` of
    ``total_steps`` (or ``epochs·steps_per_epoch``), then falls to
    ``initial_lr/final_div_factor`` (``three_phase``: falls back to the initial rate
    symmetrically, then to the minimum), by cosine or linear annealing. With
    ``cycle_momentum`` the momentum (or Adam's beta1) moves the opposite way between
    ``base_momentum`` and ``max_momentum``.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self.anneal_strategy = anneal_strategy
        if three_phase:
            ends = [
                float(pct_start * self.total_steps) - 1,
                float(2 * pct_start * self.total_steps) - 2,
                self.total_steps - 1,
            ]
            keys = _THREE_PHASES
        else:
            ends = [float(pct_start * self.total_steps) - 1, self.total_steps - 1]
            keys = _TWO_PHASES
        self._phases = [(end, *names) for end, names in zip(ends, keys, strict=True)]

        if last_epoch == -1:
            for group, peak in zip(
                optimizer.param_groups, _per_group("max_lr", optimizer, max_lr), strict=True
            ):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, highs, lows, strict=True):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch, verbose)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for index, (end, lr_from, lr_to, momentum_from, momentum_to) in enumerate(self._phases):
                if step <= end or index == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[momentum_from], group[momentum_to], pct)
                        self._set_momentum(group, momentum)
                    break
                start = end
        return lrs


def _total_steps(total_steps: int | None, epochs: int | None, steps_per_epoch: int | None) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
    if not isinstance(epochs, int) or epochs <= 0:
        raise ValueError(f"Expected positive integer epochs, but got {epochs}")
    if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
        raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
    return epochs * steps_per_epoch


class CyclicLR(LRScheduler):
    """Cycle the learning rate between ``base_lr`` and ``max_lr`` (Smith, 2017), stepped once
    per batch: up over ``step_size_up`` steps, down over ``step_size_down`` (default the same).

    The amplitude is scaled by ``mode``: ``"triangular"`` (constant), ``"triangular2"``
    (halved each cycle), ``"exp_range"`` (``gamma**iteration``), or by ``scale_fn`` of the
    cycle or iteration (``scale_mode``). With ``cycle_momentum`` the momentum (or Adam's
    beta1) moves the opposite way between ``base_momentum`` and ``max_momentum``.
    ``state_dict()`` saves the attributes of a callable ``scale_fn`` object, not a function.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_mode()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for high, low, group in zip(
                    self.max_momentums, self.base_momentums, optimizer.param_groups, strict=True
                ):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch, verbose)
        self.base_lrs = base_lrs

    def _init_scale_mode(self) -> None:
        if self._scale_fn_custom is None:
            self.scale_mode = "iterations" if self.mode == "exp_range" else "cycle"

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle or iteration ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            base + (high - base) * scale_factor * scale
            for base, high in zip(self.base_lrs, self.max_lrs, strict=True)
        ]
        if self.cycle_momentum:
            for low, high, group in zip(
                self.base_momentums, self.max_momentums, self.optimizer.param_groups, strict=True
            ):
                self._set_momentum(group, high - (high - low) * scale_factor * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        state = {
            key: deepcopy(value)
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "_scale_fn_custom")
        }
        fn = self._scale_fn_custom
        state["_scale_fn_custom"] = None if fn is None else _callable_state(fn)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = {key: value for key, value in state_dict.items() if key != "_scale_fn_custom"}
        super().load_state_dict(state)
        saved = state_dict["_scale_fn_custom"]
        if saved is not None:
            self._scale_fn_custom.__dict__.update(deepcopy(saved))
        self._init_scale_mode()


def _check_schedulers(name: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
    """The checks SequentialLR and ChainedScheduler make on the schedulers they drive."""
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{name} at index {index} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at "
                f"index {index} in the given schedulers sequence."
            )
        if scheduler.optimizer is not optimizer:
            raise ValueError(
                f"{name} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(scheduler).__name__} at index {index} has "
                f"{scheduler.optimizer}, which is different from {type(optimizer).__name__}."
            )


class SequentialLR(_SchedulerList):
    """Run ``schedulers`` one after another, switching at the ``milestones`` epochs (each
    next scheduler starts from its epoch 0, in closed form where it has one)."""

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: Sequence[LRScheduler],
        milestones: Sequence[int],
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        _check_schedulers(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than "
                f"the number of milestone points, but got number of schedulers {len(schedulers)} "
                f"and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        self.verbose = verbose
        # Undo the first step each scheduler took when it was made, then start the first one.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:
            _undo_initial_step(scheduler)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


def _undo_initial_step(scheduler: LRScheduler) -> None:
    children = getattr(scheduler, "_schedulers", None)
    if children is None:
        scheduler.last_epoch -= 1
    else:
        for child in children:
            _undo_initial_step(child)


class ChainedScheduler(_SchedulerList):
    """Step every scheduler in ``schedulers`` at each ``step()``, in order (their changes to
    the rates compose)."""

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None
    ) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(
                f"{name} expects at least one scheduler to be chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers(name, optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._current_lrs()

    def step(self) -> None:  # type: ignore[override]
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` when a metric has not improved for more than
    ``patience`` steps, then wait ``cooldown`` steps before counting again.

    Improvement means below ``best·(1 - threshold)`` (``mode="min"``, ``threshold_mode="rel"``),
    below ``best - threshold`` (``"abs"``), or the same upwards with ``mode="max"``. Rates never
    go below ``min_lr``, and changes smaller than ``eps`` are skipped.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0,
        eps: float = 1e-8,
        verbose: bool = False,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        _check_optimizer(optimizer)
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode} is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode} is unknown!")
        self.optimizer = optimizer
        self.factor = factor
        if isinstance(min_lr, list | tuple):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr: float | None = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.verbose = verbose
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self._reset()

    def _reset(self) -> None:
        self.best = math.inf if self.mode == "min" else -math.inf
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, current: float, best: float) -> bool:
        """Whether ``current`` improves on ``best`` by the threshold."""
        if self.mode == "min":
            if self.threshold_mode == "rel":
                return current < best * (1.0 - self.threshold)
            return current < best - self.threshold
        if self.threshold_mode == "rel":
            return current > best * (self.threshold + 1.0)
        return current > best + self.threshold

    def step(self, metrics: SupportsFloat, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this step's metric and reduce the rates if it has stalled."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self, epoch: int) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs from "
                    f"when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually "
                    "due to a new param group being added to the optimizer. Please modify the "
                    "`min_lrs` field to match the length of the `optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for index, group in enumerate(groups):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[index])
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr
                if self.verbose:
                    print(
                        f"Epoch {epoch}: reducing learning rate of group {index} to {new_lr:.4e}."
                    )
