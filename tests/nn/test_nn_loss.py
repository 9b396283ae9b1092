"""Losses (functional and modules) against PyTorch across their options, gradgradchecks and
misuse errors."""

from __future__ import annotations

import numpy as np
import pytest
from harness import check_grads, check_torch

import tensorkit as tk
import tensorkit.nn as nn
import tensorkit.nn.functional as F  # noqa: N812

RNG = np.random.default_rng(0)
REDUCTIONS = ["none", "mean", "sum"]


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "huber_loss"])
def test_regression_losses(name, reduction, weighted):
    torch = _torch()
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    x[0, 0] = y[0, 0]  # a zero difference (the kink of l1)
    args = [x, y]
    if weighted:
        args.append(RNG.random((3, 4)))
    check_torch(
        lambda *t: getattr(F, name)(t[0], t[1], reduction=reduction, weight=_third(t)),
        lambda *t: getattr(torch.nn.functional, name)(
            t[0], t[1], reduction=reduction, weight=_third(t)
        ),
        *args,
    )


def _third(values):
    return values[2] if len(values) > 2 else None


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0])
def test_smooth_l1_and_huber_parameters(reduction, beta):
    torch = _torch()
    x, y = RNG.standard_normal(8) * 2, RNG.standard_normal(8)
    check_torch(
        lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
        lambda a, b: torch.nn.functional.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
        x,
        y,
    )
    delta = beta + 0.3
    check_torch(
        lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=delta),
        lambda a, b: torch.nn.functional.huber_loss(a, b, reduction=reduction, delta=delta),
        x,
        y,
    )


def test_regression_gradgradchecks_and_broadcast_warning():
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    for fn in (F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss):
        check_grads(fn, x, y)
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(tk.ones(2, 3), tk.ones(3))
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(tk.ones(2), tk.ones(2), weight=tk.ones(3))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.mse_loss(tk.ones(2), tk.ones(2), reduction="avg")
    with pytest.raises(RuntimeError, match="does not support non-positive values for delta"):
        F.huber_loss(tk.ones(2), tk.zeros(2), delta=0.0)
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        assert F.mse_loss(tk.ones(2), tk.zeros(2), size_average=False).item() == 2.0


# -------------------------------------------------------------------- cross entropy
CE_CASES = [
    {},
    {"weight": True},
    {"ignore_index": 1},
    {"weight": True, "ignore_index": 2},
    {"label_smoothing": 0.2},
    {"label_smoothing": 0.1, "weight": True, "ignore_index": 0},
]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", range(len(CE_CASES)))
@pytest.mark.parametrize("spatial", [False, True])
def test_cross_entropy_class_indices(case, reduction, spatial):
    torch = _torch()
    options = dict(CE_CASES[case])
    shape = (4, 3, 2) if spatial else (5, 3)
    logits = RNG.standard_normal(shape)
    target = RNG.integers(0, 3, (shape[0], *shape[2:]))
    target.flat[0] = options.get("ignore_index", 0)
    weight = RNG.random(3) + 0.5 if options.pop("weight", False) else None

    def mine(x, t):
        w = None if weight is None else tk.tensor(weight)
        return F.cross_entropy(x, t, w, reduction=reduction, **options)

    def theirs(x, t):
        w = None if weight is None else torch.tensor(weight)
        return torch.nn.functional.cross_entropy(x, t, w, reduction=reduction, **options)

    check_torch(mine, theirs, logits, target)


