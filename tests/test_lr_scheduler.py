"""tk.optim.lr_scheduler: learning-rate sequences against PyTorch's over 60 steps (exactly: the
same float operations), state_dict round trips, ReduceLROnPlateau on scripted metrics, errors.

PyTorch is an optional oracle: tests that compare with it skip without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.optim as optim
from tensorkit.optim import lr_scheduler

STEPS = 60
# The schedules here are stepped without optimizer steps; that order's warning has its own test.
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler")


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


class WarmupThenDecay:
    """A callable object with state (LambdaLR saves its attributes)."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup

    def __call__(self, epoch: int) -> float:
        return (epoch + 1) / self.warmup if epoch < self.warmup else 0.95 ** (epoch - self.warmup)


class HalfLife:
    """A callable scale_fn object with state (CyclicLR saves its attributes)."""

    def __init__(self, half_life: float) -> None:
        self.half_life = half_life

    def __call__(self, x: float) -> float:
        return 0.5 ** (x / self.half_life)


def make_optimizer(lib: Any, module: Any, name: str = "SGD", groups: int = 2, **kwargs: Any) -> Any:
    params = [lib.zeros(2, requires_grad=True) for _ in range(groups)]
    return getattr(module, name)(
        [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(params)], **kwargs
    )


# Each case builds a scheduler from a scheduler module ``m`` (tk's or torch's) and an optimizer.
SCHEDULERS: dict[str, tuple[Callable[[Any, Any], Any], dict]] = {
    "StepLR": (lambda m, o: m.StepLR(o, step_size=7, gamma=0.5), {}),
    "StepLR-default-gamma": (lambda m, o: m.StepLR(o, 3), {}),
    "MultiStepLR": (lambda m, o: m.MultiStepLR(o, [30, 5, 12, 12], gamma=0.3), {}),
    "ExponentialLR": (lambda m, o: m.ExponentialLR(o, 0.93), {}),
    "CosineAnnealingLR": (lambda m, o: m.CosineAnnealingLR(o, T_max=13, eta_min=0.001), {}),
    "CosineAnnealingLR-short": (lambda m, o: m.CosineAnnealingLR(o, T_max=4), {}),
    "WarmRestarts": (
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01),
        {},
    ),
    "WarmRestarts-T_mult-1": (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7), {}),
    "LinearLR": (
        lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=17),
        {},
    ),
    "LinearLR-defaults": (lambda m, o: m.LinearLR(o), {}),
    "LambdaLR": (lambda m, o: m.LambdaLR(o, lambda e: 0.97**e + 0.01 * (e % 3)), {}),
    "LambdaLR-per-group": (
        lambda m, o: m.LambdaLR(o, [WarmupThenDecay(5), lambda e: 1.0 / (1 + e)]),
        {},
    ),
    "OneCycleLR": (
        lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=STEPS),
        {"momentum": 0.9},
    ),
    "OneCycleLR-linear-three-phase": (
        lambda m, o: m.OneCycleLR(
            o,
            max_lr=1.0,
            epochs=6,
            steps_per_epoch=10,
            anneal_strategy="linear",
            three_phase=True,
            pct_start=0.25,
            div_factor=10.0,
            final_div_factor=100.0,
        ),
        {"momentum": 0.9},
    ),
    "OneCycleLR-no-momentum": (
        lambda m, o: m.OneCycleLR(o, max_lr=0.5, total_steps=STEPS + 5, cycle_momentum=False),
        {},
    ),
    "SequentialLR": (
        lambda m, o: m.SequentialLR(
            o,
            [
                m.LinearLR(o, 0.1, total_iters=10),
                m.CosineAnnealingLR(o, T_max=20),
                m.ExponentialLR(o, 0.9),
            ],
            milestones=[10, 35],
        ),
        {},
    ),
    "two-chained": (lambda m, o: (m.StepLR(o, 5, 0.5), m.ExponentialLR(o, 0.99))[1], {}),
    "ConstantLR": (lambda m, o: m.ConstantLR(o, factor=0.3, total_iters=9), {}),
    "ConstantLR-defaults": (lambda m, o: m.ConstantLR(o), {}),
    "PolynomialLR": (lambda m, o: m.PolynomialLR(o, total_iters=40, power=2.5), {}),
    "PolynomialLR-defaults": (lambda m, o: m.PolynomialLR(o), {}),
    "MultiplicativeLR": (lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95 + 0.01 * (e % 4)), {}),
    "MultiplicativeLR-per-group": (
        lambda m, o: m.MultiplicativeLR(o, [WarmupThenDecay(5), lambda e: 0.9]),
        {},
    ),
    "CyclicLR-triangular": (
        lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.3], step_size_up=7),
        {"momentum": 0.9},
    ),
    "CyclicLR-triangular2": (
        lambda m, o: m.CyclicLR(
            o,
            base_lr=[0.01, 0.02],
            max_lr=0.2,
            step_size_up=4,
            step_size_down=9,
            mode="triangular2",
            base_momentum=[0.7, 0.75],
            max_momentum=0.95,
        ),
        {"momentum": 0.9},
    ),
    "CyclicLR-exp_range": (
        lambda m, o: m.CyclicLR(
            o, 0.001, 0.1, step_size_up=5, mode="exp_range", gamma=0.97, cycle_momentum=False
        ),
        {},
    ),
    "CyclicLR-scale_fn-iterations": (
        lambda m, o: m.CyclicLR(
            o,
            0.01,
            0.1,
            step_size_up=3,
            scale_fn=HalfLife(20.0),
            scale_mode="iterations",
            cycle_momentum=False,
        ),
        {},
    ),
    "ChainedScheduler": (
        lambda m, o: m.ChainedScheduler(
            [m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, 0.95)]
        ),
        {},
    ),
    "ChainedScheduler-with-optimizer": (
        lambda m, o: m.ChainedScheduler(
            [m.LinearLR(o, 0.2, total_iters=6), m.StepLR(o, 10, 0.5), m.PolynomialLR(o, 50)],
            optimizer=o,
        ),
        {},
    ),
}


