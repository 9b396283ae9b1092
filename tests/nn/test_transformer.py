"""MultiheadAttention, multi_head_attention_forward and the Transformer layers against
PyTorch (same weights, eval mode): outputs, attention weights, input and parameter gradients
for every mask kind; plus gradchecks, parameter names, initialization and errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from nn_parity import same_error

import tensorkit as tk
from tensorkit.nn.functional.multihead import multi_head_attention_forward
from tensorkit.nn.modules.attention import MultiheadAttention
from tensorkit.nn.modules.normalization import LayerNorm
from tensorkit.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

E, HEADS, L, S, N = 8, 2, 4, 5, 3  # embed dim, heads, target and source lengths, batch
CAUSAL_L = np.triu(np.full((L, L), -np.inf, np.float32), 1)


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


def _load(mine: Any, theirs: Any) -> None:
    """Copy torch's parameters into tensorkit's by name (strict: the names must agree)."""
    mine.load_state_dict({k: tk.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})


def _random(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _compare(
    torch: Any,
    mine: Any,
    theirs: Any,
    args: tuple,
    kwargs: dict | None = None,
    same: dict[int, int] | None = None,
    atol: float = 1e-5,
) -> None:
    """Call both modules in eval mode on the same arrays and compare everything.

    Float arrays in ``args`` are leaves that require grad; ``same`` maps an argument
    position to an earlier one to pass the very same tensor (self-attention). Keyword arrays
    (masks) never require grad. Outputs may be a tensor or a tuple with None in it.
    """
    _load(mine, theirs)
    mine.eval()
    theirs.eval()
    same = same or {}
    kwargs = kwargs or {}
    tk_args: list = []
    torch_args: list = []
    for index, a in enumerate(args):
        if index in same:
            tk_args.append(tk_args[same[index]])
            torch_args.append(torch_args[same[index]])
        else:
            tk_args.append(tk.tensor(a).requires_grad_())
            torch_args.append(torch.tensor(a, requires_grad=True))
    out_mine = mine(*tk_args, **{k: _tk_or(v) for k, v in kwargs.items()})
    out_theirs = theirs(*torch_args, **{k: _torch_or(torch, v) for k, v in kwargs.items()})
    pairs = _pairs(out_mine, out_theirs)
    rng = np.random.default_rng(9)
    loss_mine, loss_theirs = 0, 0
    for got, expected in pairs:
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=atol)
        w = rng.standard_normal(tuple(expected.shape)).astype(np.float32)
        loss_mine = loss_mine + (got * tk.tensor(w)).sum()
        loss_theirs = loss_theirs + (expected * torch.tensor(w)).sum()
    loss_mine.backward()
    loss_theirs.backward()
    for index, (got, expected) in enumerate(zip(tk_args, torch_args, strict=True)):
        if index not in same:
            np.testing.assert_allclose(got.grad.numpy(), expected.grad.numpy(), atol=atol)
    params = dict(theirs.named_parameters())
    for name, param in mine.named_parameters():
        expected = params[name].grad
        np.testing.assert_allclose(param.grad.numpy(), expected.numpy(), atol=atol, err_msg=name)


def _tk_or(value: Any) -> Any:
    return tk.tensor(value) if isinstance(value, np.ndarray) else value


def _torch_or(torch: Any, value: Any) -> Any:
    return torch.tensor(value) if isinstance(value, np.ndarray) else value


def _pairs(mine: Any, theirs: Any) -> list[tuple]:
    if not isinstance(theirs, tuple):
        return [(mine, theirs)]
    assert len(mine) == len(theirs)
    pairs = []
    for got, expected in zip(mine, theirs, strict=True):
        if expected is None:
            assert got is None
        else:
            assert tuple(got.shape) == tuple(expected.shape)
            pairs.append((got, expected))
    return pairs


def _twins(torch: Any, *args: Any, **kwargs: Any) -> tuple[MultiheadAttention, Any]:
    return MultiheadAttention(*args, **kwargs), torch.nn.MultiheadAttention(*args, **kwargs)


# ---------------------------------------------------------------------- MultiheadAttention
ATTENTION_OPTIONS = [
    {},
    {"batch_first": True},
    {"bias": False},
    {"add_bias_kv": True},
    {"add_zero_attn": True},
    {"kdim": 3, "vdim": 6},
    {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True},
]


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("options", ATTENTION_OPTIONS, ids=lambda o: "-".join(o) or "default")
def test_attention_matches_torch(torch: Any, options: dict, need_weights: bool) -> None:
    mine, theirs = _twins(torch, E, HEADS, **options)

    def sequence(length: int, size: int, seed: int) -> np.ndarray:
        if options.get("batch_first"):
            return _random(N, length, size, seed=seed)
        return _random(length, N, size, seed=seed)

    query = sequence(L, E, 1)
    key = sequence(S, options.get("kdim", E), 2)
    value = sequence(S, options.get("vdim", E), 3)
    padding = np.zeros((N, S), bool)
    padding[0, -2:] = True
    kwargs = {"need_weights": need_weights, "key_padding_mask": padding}
    _compare(torch, mine, theirs, (query, key, value), kwargs)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_self_attention_shares_one_input(torch: Any, batch_first: bool, need_weights: bool) -> None:
    mine, theirs = _twins(torch, E, HEADS, batch_first=batch_first)
    x = _random(L, N, E)
    _compare(torch, mine, theirs, (x, x, x), {"need_weights": need_weights}, same={1: 0, 2: 0})


def test_key_is_value_shares_one_input(torch: Any) -> None:
    mine, theirs = _twins(torch, E, HEADS)
    _compare(torch, mine, theirs, (_random(L, N, E), _random(S, N, E, seed=1), None), same={2: 1})


def _masks() -> dict[str, dict]:
    rng = np.random.default_rng(7)
    bool_2d = rng.random((L, S)) < 0.3
    bool_2d[:, 0] = False  # every query keeps one key
    float_3d = rng.standard_normal((N * HEADS, L, S)).astype(np.float32)
    padding = np.zeros((N, S), bool)
    padding[1, 3:] = True
    float_padding = np.where(padding, -1e4, 0.5).astype(np.float32)
    return {
        "bool_2d": {"attn_mask": bool_2d},
        "float_2d": {"attn_mask": np.where(bool_2d, -np.inf, 0.0).astype(np.float32)},
        "float_3d": {"attn_mask": float_3d},
        "bool_3d": {"attn_mask": np.broadcast_to(bool_2d, (N * HEADS, L, S)).copy()},
        "bool_padding": {"key_padding_mask": padding},
        "float_padding": {"key_padding_mask": float_padding},
        "bool_both": {"attn_mask": bool_2d, "key_padding_mask": padding},
        "float_both": {"attn_mask": float_3d, "key_padding_mask": float_padding},
    }


@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("masks", _masks().values(), ids=list(_masks()))
def test_attention_masks(torch: Any, masks: dict, need_weights: bool, average: bool) -> None:
    mine, theirs = _twins(torch, E, HEADS)
    args = (_random(L, N, E), _random(S, N, E, seed=1), _random(S, N, E, seed=2))
    kwargs = {**masks, "need_weights": need_weights, "average_attn_weights": average}
    _compare(torch, mine, theirs, args, kwargs)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("with_padding", [False, True])
def test_is_causal_hint(torch: Any, need_weights: bool, with_padding: bool) -> None:
    mine, theirs = _twins(torch, E, HEADS)
    x = _random(L, N, E)
    kwargs: dict = {"attn_mask": CAUSAL_L, "is_causal": True, "need_weights": need_weights}
    if with_padding:
        padding = np.zeros((N, L), np.float32)
        padding[0, -1] = -np.inf
        kwargs["key_padding_mask"] = padding
    _compare(torch, mine, theirs, (x, x, x), kwargs, same={1: 0, 2: 0})


@pytest.mark.parametrize("masked", [False, True])
def test_unbatched_attention(torch: Any, masked: bool) -> None:
    mine, theirs = _twins(torch, E, HEADS, add_bias_kv=True)
    kwargs = {"average_attn_weights": False}
    if masked:
        padding = np.array([0.0, 0.0, -np.inf, 0.0, 0.0], np.float32)
        kwargs.update(key_padding_mask=padding, attn_mask=_random(HEADS, L, S, seed=4))
    args = (_random(L, E), _random(S, E, seed=1), _random(S, E, seed=2))
    _compare(torch, mine, theirs, args, kwargs)


def test_functional_with_static_key_and_value(torch: Any) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        "query": rng.standard_normal((L, N, E)),
        "key": rng.standard_normal((S, N, E)),
        "value": rng.standard_normal((S, N, E)),
        "in_proj_weight": rng.standard_normal((3 * E, E)),
        "in_proj_bias": rng.standard_normal(3 * E),
        "out_proj_weight": rng.standard_normal((E, E)),
        "out_proj_bias": rng.standard_normal(E),
        "static_k": rng.standard_normal((N * HEADS, S + 1, E // HEADS)),
        "static_v": rng.standard_normal((N * HEADS, S + 1, E // HEADS)),
    }
    fixed = {"embed_dim_to_check": E, "num_heads": HEADS, "bias_k": None, "bias_v": None}
    fixed.update(add_zero_attn=True, dropout_p=0.0)
    tk_in = {k: tk.tensor(v).requires_grad_() for k, v in arrays.items()}
    torch_in = {k: torch.tensor(v, requires_grad=True) for k, v in arrays.items()}
    out_mine, weights_mine = multi_head_attention_forward(**tk_in, **fixed)
    functional = torch.nn.functional.multi_head_attention_forward
    out_theirs, weights_theirs = functional(**torch_in, **fixed)
    np.testing.assert_allclose(out_mine.detach().numpy(), out_theirs.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(weights_mine.detach().numpy(), weights_theirs.detach().numpy())
    (out_mine.sum() + weights_mine.square().sum()).backward()
    (out_theirs.sum() + weights_theirs.square().sum()).backward()
    for name, leaf in tk_in.items():
        if name in ("key", "value"):  # static_k and static_v replace their projections
            assert torch_in[name].grad is None and leaf.grad is None
            continue
        expected = torch_in[name].grad.numpy()
        np.testing.assert_allclose(leaf.grad.numpy(), expected, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("need_weights", [True, False])
def test_attention_gradcheck(need_weights: bool) -> None:
    rng = np.random.default_rng(0)
    shapes = [(3, 2, 4), (2, 2, 4), (2, 2, 4), (12, 4), (12,), (4, 4), (4,)]
    inputs = [tk.tensor(rng.standard_normal(shape)).requires_grad_() for shape in shapes]
    mask = tk.tensor(rng.standard_normal((3, 2)))
    padding = tk.tensor(np.array([[0.0, -np.inf], [0.0, 0.0]]))

    def run(q: Any, k: Any, v: Any, w_in: Any, b_in: Any, w_out: Any, b_out: Any) -> Any:
        out, weights = multi_head_attention_forward(
            q, k, v, 4, 2, w_in, b_in, None, None, False, 0.0, w_out, b_out,
            attn_mask=mask, key_padding_mask=padding, need_weights=need_weights,
        )  # fmt: skip
        return out if weights is None else (out, weights)

    assert tk.autograd.gradcheck(run, inputs, eps=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "options",
    [{}, {"bias": False}, {"add_bias_kv": True}, {"kdim": 3, "vdim": 5}],
    ids=lambda o: "-".join(o) or "default",
)
def test_attention_state_dict_matches_torch(torch: Any, options: dict) -> None:
    mine, theirs = _twins(torch, E, HEADS, **options)
    expected = [(key, tuple(value.shape)) for key, value in theirs.state_dict().items()]
    assert [(key, tuple(value.shape)) for key, value in mine.state_dict().items()] == expected


def test_attention_initialization() -> None:
    module = MultiheadAttention(16, 4, add_bias_kv=True)
    bound = math.sqrt(6 / (16 + 48))  # xavier_uniform_ of the (48, 16) in_proj_weight
    weight = module.in_proj_weight.detach().numpy()
    assert np.abs(weight).max() <= bound
    assert weight.std() == pytest.approx(bound / math.sqrt(3), rel=0.1)
    assert not module.in_proj_bias.detach().numpy().any()
    assert not module.out_proj.bias.detach().numpy().any()
    assert module.bias_k.shape == (1, 1, 16)
    separate = MultiheadAttention(16, 4, kdim=8)
    assert separate.in_proj_weight is None
    assert separate.k_proj_weight.shape == (16, 8)


def test_dropout_only_in_training() -> None:
    module = MultiheadAttention(E, HEADS, dropout=0.5)
    x = tk.tensor(_random(L, N, E))
    first, _ = module(x, x, x)
    second, _ = module(x, x, x)
    assert not np.allclose(first.detach().numpy(), second.detach().numpy())
    module.eval()
    first, _ = module(x, x, x)
    second, _ = module(x, x, x)
    np.testing.assert_array_equal(first.detach().numpy(), second.detach().numpy())


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((10, 3), {}), ((0, 2), {}), ((8, -1), {})],
    ids=["not_divisible", "zero_embed_dim", "negative_heads"],
)
def test_attention_constructor_errors(torch: Any, args: tuple, kwargs: dict) -> None:
    same_error(
        lambda: MultiheadAttention(*args, **kwargs),
        lambda: torch.nn.MultiheadAttention(*args, **kwargs),
    )


ZEROS = {
    "q": np.zeros((L, N, E), np.float32),
    "kv": np.zeros((S, N, E), np.float32),
}
ATTENTION_MISUSE = {
    "attn_mask_2d_shape": ((ZEROS["q"], ZEROS["kv"], ZEROS["kv"]), {"attn_mask": CAUSAL_L}),
    "attn_mask_3d_shape": (
        (ZEROS["q"], ZEROS["kv"], ZEROS["kv"]),
        {"attn_mask": np.zeros((N, L, S), np.float32)},
    ),
    "attn_mask_4d": (
        (ZEROS["q"], ZEROS["kv"], ZEROS["kv"]),
        {"attn_mask": np.zeros((1, 1, L, S), np.float32)},
    ),
    "padding_shape": (
        (ZEROS["q"], ZEROS["kv"], ZEROS["kv"]),
        {"key_padding_mask": np.zeros((N, L), bool)},
    ),
    "padding_batch": (
        (ZEROS["q"], ZEROS["kv"], ZEROS["kv"]),
        {"key_padding_mask": np.zeros((N + 1, S), bool)},
    ),
    "padding_dims": (
        (ZEROS["q"], ZEROS["kv"], ZEROS["kv"]),
        {"key_padding_mask": np.zeros(S, bool)},
    ),
    "integer_mask": (
        (ZEROS["q"], ZEROS["kv"], ZEROS["kv"]),
        {"attn_mask": np.zeros((L, S), np.int64)},
    ),
    "query_4d": ((ZEROS["q"][None], ZEROS["kv"], ZEROS["kv"]), {}),
    "key_2d": ((ZEROS["q"], ZEROS["kv"][:, 0], ZEROS["kv"]), {}),
    "embed_dim": ((np.zeros((L, N, E + 1), np.float32), ZEROS["kv"], ZEROS["kv"]), {}),
    "key_value_shapes": ((ZEROS["q"], ZEROS["kv"], ZEROS["kv"][:-1]), {}),
    "causal_without_mask": ((ZEROS["q"], ZEROS["kv"], ZEROS["kv"]), {"is_causal": True}),
    "unbatched_3d_mask": (
        (ZEROS["q"][:, 0], ZEROS["kv"][:, 0], ZEROS["kv"][:, 0]),
        {"attn_mask": np.zeros((HEADS + 1, L, S), np.float32)},
    ),
}


@pytest.mark.parametrize(("args", "kwargs"), ATTENTION_MISUSE.values(), ids=list(ATTENTION_MISUSE))
def test_attention_misuse_errors(torch: Any, args: tuple, kwargs: dict) -> None:
    mine, theirs = _twins(torch, E, HEADS)
    same_error(
        lambda: mine(*map(_tk_or, args), **{k: _tk_or(v) for k, v in kwargs.items()}),
        lambda: theirs(
            *(_torch_or(torch, a) for a in args),
            **{k: _torch_or(torch, v) for k, v in kwargs.items()},
        ),
    )


def test_mismatched_mask_types_warn() -> None:
    module = MultiheadAttention(E, HEADS)
    x = tk.tensor(_random(L, N, E))
    padding = tk.zeros((N, L), dtype=tk.bool)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask"):
        module(x, x, x, key_padding_mask=padding, attn_mask=tk.tensor(CAUSAL_L))


# ---------------------------------------------------------------------------- Transformer
def _layer_twins(torch: Any, name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    mine = {"encoder": TransformerEncoderLayer, "decoder": TransformerDecoderLayer}[name]
    theirs = getattr(torch.nn, f"Transformer{name.title()}Layer")
    return mine(*args, **kwargs), theirs(*args, **kwargs)


LAYER_OPTIONS = [
    {},
    {"norm_first": True},
    {"activation": "gelu", "batch_first": True},
    {"bias": False, "layer_norm_eps": 1e-3},
]


def _source_masks() -> dict[str, dict]:
    padding = np.zeros((N, S), bool)
    padding[2, 3:] = True
    causal = np.triu(np.ones((S, S), bool), 1)
    return {
        "no_mask": {},
        "bool_mask": {"src_mask": causal},
        "float_mask_and_float_padding": {
            "src_mask": _random(S, S, seed=5),
            "src_key_padding_mask": np.where(padding, -np.inf, 0.0).astype(np.float32),
        },
        "bool_padding": {"src_key_padding_mask": padding},
        "causal_hint": {
            "src_mask": np.where(causal, -np.inf, 0.0).astype(np.float32),
            "is_causal": True,
        },
    }


@pytest.mark.parametrize("masks", _source_masks().values(), ids=list(_source_masks()))
@pytest.mark.parametrize("options", LAYER_OPTIONS, ids=lambda o: "-".join(o) or "default")
def test_encoder_layer_matches_torch(torch: Any, options: dict, masks: dict) -> None:
    mine, theirs = _layer_twins(torch, "encoder", E, HEADS, 16, **options)
    src = _random(N, S, E) if options.get("batch_first") else _random(S, N, E)
    _compare(torch, mine, theirs, (src,), masks)


def test_encoder_layer_unbatched_and_callable_activation(torch: Any) -> None:
    mine, theirs = _layer_twins(torch, "encoder", E, HEADS, 16, norm_first=True)
    mine.activation = tk.nn.functional.silu
    theirs.activation = torch.nn.functional.silu
    padding = np.array([False, False, False, True, True])
    _compare(torch, mine, theirs, (_random(S, E),), {"src_key_padding_mask": padding})


def _target_masks() -> dict[str, dict]:
    padding = np.zeros((N, S), bool)
    padding[0, -1] = True
    target_padding = np.zeros((N, L), bool)
    target_padding[1, -1] = True
    return {
        "no_mask": {},
        "causal_and_memory_padding": {
            "tgt_mask": CAUSAL_L,
            "tgt_is_causal": True,
            "memory_key_padding_mask": padding,
        },
        "all_masks": {
            "tgt_mask": np.triu(np.ones((L, L), bool), 1),
            "memory_mask": _random(L, S, seed=6),
            "tgt_key_padding_mask": target_padding,
            "memory_key_padding_mask": np.where(padding, -np.inf, 0.0).astype(np.float32),
        },
    }


@pytest.mark.parametrize("masks", _target_masks().values(), ids=list(_target_masks()))
@pytest.mark.parametrize("options", LAYER_OPTIONS, ids=lambda o: "-".join(o) or "default")
def test_decoder_layer_matches_torch(torch: Any, options: dict, masks: dict) -> None:
    mine, theirs = _layer_twins(torch, "decoder", E, HEADS, 16, **options)
    batch_first = options.get("batch_first")
    tgt = _random(N, L, E) if batch_first else _random(L, N, E)
    memory = _random(N, S, E, seed=1) if batch_first else _random(S, N, E, seed=1)
    _compare(torch, mine, theirs, (tgt, memory), masks)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("causal", [None, False, True])
def test_encoder_stack_matches_torch(torch: Any, causal: bool | None) -> None:
    mine = TransformerEncoder(TransformerEncoderLayer(E, HEADS, 16), 2, LayerNorm(E))
    layer = torch.nn.TransformerEncoderLayer(E, HEADS, 16)
    theirs = torch.nn.TransformerEncoder(layer, 2, torch.nn.LayerNorm(E))
    mask = np.triu(np.full((S, S), -np.inf, np.float32), 1)
    _compare(torch, mine, theirs, (_random(S, N, E),), {"mask": mask, "is_causal": causal})


def test_decoder_stack_matches_torch(torch: Any) -> None:
    mine = TransformerDecoder(TransformerDecoderLayer(E, HEADS, 16, norm_first=True), 2)
    theirs = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(E, HEADS, 16, norm_first=True), 2
    )
    args = (_random(L, N, E), _random(S, N, E, seed=1))
    _compare(torch, mine, theirs, args, {"tgt_mask": CAUSAL_L})


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(torch: Any, batch_first: bool) -> None:
    settings = {"dim_feedforward": 16, "batch_first": batch_first, "activation": "gelu"}
    mine = Transformer(E, HEADS, 2, 1, **settings)
    theirs = torch.nn.Transformer(E, HEADS, 2, 1, **settings)
    src = _random(N, S, E) if batch_first else _random(S, N, E)
    tgt = _random(N, L, E, seed=1) if batch_first else _random(L, N, E, seed=1)
    padding = np.zeros((N, S), bool)
    padding[1, -2:] = True
    masks = {
        "tgt_mask": Transformer.generate_square_subsequent_mask(L).numpy(),
        "src_key_padding_mask": padding,
        "memory_key_padding_mask": padding,
    }
    _compare(torch, mine, theirs, (src, tgt), masks)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_unbatched(torch: Any) -> None:
    mine = Transformer(E, HEADS, 1, 1, 16)
    theirs = torch.nn.Transformer(E, HEADS, 1, 1, 16)
    _compare(torch, mine, theirs, (_random(S, E), _random(L, E, seed=1)))


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_state_dict_and_initialization(torch: Any) -> None:
    mine = Transformer(E, HEADS, 2, 2, 16, bias=False)
    theirs = torch.nn.Transformer(E, HEADS, 2, 2, 16, bias=False)
    expected = [(key, tuple(value.shape)) for key, value in theirs.state_dict().items()]
    assert [(key, tuple(value.shape)) for key, value in mine.state_dict().items()] == expected
    weight = mine.encoder.layers[0].linear1.weight.detach().numpy()  # xavier_uniform_, 16 x 8
    assert np.abs(weight).max() <= math.sqrt(6 / (16 + 8))
    assert weight.std() == pytest.approx(math.sqrt(2 / (16 + 8)), rel=0.2)


def test_stack_layers_are_deep_copies() -> None:
    layer = TransformerEncoderLayer(E, HEADS, 16)
    encoder = TransformerEncoder(layer, 3)
    weights = [m.self_attn.in_proj_weight for m in encoder.layers]
    assert len({id(w) for w in weights}) == 3 and all(
        w is not layer.linear1.weight for w in weights
    )
    for weight in weights[1:]:
        np.testing.assert_array_equal(weight.detach().numpy(), weights[0].detach().numpy())
    assert len(list(encoder.parameters())) == 3 * len(list(layer.parameters()))


def test_generate_square_subsequent_mask(torch: Any) -> None:
    mine = Transformer.generate_square_subsequent_mask(4, dtype=tk.float64)
    assert mine.dtype == tk.float64
    expected = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    np.testing.assert_array_equal(mine.numpy(), expected.numpy())


def test_transformer_dropout_in_training_only() -> None:
    layer = TransformerEncoderLayer(E, HEADS, 16, dropout=0.3)
    src = tk.tensor(_random(S, N, E))
    assert not np.allclose(layer(src).detach().numpy(), layer(src).detach().numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(src).detach().numpy(), layer(src).detach().numpy())


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_errors(torch: Any) -> None:
    pairs = [
        (
            lambda: TransformerEncoderLayer(E, HEADS, activation="tanh"),
            lambda: torch.nn.TransformerEncoderLayer(E, HEADS, activation="tanh"),
        ),
        (
            lambda: Transformer(E, HEADS, 1, 1, 16)(tk.zeros(S, N, E), tk.zeros(L, N + 1, E)),
            lambda: torch.nn.Transformer(E, HEADS, 1, 1, 16)(
                torch.zeros(S, N, E), torch.zeros(L, N + 1, E)
            ),
        ),
        (
            lambda: Transformer(E, HEADS, 1, 1, 16)(tk.zeros(S, N, E), tk.zeros(L, N, E + 2)),
            lambda: torch.nn.Transformer(E, HEADS, 1, 1, 16)(
                torch.zeros(S, N, E), torch.zeros(L, N, E + 2)
            ),
        ),
        (
            lambda: TransformerEncoderLayer(E, 3),
            lambda: torch.nn.TransformerEncoderLayer(E, 3),
        ),
    ]
    for make_mine, make_theirs in pairs:
        same_error(make_mine, make_theirs)


def test_fully_masked_rows_attend_to_nothing_like_torch():
    torch = pytest.importorskip("torch")
    from tensorkit.nn.functional import scaled_dot_product_attention as attention

    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 2, 3))
    for mask in (
        np.array([[True, False], [False, False]]),
        np.array([[0.0, float("-inf")], [float("-inf"), float("-inf")]]),
    ):
        mine_q = tk.tensor(q, requires_grad=True)
        theirs_q = torch.tensor(q, requires_grad=True)
        mine = attention(mine_q, mine_q, mine_q, attn_mask=tk.tensor(mask))
        theirs = torch.nn.functional.scaled_dot_product_attention(
            theirs_q, theirs_q, theirs_q, attn_mask=torch.tensor(mask)
        )
        np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), atol=1e-12)
        mine.sum().backward()
        theirs.sum().backward()
        assert np.all(np.isfinite(mine_q.grad.numpy()))
        np.testing.assert_allclose(mine_q.grad.numpy(), theirs_q.grad.numpy(), atol=1e-12)