@pytest.mark.parametrize("options", [{}, {"weight": True}, {"label_smoothing": 0.2}])
def test_cross_entropy_with_every_target_ignored_is_nan_with_zero_gradient(options):
    """PyTorch's mean over no counted target is 0 / 0, but its backward visits only counted
    targets, so the gradient is zero, not NaN."""
    torch = _torch()
    logits = RNG.standard_normal((5, 3))
    target = np.full(5, 2)
    weight = RNG.random(3) + 0.5 if options.get("weight") else None
    extra = {k: v for k, v in options.items() if k != "weight"}

    def mine(x, t):
        w = None if weight is None else tk.tensor(weight)
        return F.cross_entropy(x, t, w, ignore_index=2, **extra)

    def theirs(x, t):
        w = None if weight is None else torch.tensor(weight)
        return torch.nn.functional.cross_entropy(x, t, w, ignore_index=2, **extra)

    check_torch(mine, theirs, logits, target)
    x = tk.tensor(logits, requires_grad=True)
    loss = mine(x, tk.tensor(target))
    loss.backward()
    assert np.isnan(loss.item()) and not np.any(x.grad.numpy())


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_class_probabilities(reduction, smoothing, weighted):
    torch = _torch()
    logits = RNG.standard_normal((4, 3, 2))
    probs = RNG.random((4, 3, 2))
    probs /= probs.sum(1, keepdims=True)
    weight = RNG.random(3) + 0.5 if weighted else None

    def run(fn, lib):
        def call(x, p):
            w = None if weight is None else lib.tensor(weight)
            return fn(x, p, w, reduction=reduction, label_smoothing=smoothing)

        return call

    check_torch(
        run(F.cross_entropy, tk), run(torch.nn.functional.cross_entropy, torch), logits, probs
    )


def test_cross_entropy_unbatched_and_gradgradcheck():
    torch = _torch()
    check_torch(
        F.cross_entropy, torch.nn.functional.cross_entropy, RNG.standard_normal(4), np.array(2)
    )
    target = tk.tensor([0, 2, 1])
    check_grads(
        lambda x: F.cross_entropy(x, target, label_smoothing=0.1), RNG.standard_normal((3, 3))
    )
    probs = RNG.random((3, 3))
    check_grads(lambda x, p: F.cross_entropy(x, p), RNG.standard_normal((3, 3)), probs)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = tk.tensor([[1000.0, 0.0, -1000.0]], requires_grad=True)
    loss = F.cross_entropy(logits, tk.tensor([0]))
    loss.backward()
    assert loss.item() == 0.0 and np.isfinite(logits.grad.numpy()).all()


def test_cross_entropy_and_nll_errors():
    x = tk.randn(3, 4)
    with pytest.raises(
        RuntimeError, match="expected target dtype to be Long or Byte, but got Float"
    ):
        F.cross_entropy(x, tk.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(RuntimeError, match="but got Int"):
        F.cross_entropy(x, tk.tensor([0, 1, 2], dtype=tk.int32))
    with pytest.raises(
        RuntimeError,
        match="Expected floating point type for target with class probabilities, got Long",
    ):
        F.cross_entropy(x, tk.zeros(3, 4, dtype=tk.int64))
    with pytest.raises(
        ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"
    ):
        F.cross_entropy(x, tk.tensor([0, 1]))
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(x, tk.tensor([0, 1, 5]))
    with pytest.raises(
        RuntimeError, match="ignore_index is not supported for floating point target"
    ):
        F.cross_entropy(x, tk.rand(3, 4), ignore_index=1)
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 3\]"):
        F.nll_loss(tk.randn(2, 3, 4), tk.zeros(2, 3, dtype=tk.int64))
    with pytest.raises(
        RuntimeError, match="weight tensor should be defined either for all 4 classes"
    ):
        F.nll_loss(x, tk.tensor([0, 1, 2]), weight=tk.ones(3))
    for target in (tk.tensor([0, 1, 2]), tk.rand(3, 4)):
        with pytest.raises(
            RuntimeError, match="weight tensor should be defined either for all 4 classes"
        ):
            F.cross_entropy(x, target, weight=tk.ones(5))


def test_cross_entropy_accepts_byte_targets():
    torch = _torch()
    logits, target = RNG.standard_normal((3, 4)), np.array([0, 3, 1], dtype=np.uint8)
    check_torch(F.cross_entropy, torch.nn.functional.cross_entropy, logits, target)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_with_weight_and_ignore_index(reduction):
    torch = _torch()
    log_probs = RNG.standard_normal((6, 4))
    target = np.array([0, 3, 1, 1, 2, 3])
    weight = np.array([0.2, 1.0, 3.0, 0.5])
    check_torch(
        lambda x, t: F.nll_loss(x, t, tk.tensor(weight), ignore_index=3, reduction=reduction),
        lambda x, t: torch.nn.functional.nll_loss(
            x, t, torch.tensor(weight), ignore_index=3, reduction=reduction
        ),
        log_probs,
        target,
    )