def lr_sequence(lib: Any, module: Any, case: str, keys: tuple[str, ...] = ("lr",)) -> tuple:
    build, opt_kwargs = SCHEDULERS[case]
    opt = make_optimizer(lib, module, **opt_kwargs)
    scheduler = build(module.lr_scheduler, opt)

    def snapshot() -> list:
        return [[group[key] for key in keys] for group in opt.param_groups]

    values = [snapshot()]
    last = [scheduler.get_last_lr()]
    for _ in range(STEPS):
        opt.step()
        scheduler.step()
        values.append(snapshot())
        last.append(scheduler.get_last_lr())
    return values, last


@pytest.mark.torch
@pytest.mark.parametrize("case", list(SCHEDULERS))
def test_lr_sequence_matches_torch(torch: Any, case: str) -> None:
    mine, mine_last = lr_sequence(tk, optim, case)
    theirs, theirs_last = lr_sequence(torch, torch.optim, case)
    assert mine == theirs  # bit for bit: the same float operations in the same order
    assert mine_last == theirs_last


@pytest.mark.torch
@pytest.mark.parametrize("case", ["OneCycleLR", "OneCycleLR-linear-three-phase"])
def test_one_cycle_momentum_matches_torch(torch: Any, case: str) -> None:
    keys = ("momentum", "max_momentum", "base_momentum", "initial_lr", "max_lr", "min_lr")
    assert lr_sequence(tk, optim, case, keys)[0] == lr_sequence(torch, torch.optim, case, keys)[0]


def adam_betas(lib: Any, module: Any, make: Callable, steps: int) -> list:
    """Adam's ``betas`` after each of ``steps`` steps under the scheduler that
    ``make(module.lr_scheduler, optimizer)`` builds."""
    opt = make_optimizer(lib, module, "Adam", groups=1)
    scheduler = make(module.lr_scheduler, opt)
    out = []
    for _ in range(steps):
        opt.step()
        scheduler.step()
        out.append(opt.param_groups[0]["betas"])
    return out