def test_all_ignored_mean_is_nan_like_torch():
    loss = F.cross_entropy(tk.randn(2, 3), tk.tensor([-100, -100]))
    assert np.isnan(loss.item())


# --------------------------------------------------------------------------- binary
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction, weighted):
    torch = _torch()
    probs = RNG.random((3, 4)) * 0.98 + 0.01
    target = RNG.random((3, 4))
    weight = RNG.random(4) if weighted else None

    def run(fn, lib):
        return lambda p, t: fn(
            p, t, None if weight is None else lib.tensor(weight), reduction=reduction
        )

    check_torch(
        run(F.binary_cross_entropy, tk),
        run(torch.nn.functional.binary_cross_entropy, torch),
        probs,
        target,
    )


def test_binary_cross_entropy_clamps_logs_and_checks_range():
    torch = _torch()
    # saturated probabilities: finite input gradients (no NaN), infinite target gradients
    probs = np.array([0.0, 1.0, 0.5, 1.0, 0.0])
    target = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    check_torch(F.binary_cross_entropy, torch.nn.functional.binary_cross_entropy, probs, target)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(tk.tensor([1.5]), tk.tensor([1.0]))
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(tk.tensor([0.5]), tk.tensor([1.5]))
    with pytest.raises(ValueError, match="Using a target size"):
        F.binary_cross_entropy(tk.rand(3), tk.rand(4))
    check_grads(F.binary_cross_entropy, RNG.random(4) * 0.8 + 0.1, RNG.random(4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", ["plain", "weight", "pos_weight", "both"])
def test_bce_with_logits(reduction, options):
    torch = _torch()
    logits = RNG.standard_normal((3, 4)) * 3
    logits[0, :2] = [0.0, 60.0]
    target = RNG.random((3, 4))
    weight = RNG.random(4) if options in ("weight", "both") else None
    pos_weight = RNG.random(4) * 3 if options in ("pos_weight", "both") else None

    def run(fn, lib):
        def call(x, t):
            return fn(
                x,
                t,
                None if weight is None else lib.tensor(weight),
                reduction=reduction,
                pos_weight=None if pos_weight is None else lib.tensor(pos_weight),
            )

        return call

    check_torch(
        run(F.binary_cross_entropy_with_logits, tk),
        run(torch.nn.functional.binary_cross_entropy_with_logits, torch),
        logits,
        target,
    )


def test_bce_with_logits_gradgradcheck_and_errors():
    pos = RNG.random(3) + 0.5
    check_grads(
        lambda x, t, p: F.binary_cross_entropy_with_logits(x, t, pos_weight=p),
        RNG.standard_normal((2, 3)),
        RNG.random((2, 3)),
        pos,
    )
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(tk.rand(3), tk.rand(4))


# ------------------------------------------------------------------------------ KL
@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    torch = _torch()
    log_q = np.log(RNG.dirichlet(np.ones(4), 3))
    p = RNG.dirichlet(np.ones(4), 3)
    target = np.log(p) if log_target else p

    def mine(a, b):
        return F.kl_div(a, b, reduction=reduction, log_target=log_target)

    def theirs(a, b):
        return torch.nn.functional.kl_div(a, b, reduction=reduction, log_target=log_target)

    check_torch(mine, theirs, log_q, target)
    if not log_target:  # a zero target contributes 0 (torch's target gradient there is nan)
        target[0, 0] = 0.0
        check_torch(mine, theirs, log_q, target, grad=False)


def test_kl_div_mean_warns_like_torch():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(tk.zeros(2, 2), tk.ones(2, 2))
    check_grads(
        lambda a, b: F.kl_div(a, b, reduction="batchmean"),
        RNG.standard_normal((2, 3)),
        RNG.random((2, 3)),
    )


# ---------------------------------------------------------------------- margin losses
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_cosine_embedding_and_margin_ranking(reduction, margin):
    torch = _torch()
    tf = torch.nn.functional
    x1, x2 = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 3))
    y = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    check_torch(
        lambda a, b, t: F.cosine_embedding_loss(a, b, t, margin, reduction=reduction),
        lambda a, b, t: tf.cosine_embedding_loss(a, b, t, margin, reduction=reduction),
        x1,
        x2,
        y,
    )
    s1, s2 = RNG.standard_normal(5), RNG.standard_normal(5)
    check_torch(
        lambda a, b, t: F.margin_ranking_loss(a, b, t, margin, reduction=reduction),
        lambda a, b, t: tf.margin_ranking_loss(a, b, t, margin, reduction=reduction),
        s1,
        s2,
        y,
    )
    check_torch(
        lambda a, t: F.hinge_embedding_loss(a, t, margin + 1, reduction=reduction),
        lambda a, t: tf.hinge_embedding_loss(a, t, margin + 1, reduction=reduction),
        s1,
        y,
    )
    check_torch(
        lambda a: F.soft_margin_loss(a, tk.tensor(y), reduction=reduction),
        lambda a: tf.soft_margin_loss(a, torch.tensor(y), reduction=reduction),
        s1,
    )


def test_margin_losses_gradgradcheck_and_errors():
    y = tk.tensor([1.0, -1.0, 1.0], dtype=tk.float64)
    check_grads(
        lambda a, b: F.cosine_embedding_loss(a, b, y, 0.1),
        RNG.standard_normal((3, 4)),
        RNG.standard_normal((3, 4)),
    )
    check_grads(
        lambda a, b: F.margin_ranking_loss(a, b, y, 0.1),
        RNG.standard_normal(3),
        RNG.standard_normal(3),
    )
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        F.margin_ranking_loss(tk.ones(3), tk.ones(3), tk.ones(1, 3))
    with pytest.raises(RuntimeError, match="should have the same number of dimensions"):
        F.cosine_embedding_loss(tk.ones(3), tk.ones(2, 3), tk.ones(2))


# --------------------------------------------------------------------------- modules
def test_loss_modules_match_functional_and_torch():
    torch = _torch()
    logits = RNG.standard_normal((4, 3)).astype(np.float32)
    target = np.array([0, 2, 1, 2])
    weight = np.array([1.0, 2.0, 0.5], dtype=np.float32)
    pairs = [
        (
            nn.CrossEntropyLoss(tk.tensor(weight), label_smoothing=0.1, ignore_index=1),
            torch.nn.CrossEntropyLoss(torch.tensor(weight), label_smoothing=0.1, ignore_index=1),
        ),
        (nn.NLLLoss(reduction="sum"), torch.nn.NLLLoss(reduction="sum")),
    ]
    for mine, theirs in pairs:
        check_torch(mine, theirs, logits, target)
    x, y = RNG.random((2, 3)).astype(np.float32), RNG.random((2, 3)).astype(np.float32)
    for name, kwargs in [
        ("MSELoss", {}),
        ("L1Loss", {"reduction": "sum"}),
        ("SmoothL1Loss", {"beta": 0.5}),
        ("HuberLoss", {"delta": 0.3}),
        ("BCELoss", {}),
        ("BCEWithLogitsLoss", {"pos_weight": [2.0, 1.0, 0.5]}),
        ("KLDivLoss", {"reduction": "batchmean", "log_target": True}),
    ]:
        mine_kwargs = {k: tk.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        theirs_kwargs = {
            k: torch.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()
        }
        check_torch(
            getattr(nn, name)(**mine_kwargs), getattr(torch.nn, name)(**theirs_kwargs), x, y
        )
    sign = np.array([1.0, -1.0], dtype=np.float32)
    check_torch(nn.CosineEmbeddingLoss(0.2), torch.nn.CosineEmbeddingLoss(0.2), x, y, sign)
    check_torch(nn.MarginRankingLoss(0.2), torch.nn.MarginRankingLoss(0.2), x[:, 0], y[:, 0], sign)
    check_torch(nn.HingeEmbeddingLoss(), torch.nn.HingeEmbeddingLoss(), x[:, 0], sign)
    check_torch(
        lambda a: nn.SoftMarginLoss()(a, tk.tensor(sign)),
        lambda a: torch.nn.SoftMarginLoss()(a, torch.tensor(sign)),
        x[:, 0],
    )


def test_loss_module_buffers_and_legacy_arguments():
    loss = nn.CrossEntropyLoss(weight=tk.ones(3))
    assert [n for n, _ in loss.named_buffers()] == ["weight"]
    assert "weight" in loss.state_dict()
    assert nn.BCEWithLogitsLoss(pos_weight=tk.ones(2)).state_dict()["pos_weight"].shape == (2,)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.MSELoss(reduce=False).reduction == "none"


# -------------------------------------------------------- triplet, likelihoods, multi-class
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [{}, {"p": 1.0, "margin": 0.5}, {"swap": True}])
def test_triplet_margin_loss(reduction, options):
    torch = _torch()
    a, p, n = (RNG.standard_normal((5, 3)) for _ in range(3))
    check_torch(
        lambda *t: F.triplet_margin_loss(*t, reduction=reduction, **options),
        lambda *t: torch.nn.functional.triplet_margin_loss(*t, reduction=reduction, **options),
        a,
        p,
        n,
    )
    check_grads(lambda *t: F.triplet_margin_loss(*t, **options), a, p, n)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss(reduction, log_input, full):
    torch = _torch()
    x = RNG.standard_normal((3, 4)) if log_input else RNG.random((3, 4)) + 0.1
    target = RNG.integers(0, 4, (3, 4)).astype(np.float64)
    options = {"log_input": log_input, "full": full, "reduction": reduction}
    check_torch(
        lambda a, b: F.poisson_nll_loss(a, b, **options),
        lambda a, b: torch.nn.functional.poisson_nll_loss(a, b, **options),
        x,
        target,
        grad=not full,  # torch's target gradient of Stirling's masked term is nan at 0
    )
    check_torch(
        lambda a: F.poisson_nll_loss(a, tk.tensor(target), **options),
        lambda a: torch.nn.functional.poisson_nll_loss(a, torch.tensor(target), **options),
        x,
    )
    check_grads(lambda a: F.poisson_nll_loss(a, tk.tensor(target), **options), x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1), "float"])