@pytest.mark.torch
def test_one_cycle_cycles_adam_beta1_like_torch(torch: Any) -> None:
    def make(schedulers: Any, opt: Any) -> Any:
        return schedulers.OneCycleLR(opt, max_lr=0.01, total_steps=30)

    assert adam_betas(tk, optim, make, 30) == adam_betas(torch, torch.optim, make, 30)


@pytest.mark.torch
def test_deprecated_epoch_argument_uses_the_closed_form_like_torch(torch: Any) -> None:
    def jumps(lib: Any, module: Any) -> list:
        opt = make_optimizer(lib, module)
        schedulers = [
            module.lr_scheduler.StepLR(opt, 4, 0.5),
            module.lr_scheduler.CosineAnnealingLR(opt, T_max=10),
            module.lr_scheduler.LinearLR(opt, total_iters=8),
        ]
        opt.step()
        out = []
        for epoch in (3, 9, 4, 15):
            for scheduler in schedulers:
                with pytest.warns(UserWarning, match="epoch parameter"):
                    scheduler.step(epoch)
                out.append(scheduler.get_last_lr())
        return out

    assert jumps(tk, optim) == jumps(torch, torch.optim)


@pytest.mark.torch
def test_warm_restarts_with_fractional_epochs_match_torch(torch: Any) -> None:
    def run(lib: Any, module: Any) -> list:
        opt = make_optimizer(lib, module)
        scheduler = module.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
        out = []
        for epoch in range(12):
            for batch in range(4):
                scheduler.step(epoch + batch / 4)
                out.append(scheduler.get_last_lr() + [scheduler.T_cur, scheduler.T_i])
        scheduler.step()  # and back to whole steps
        return [*out, scheduler.get_last_lr()]

    assert run(tk, optim) == run(torch, torch.optim)


# ------------------------------------------------------------------------ closed-form checks
def test_step_lr_values() -> None:
    opt = make_optimizer(tk, optim, groups=1)
    scheduler = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    seen = [scheduler.get_last_lr()[0]]
    for _ in range(6):
        opt.step()
        scheduler.step()
        seen.append(opt.param_groups[0]["lr"])
    assert seen == [0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125]
    assert opt.param_groups[0]["initial_lr"] == 0.1 and scheduler.last_epoch == 6


def test_cosine_annealing_follows_the_closed_form() -> None:
    opt = make_optimizer(tk, optim, groups=1)
    scheduler = lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    for epoch in range(1, 31):
        scheduler.step()
        expected = 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * epoch / 10)) / 2
        assert scheduler.get_last_lr()[0] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_one_cycle_starts_peaks_and_ends_where_documented() -> None:
    opt = make_optimizer(tk, optim, groups=1, momentum=0.9)
    scheduler = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=100, pct_start=0.25)
    lrs, momenta = [scheduler.get_last_lr()[0]], [opt.param_groups[0]["momentum"]]
    for _ in range(99):
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
        momenta.append(opt.param_groups[0]["momentum"])
    assert lrs[0] == pytest.approx(1.0 / 25) and momenta[0] == pytest.approx(0.95)
    assert max(lrs) == pytest.approx(1.0) and int(np.argmax(lrs)) == 24
    assert momenta[24] == pytest.approx(0.85)
    assert lrs[-1] == pytest.approx(1.0 / 25 / 1e4)
    with pytest.raises(ValueError, match="Tried to step 101 times"):
        scheduler.step()
        scheduler.step()


def test_sequential_switches_at_the_milestone() -> None:
    opt = make_optimizer(tk, optim, groups=1)
    warmup = lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
    decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    scheduler = lr_scheduler.SequentialLR(opt, [warmup, decay], milestones=[3])
    seen = [scheduler.get_last_lr()[0]]
    for _ in range(5):
        scheduler.step()
        seen.append(scheduler.get_last_lr()[0])
    assert seen == pytest.approx([0.05, 0.075, 0.1, 0.1, 0.05, 0.025])