def test_gaussian_nll_loss(reduction, var_shape):
    torch = _torch()
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    if var_shape == "float":
        check_torch(
            lambda a, b: F.gaussian_nll_loss(a, b, 0.7, full=True, reduction=reduction),
            lambda a, b: torch.nn.functional.gaussian_nll_loss(
                a, b, 0.7, full=True, reduction=reduction
            ),
            x,
            y,
        )
        return
    var = RNG.random(var_shape) + 0.1
    var.flat[0] = 1e-9  # clamped at eps, gradient passes as if not
    check_torch(
        lambda *t: F.gaussian_nll_loss(*t, reduction=reduction),
        lambda *t: torch.nn.functional.gaussian_nll_loss(*t, reduction=reduction),
        x,
        y,
        var,
    )
    check_grads(F.gaussian_nll_loss, x, y, RNG.random(var_shape) + 0.5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss(reduction, weighted):
    torch = _torch()
    x, target = RNG.standard_normal((3, 4)), RNG.integers(0, 2, (3, 4)).astype(np.float64)
    weight = RNG.random(4) + 0.5 if weighted else None

    def run(fn, lib):
        w = None if weight is None else lib.tensor(weight)
        return lambda a, b: fn(a, b, w, reduction=reduction)

    check_torch(
        run(F.multilabel_soft_margin_loss, tk),
        run(torch.nn.functional.multilabel_soft_margin_loss, torch),
        x,
        target,
    )
    check_grads(run(F.multilabel_soft_margin_loss, tk), x, target)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(reduction, p, weighted):
    torch = _torch()
    x, target = RNG.standard_normal((5, 4)), np.array([0, 3, 1, 1, 2])
    weight = RNG.random(4) + 0.5 if weighted else None

    def run(fn, lib):
        w = None if weight is None else lib.tensor(weight)
        return lambda a, t: fn(a, t, p, 0.8, w, reduction=reduction)

    check_torch(
        run(F.multi_margin_loss, tk), run(torch.nn.functional.multi_margin_loss, torch), x, target
    )
    for t in (np.array([2]), np.array(2)):  # one sample: target of shape (1,) or ()
        check_torch(
            run(F.multi_margin_loss, tk),
            run(torch.nn.functional.multi_margin_loss, torch),
            x[0],
            t,
        )
    check_grads(lambda a: run(F.multi_margin_loss, tk)(a, tk.tensor(target)), x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    torch = _torch()
    x = RNG.standard_normal((3, 4))
    target = np.array([[3, 0, -1, 1], [1, 1, 2, -1], [0, 1, 2, 3]])  # a repeat; all labels
    check_torch(
        lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction),
        lambda a, t: torch.nn.functional.multilabel_margin_loss(a, t, reduction=reduction),
        x,
        target,
    )
    check_torch(
        lambda a, t: F.multilabel_margin_loss(a, t, reduction=reduction),
        lambda a, t: torch.nn.functional.multilabel_margin_loss(a, t, reduction=reduction),
        x[0],
        target[0],
    )
    check_grads(lambda a: F.multilabel_margin_loss(a, tk.tensor(target)), x)


def test_new_loss_errors():
    x = tk.randn(2, 4)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D inputs"):
        F.triplet_margin_loss(x, tk.randn(4), x)
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0"):
        nn.TripletMarginLoss(margin=0)
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, x, -tk.ones(2, 4))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, tk.ones(3))
    with pytest.raises(ValueError, match="avg is not valid"):
        F.gaussian_nll_loss(x, x, tk.ones(2, 4), reduction="avg")
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, tk.tensor([0, 1]), p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected weight to be None or 1D tensor, got 2D"):
        nn.MultiMarginLoss(weight=tk.ones(1, 4))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, tk.tensor([0, 4]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2\], but got \[3\]"):
        F.multi_margin_loss(x, tk.tensor([0, 1, 1]))
    with pytest.raises(RuntimeError, match=r"inconsistent weight size, expected 4 but got \[3\]"):
        F.multi_margin_loss(x, tk.tensor([0, 1]), weight=tk.ones(3))
    with pytest.raises(RuntimeError, match=r"Expected non-empty vector or matrix"):
        F.multi_margin_loss(tk.randn(2, 3, 4), tk.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"inconsistent target size: \[2\] for input"):
        F.multilabel_margin_loss(x, tk.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="argument #2 'target' is out of range"):
        F.multilabel_margin_loss(x, tk.tensor([[0, 7, -1, 1], [0, -1, 0, 0]]))