@pytest.mark.filterwarnings("error:Detected call of `lr_scheduler")
def test_stepping_before_the_optimizer_warns_once() -> None:
    opt = make_optimizer(tk, optim, groups=1)
    scheduler = lr_scheduler.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"before `optimizer.step\(\)`"):
        scheduler.step()
    scheduler.step()  # only the first step is checked, as in PyTorch
    opt = make_optimizer(tk, optim, groups=1)
    scheduler = lr_scheduler.StepLR(opt, 2)
    opt.step()
    scheduler.step()  # the right order: no warning (an error here)


def test_verbose_prints_each_change(capsys: pytest.CaptureFixture) -> None:
    opt = make_optimizer(tk, optim, groups=1)
    scheduler = lr_scheduler.ExponentialLR(opt, gamma=0.5, verbose=True)
    scheduler.step()
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "Adjusting learning rate of group 0 to 1.0000e-01.",
        "Adjusting learning rate of group 0 to 5.0000e-02.",
    ]


# ------------------------------------------------------------------------------- state_dict
@pytest.mark.parametrize("case", list(SCHEDULERS))
def test_state_dict_round_trip(case: str) -> None:
    build, opt_kwargs = SCHEDULERS[case]
    reference_opt = make_optimizer(tk, optim, **opt_kwargs)
    reference = build(lr_scheduler, reference_opt)
    opt = make_optimizer(tk, optim, **opt_kwargs)
    scheduler = build(lr_scheduler, opt)
    for _ in range(20):
        for o, s in ((reference_opt, reference), (opt, scheduler)):
            o.step()
            s.step()
    saved_opt, saved = opt.state_dict(), scheduler.state_dict()
    assert "optimizer" not in saved

    # Resume: build afresh, then load the optimizer's state and the scheduler's.
    resumed_opt = make_optimizer(tk, optim, **opt_kwargs)
    resumed = build(lr_scheduler, resumed_opt)
    resumed_opt.load_state_dict(saved_opt)
    resumed.load_state_dict(saved)
    assert resumed.get_last_lr() == reference.get_last_lr()
    for _ in range(STEPS - 20):
        for o, s in ((reference_opt, reference), (resumed_opt, resumed)):
            o.step()
            s.step()
        assert resumed.get_last_lr() == reference.get_last_lr()
        assert [g["lr"] for g in resumed_opt.param_groups] == reference.get_last_lr()


def test_lambda_state_dict_saves_callable_objects_only() -> None:
    opt = make_optimizer(tk, optim)
    scheduler = lr_scheduler.LambdaLR(opt, [WarmupThenDecay(4), lambda e: 0.5])
    saved = scheduler.state_dict()
    assert saved["lr_lambdas"] == [{"warmup": 4}, None]
    other_fn = WarmupThenDecay(9)
    other = lr_scheduler.LambdaLR(make_optimizer(tk, optim), [other_fn, lambda e: 0.5])
    other.load_state_dict(saved)
    assert other_fn.warmup == 4
    assert saved["lr_lambdas"] == [{"warmup": 4}, None]  # the given dict is left as it was


def test_state_dict_is_a_copy() -> None:
    opt = make_optimizer(tk, optim)
    scheduler = lr_scheduler.MultiStepLR(opt, [2, 4])
    saved = scheduler.state_dict()
    saved["base_lrs"].append(1.0)
    saved["milestones"][9] = 1
    assert len(scheduler.base_lrs) == 2 and 9 not in scheduler.milestones


# ------------------------------------------------------------------------ ReduceLROnPlateau
PLATEAU_CASES = [
    ({}, [5.0, 4.0] + [4.0] * 12 + [3.0] + [3.5] * 15),
    ({"patience": 2, "factor": 0.5}, [1.0, 0.9, 0.95, 0.91, 0.92, 0.8, 0.85, 0.86, 0.87, 0.5] * 3),
    (
        {"mode": "max", "patience": 1, "threshold": 0.1, "threshold_mode": "abs", "cooldown": 2},
        [0.1, 0.15, 0.3, 0.35, 0.38, 0.39, 0.6, 0.6, 0.6, 0.61, 0.62, 0.7, 0.7, 0.7, 0.7] * 2,
    ),
    (
        {"mode": "max", "patience": 0, "threshold": 0.05, "min_lr": [0.05, 0.001], "factor": 0.3},
        [1.0, 1.02, 1.04, 1.2, 1.21, 1.3, 1.25, 1.4, 1.41, 1.42, 1.5, 1.5, 1.5, 1.5] * 2,
    ),
    ({"patience": 0, "factor": 0.999, "eps": 1e-3}, list(range(30, 0, -1)) + [100.0] * 20),
]


def plateau_lrs(lib: Any, module: Any, kwargs: dict, metrics: list) -> list:
    opt = make_optimizer(lib, module)
    scheduler = module.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    lrs = []
    for metric in metrics:
        opt.step()
        scheduler.step(metric)
        lrs.append(scheduler.get_last_lr())
    return lrs


@pytest.mark.torch
@pytest.mark.parametrize(("kwargs", "metrics"), PLATEAU_CASES)
def test_reduce_on_plateau_matches_torch(torch: Any, kwargs: dict, metrics: list) -> None:
    assert plateau_lrs(tk, optim, kwargs, metrics) == plateau_lrs(
        torch, torch.optim, kwargs, metrics
    )


def test_reduce_on_plateau_scripted() -> None:
    opt = make_optimizer(tk, optim, groups=1)
    scheduler = lr_scheduler.ReduceLROnPlateau(opt, patience=2, factor=0.5, cooldown=1, min_lr=0.02)
    metrics = [1.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7]
    lrs = []
    for metric in metrics:
        scheduler.step(metric)
        lrs.append(opt.param_groups[0]["lr"])
    # Bad epochs: 0.6, 0.7, 0.8 -> cut at the 3rd; one cooldown step; then 3 more bad -> cut...
    assert lrs == pytest.approx(
        [0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.02, 0.02]
    )
    assert scheduler.best == 0.5 and scheduler.last_epoch == len(metrics)
    saved = scheduler.state_dict()
    other = lr_scheduler.ReduceLROnPlateau(make_optimizer(tk, optim, groups=1))
    other.load_state_dict(saved)
    assert (other.best, other.patience, other.num_bad_epochs) == (0.5, 2, scheduler.num_bad_epochs)


def test_reduce_on_plateau_accepts_tensor_metrics() -> None:
    opt = make_optimizer(tk, optim, groups=1)
    scheduler = lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    scheduler.step(tk.tensor(2.0))
    scheduler.step(tk.tensor(3.0))
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)


# ----------------------------------------------------------------------------------- errors
def test_scheduler_errors() -> None:
    opt = make_optimizer(tk, optim)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.StepLR([], 3)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        lr_scheduler.StepLR(make_optimizer(tk, optim), 3, last_epoch=5)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        lr_scheduler.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        lr_scheduler.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 0"):
        lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="must define either total_steps OR"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=1.5)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        lr_scheduler.OneCycleLR(opt, max_lr=[1.0], total_steps=10)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        lr_scheduler.OneCycleLR(make_optimizer(tk, optim, "Adagrad"), max_lr=1.0, total_steps=9)
    with pytest.raises(ValueError, match=r"Factor should be < 1\.0\."):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode average is unknown!"):
        lr_scheduler.ReduceLROnPlateau(opt, mode="average")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1])


def test_sequential_errors() -> None:
    opt = make_optimizer(tk, optim)
    first = lr_scheduler.ExponentialLR(opt, 0.9)
    with pytest.raises(ValueError, match="expects number of schedulers provided to be one more"):
        lr_scheduler.SequentialLR(opt, [first, lr_scheduler.StepLR(opt, 2)], milestones=[])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        lr_scheduler.SequentialLR(opt, [first, lr_scheduler.ReduceLROnPlateau(opt)], [2])
    other = lr_scheduler.StepLR(make_optimizer(tk, optim), 2)
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        lr_scheduler.SequentialLR(opt, [first, other], milestones=[2])
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        lr_scheduler.SequentialLR(opt, [], milestones=[])