def test_new_loss_modules_match_torch():
    torch = _torch()
    x, y = RNG.standard_normal((3, 4)), RNG.random((3, 4))
    labels, classes = np.array([0, 3, 1]), np.array([[3, -1, 0, 0], [1, 2, -1, 0], [0, 1, 2, 3]])
    weight = np.array([0.5, 1.0, 2.0, 1.5])
    cases = [
        ("TripletMarginLoss", {"margin": 0.5, "swap": True}, (x, y, y[::-1].copy())),
        ("PoissonNLLLoss", {"log_input": False, "full": True}, (y + 0.1, y * 3)),
        ("GaussianNLLLoss", {"full": True, "reduction": "sum"}, (x, x[::-1].copy(), y + 0.1)),
        ("MultiLabelSoftMarginLoss", {"weight": weight}, (x, y.round())),
        ("MultiMarginLoss", {"p": 2, "margin": 0.5, "weight": weight}, (x, labels)),
        ("MultiLabelMarginLoss", {"reduction": "none"}, (x, classes)),
    ]
    for name, kwargs, arrays in cases:
        mine = {k: tk.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        theirs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        check_torch(getattr(nn, name)(**mine), getattr(torch.nn, name)(**theirs), *arrays)
        assert repr(getattr(nn, name)(**mine)) == repr(getattr(torch.nn, name)(**theirs))
    assert [n for n, _ in nn.MultiMarginLoss(weight=tk.ones(4)).named_buffers()] == ["weight"]