# ------------------------------------------------------------------- CyclicLR and chaining
@pytest.mark.torch
@pytest.mark.parametrize("case", ["CyclicLR-triangular", "CyclicLR-triangular2"])
def test_cyclic_momentum_matches_torch(torch: Any, case: str) -> None:
    keys = ("momentum", "max_momentum", "base_momentum", "initial_lr")
    assert lr_sequence(tk, optim, case, keys)[0] == lr_sequence(torch, torch.optim, case, keys)[0]


@pytest.mark.torch
def test_cyclic_cycles_adam_beta1_like_torch(torch: Any) -> None:
    def make(schedulers: Any, opt: Any) -> Any:
        return schedulers.CyclicLR(opt, 0.001, 0.01, step_size_up=4)

    assert adam_betas(tk, optim, make, 20) == adam_betas(torch, torch.optim, make, 20)


def test_cyclic_state_dict_saves_scale_fn_objects_only() -> None:
    opt = make_optimizer(tk, optim)
    scheduler = lr_scheduler.CyclicLR(opt, 0.01, 0.1, scale_fn=HalfLife(4.0), cycle_momentum=False)
    saved = scheduler.state_dict()
    assert saved["_scale_fn_custom"] == {"half_life": 4.0}
    fn = HalfLife(9.0)
    other = lr_scheduler.CyclicLR(make_optimizer(tk, optim), 0.01, 0.1, scale_fn=fn)
    other.load_state_dict(saved)
    assert fn.half_life == 4.0 and other._scale_fn_custom is fn
    plain = lr_scheduler.CyclicLR(opt, 0.01, 0.1, scale_fn=lambda x: 1.0, cycle_momentum=False)
    assert plain.state_dict()["_scale_fn_custom"] is None


def test_constant_lr_values() -> None:
    opt = make_optimizer(tk, optim, groups=1)
    scheduler = lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
    seen = [scheduler.get_last_lr()[0]]
    for _ in range(3):
        scheduler.step()
        seen.append(scheduler.get_last_lr()[0])
    assert seen == pytest.approx([0.05, 0.05, 0.1, 0.1])


def test_chained_scheduler_steps_each_in_order() -> None:
    opt = make_optimizer(tk, optim, groups=1)
    chained = lr_scheduler.ChainedScheduler(
        [lr_scheduler.ConstantLR(opt, 0.1, total_iters=2), lr_scheduler.ExponentialLR(opt, 0.5)]
    )
    assert chained.optimizer is opt and chained.get_last_lr() == pytest.approx([0.01])
    seen = []
    for _ in range(3):
        chained.step()
        seen.append(chained.get_last_lr()[0])
    assert seen == pytest.approx([0.005, 0.025, 0.0125])


def test_new_scheduler_errors() -> None:
    opt = make_optimizer(tk, optim)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between"):
        lr_scheduler.ConstantLR(opt, factor=1.5)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 3"):
        lr_scheduler.MultiplicativeLR(opt, [lambda e: 1.0] * 3)
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got float"):
        lr_scheduler.MultiplicativeLR(opt, 0.9)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.CyclicLR([], 0.1, 1.0)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        lr_scheduler.CyclicLR(opt, 0.1, 1.0, mode="sine")
    with pytest.raises(ValueError, match="base_lr must have the same length"):
        lr_scheduler.CyclicLR(opt, [0.1], 1.0)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        lr_scheduler.CyclicLR(make_optimizer(tk, optim, "Adagrad"), 0.1, 1.0)
    with pytest.raises(ValueError, match="ChainedScheduler expects at least one scheduler to be"):
        lr_scheduler.ChainedScheduler([])
    first = lr_scheduler.ExponentialLR(opt, 0.9)
    with pytest.raises(ValueError, match="ChainedScheduler does not support `ReduceLROnPlateau`"):
        lr_scheduler.ChainedScheduler([first, lr_scheduler.ReduceLROnPlateau(opt)])
    other = lr_scheduler.StepLR(make_optimizer(tk, optim), 2)
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        lr_scheduler.ChainedScheduler([first, other])
    with pytest.raises(TypeError, match="at index 1 should have `optimizer` as its attribute"):
        lr_scheduler.ChainedScheduler([first, object()])  # type: ignore[list-item]
