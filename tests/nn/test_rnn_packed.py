"""Packed sequences (tk.nn.utils.rnn) against PyTorch: the helpers' outputs and gradients, the
recurrent layers on packed input (same weights: outputs, h_n/c_n and every gradient),
gradchecks through pack/pad, PackedSequence's methods, and the error texts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import check_grads, check_torch
from nn_parity import same_error

import tensorkit as tk
from tensorkit.nn.modules.rnn import GRU, LSTM, RNN
from tensorkit.nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

LAYERS = {"RNN": RNN, "LSTM": LSTM, "GRU": GRU}
UNSORTED = [3, 5, 1, 5, 2]  # lengths with a tie and no order
SORTED = [5, 5, 3, 2, 1]


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


def _rnn_utils() -> Any:
    return pytest.importorskip("torch.nn.utils.rnn")


def _padded(lengths: list[int], batch_first: bool, features: int = 3) -> np.ndarray:
    steps, batch = max(lengths), len(lengths)
    shape = (batch, steps, features) if batch_first else (steps, batch, features)
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def _fields(packed: Any) -> tuple:
    """The tensors of a PackedSequence (either library's), Nones left out."""
    return tuple(t for t in packed if t is not None)


# ----------------------------------------------------------------------------- helpers
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_padded_sequence_matches_torch(batch_first: bool, enforce_sorted: bool) -> None:
    theirs = _rnn_utils()
    lengths = SORTED if enforce_sorted else UNSORTED
    check_torch(
        lambda x: _fields(pack_padded_sequence(x, lengths, batch_first, enforce_sorted)),
        lambda x: _fields(theirs.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)),
        _padded(lengths, batch_first),
    )


def test_pack_padded_sequence_takes_a_lengths_tensor(torch: Any) -> None:
    theirs = _rnn_utils()
    x = _padded(SORTED, False)
    mine = pack_padded_sequence(tk.tensor(x), tk.tensor(SORTED, dtype=tk.int32))
    expected = theirs.pack_padded_sequence(torch.tensor(x), torch.tensor(SORTED))
    np.testing.assert_array_equal(mine.data.numpy(), expected.data.numpy())
    assert mine.batch_sizes.dtype == tk.int64
    assert mine.batch_sizes.tolist() == expected.batch_sizes.tolist() == [5, 4, 3, 2, 2]
    assert mine.sorted_indices is None and mine.unsorted_indices is None


@pytest.mark.parametrize("total_length", [None, 7])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_packed_sequence_matches_torch(
    batch_first: bool, enforce_sorted: bool, total_length: int | None
) -> None:
    theirs = _rnn_utils()
    lengths = SORTED if enforce_sorted else UNSORTED
    options = {"batch_first": batch_first, "padding_value": -2.5, "total_length": total_length}

    def run(module: Any, x: Any) -> Any:
        packed = module.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
        return module.pad_packed_sequence(packed, **options)

    check_torch(lambda x: run(tk.nn.utils.rnn, x), lambda x: run(theirs, x), _padded(lengths, True))


@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_matches_torch(batch_first: bool, padding_side: str) -> None:
    theirs = _rnn_utils()
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((n, 2, 3)).astype(np.float32) for n in UNSORTED]
    options = {"batch_first": batch_first, "padding_value": 1.5, "padding_side": padding_side}
    check_torch(
        lambda *xs: pad_sequence(list(xs), **options),
        lambda *xs: theirs.pad_sequence(list(xs), **options),
        *arrays,
    )


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_matches_torch(torch: Any, batch_first: bool) -> None:
    theirs = _rnn_utils()
    torch_lengths = torch.tensor(UNSORTED)
    check_torch(
        # torch's unpad_sequence transposes its input in place; give it a copy
        lambda x: unpad_sequence(x, tk.tensor(UNSORTED), batch_first),
        lambda x: theirs.unpad_sequence(x.clone(), torch_lengths, batch_first),
        _padded(UNSORTED, batch_first),
    )


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_and_unpack_sequence_match_torch(enforce_sorted: bool) -> None:
    theirs = _rnn_utils()
    rng = np.random.default_rng(2)
    lengths = SORTED if enforce_sorted else UNSORTED
    arrays = [rng.standard_normal((n, 2)).astype(np.float32) for n in lengths]
    check_torch(
        lambda *xs: _fields(pack_sequence(list(xs), enforce_sorted)),
        lambda *xs: _fields(theirs.pack_sequence(list(xs), enforce_sorted)),
        *arrays,
    )
    check_torch(
        lambda *xs: unpack_sequence(pack_sequence(list(xs), enforce_sorted)),
        lambda *xs: theirs.unpack_sequence(theirs.pack_sequence(list(xs), enforce_sorted)),
        *arrays,
    )


def test_integer_data_and_invert_permutation(torch: Any) -> None:
    theirs = _rnn_utils()
    seqs = [[1, 2, 0], [3, 0, 0], [4, 5, 6]]
    mine = pack_padded_sequence(tk.tensor(seqs), [2, 1, 3], batch_first=True, enforce_sorted=False)
    expected = theirs.pack_padded_sequence(
        torch.tensor(seqs), [2, 1, 3], batch_first=True, enforce_sorted=False
    )
    for got, want in zip(mine, expected, strict=True):
        assert got.tolist() == want.tolist()
    padded, lengths = pad_packed_sequence(mine, batch_first=True, padding_value=9)
    assert padded.tolist() == [[1, 2, 9], [3, 9, 9], [4, 5, 6]]
    assert lengths.tolist() == [2, 1, 3]
    permutation = [3, 0, 4, 1, 2]
    assert invert_permutation(tk.tensor(permutation)).tolist() == (
        theirs.invert_permutation(torch.tensor(permutation)).tolist()
    )
    assert invert_permutation(None) is None


@pytest.mark.parametrize("batch_first", [False, True])
def test_gradcheck_through_pack_and_pad(batch_first: bool) -> None:
    lengths = [2, 3, 1]

    def run(x: tk.Tensor) -> tk.Tensor:
        packed = pack_padded_sequence(x, lengths, batch_first, enforce_sorted=False)
        padded, _ = pad_packed_sequence(packed, batch_first, padding_value=0.5, total_length=4)
        return padded * padded.sum()  # nonlinear, so gradgradcheck sees the pad path twice

    check_grads(run, _padded(lengths, batch_first, features=2))


def test_gradcheck_through_pad_sequence_and_unpack() -> None:
    def run(a: tk.Tensor, b: tk.Tensor) -> tuple:
        padded = pad_sequence([a, b], padding_side="left") ** 2
        return tuple(unpack_sequence(pack_sequence([a * b[0], b], enforce_sorted=False))) + (
            padded,
        )

    rng = np.random.default_rng(3)
    check_grads(run, rng.standard_normal((2, 2)), rng.standard_normal((3, 2)))


# ------------------------------------------------------------------------ PackedSequence
def test_packed_sequence_is_a_named_tuple_with_conversions() -> None:
    packed = pack_sequence([tk.ones(3, 2), tk.ones(1, 2), tk.ones(2, 2)], enforce_sorted=False)
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert batch_sizes.tolist() == [3, 2, 1] and sorted_indices.tolist() == [0, 2, 1]
    assert unsorted_indices.tolist() == [0, 2, 1]
    assert packed.float() is packed and packed.to("cpu") is packed and packed.cpu() is packed
    doubled = packed.double()
    assert isinstance(doubled, PackedSequence) and doubled.data.dtype == tk.float64
    assert doubled.batch_sizes is batch_sizes and doubled.sorted_indices.tolist() == [0, 2, 1]
    assert packed.to(tk.float16).data.dtype == packed.half().data.dtype == tk.float16
    for method, dtype in [("long", tk.int64), ("int", tk.int32), ("short", tk.int16)]:
        assert getattr(packed, method)().data.dtype == dtype
    assert packed.char().data.dtype == tk.int8 and packed.byte().data.dtype == tk.uint8
    assert packed.is_cuda is False
    assert repr(packed).startswith("PackedSequence(data=tensor(")
    again = PackedSequence(data, batch_sizes, sorted_indices)
    assert again.unsorted_indices.tolist() == [0, 2, 1]
    assert PackedSequence((data, batch_sizes)).batch_sizes is batch_sizes


# ------------------------------------------------------------------ recurrent layers
def _twins(torch: Any, name: str, **kwargs: Any) -> tuple[Any, Any]:
    """A tensorkit layer and its torch twin with torch's initial weights loaded."""
    theirs = getattr(torch.nn, name)(3, 4, **kwargs)
    mine = LAYERS[name](3, 4, **kwargs)
    mine.load_state_dict({k: tk.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return mine, theirs


def _compare_packed(
    torch: Any, name: str, kwargs: dict, lengths: list[int], enforce_sorted: bool, with_h0: bool
) -> None:
    """Pack, run the layer, pad back: output, h_n (c_n) and the gradients of the padded input,
    the initial states and every parameter agree with torch's."""
    theirs_utils = _rnn_utils()
    mine, theirs = _twins(torch, name, **kwargs)
    x = _padded(lengths, False)
    rows = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    rng = np.random.default_rng(6)
    states = [rng.standard_normal((rows, len(lengths), 4)).astype(np.float32) for _ in range(2)]
    states = states[: 2 if name == "LSTM" else 1] if with_h0 else []
    results = []
    for lib, utils, module in ((tk, tk.nn.utils.rnn, mine), (torch, theirs_utils, theirs)):
        leaves = [lib.tensor(a).requires_grad_() for a in (x, *states)]
        packed = utils.pack_padded_sequence(leaves[0], lengths, enforce_sorted=enforce_sorted)
        hx = None if not states else (tuple(leaves[1:]) if name == "LSTM" else leaves[1])
        output, finals = module(packed, hx)
        assert isinstance(output, PackedSequence if lib is tk else utils.PackedSequence)
        padded, out_lengths = utils.pad_packed_sequence(output, total_length=max(lengths) + 1)
        outputs = [padded, *(finals if name == "LSTM" else (finals,))]
        weights = np.random.default_rng(7)
        loss = sum(
            (o * lib.tensor(weights.standard_normal(tuple(o.shape)).astype(np.float32))).sum()
            for o in outputs
        )
        loss.backward()
        assert out_lengths.tolist() == lengths
        grads = [leaf.grad for leaf in leaves]
        grads += [p.grad for _, p in sorted(module.named_parameters(), key=lambda item: item[0])]
        results.append([t.detach().numpy() for t in (*outputs, *grads)])
    assert len(results[0]) == len(results[1])
    for got, expected in zip(*results, strict=True):
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-4)


OPTIONS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"num_layers": 2, "bidirectional": True},
]


@pytest.mark.parametrize("with_h0", [False, True], ids=["zero_state", "h0"])
@pytest.mark.parametrize("enforce_sorted", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(o) or "default")
@pytest.mark.parametrize("name", LAYERS)
def test_packed_layers_match_torch(
    torch: Any, name: str, options: dict, enforce_sorted: bool, with_h0: bool
) -> None:
    lengths = SORTED if enforce_sorted else UNSORTED
    _compare_packed(torch, name, options, lengths, enforce_sorted, with_h0)


def test_packed_relu_rnn_without_bias_and_equal_lengths(torch: Any) -> None:
    options = {"nonlinearity": "relu", "bias": False, "bidirectional": True}
    _compare_packed(torch, "RNN", options, [4, 4, 4], True, True)


@pytest.mark.filterwarnings("ignore:LSTM with projections")
def test_packed_lstm_with_projection(torch: Any) -> None:
    theirs_utils = _rnn_utils()
    kwargs = {"num_layers": 2, "bidirectional": True, "proj_size": 2}
    mine, theirs = _twins(torch, "LSTM", **kwargs)
    x = _padded(UNSORTED, True)
    out_mine, (h_mine, c_mine) = mine(pack_padded_sequence(tk.tensor(x), UNSORTED, True, False))
    out_theirs, (h_theirs, c_theirs) = theirs(
        theirs_utils.pack_padded_sequence(torch.tensor(x), UNSORTED, True, False)
    )
    for got, expected in [(out_mine.data, out_theirs.data), (h_mine, h_theirs), (c_mine, c_theirs)]:
        np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), atol=1e-5)


def test_packed_gradcheck_float64() -> None:
    module = GRU(2, 2, num_layers=2, bidirectional=True, dtype=tk.float64)
    lengths = [2, 3, 1]

    def run(x: tk.Tensor, h: tk.Tensor, *weights: tk.Tensor) -> tuple:
        packed = pack_padded_sequence(x, lengths, enforce_sorted=False)
        output, h_n = module(packed, h)
        return pad_packed_sequence(output)[0], h_n

    rng = np.random.default_rng(0)
    x = tk.tensor(rng.standard_normal((3, 3, 2))).requires_grad_()
    h = tk.tensor(rng.standard_normal((4, 3, 2))).requires_grad_()
    inputs = [x, h, *module.parameters()]
    assert tk.autograd.gradcheck(run, inputs, eps=1e-6, atol=1e-6)
    assert tk.autograd.gradgradcheck(run, inputs[:2], eps=1e-6, atol=1e-5)


def test_packed_lstm_gradgradcheck_float64() -> None:
    module = LSTM(2, 2, bidirectional=True, dtype=tk.float64)

    def run(x: tk.Tensor) -> tuple:
        output, (h, c) = module(pack_padded_sequence(x, [1, 3], enforce_sorted=False))
        return output.data, h, c

    check_grads(run, np.random.default_rng(1).standard_normal((3, 2, 2)))


def test_packed_run_matches_the_padded_run_per_sequence() -> None:
    """Each sequence through the packed batch equals that sequence run alone."""
    module = LSTM(3, 4, num_layers=2, bidirectional=True)
    x = tk.tensor(_padded(UNSORTED, False))
    with tk.no_grad():
        output, (h_n, c_n) = module(pack_padded_sequence(x, UNSORTED, enforce_sorted=False))
    padded, _ = pad_packed_sequence(output)
    with tk.no_grad():
        for b, n in enumerate(UNSORTED):
            alone, (h, c) = module(x[:n, b : b + 1])
            np.testing.assert_allclose(padded[:n, b].numpy(), alone[:, 0].numpy(), atol=1e-6)
            np.testing.assert_allclose(h_n[:, b].numpy(), h[:, 0].numpy(), atol=1e-6)
            np.testing.assert_allclose(c_n[:, b].numpy(), c[:, 0].numpy(), atol=1e-6)
            assert not padded[n:, b].numpy().any()


def test_packed_input_keeps_one_matmul_per_time_step() -> None:
    module = LSTM(3, 4, num_layers=2, bidirectional=True)
    packed = pack_padded_sequence(tk.randn(5, 3, 3), [2, 5, 4], enforce_sorted=False)
    with tk.autograd.Tape() as tape:
        module(packed)
    matmuls = [entry for entry in tape.forward_entries() if entry.name == "matmul"]
    projections = [entry for entry in tape.forward_entries() if entry.name == "addmm"]
    assert len(matmuls) == 2 * 2 * 5 and len(projections) == 2 * 2


# ---------------------------------------------------------------------------- errors
def _both(call: Any) -> tuple[Any, Any]:
    """Thunks calling ``call(library, rnn_utils)`` with tensorkit's and with torch's."""
    import torch

    theirs = _rnn_utils()
    return lambda: call(tk, tk.nn.utils.rnn), lambda: call(torch, theirs)


X = np.zeros((4, 3, 2), np.float32)
MISUSES = {
    "unsorted": lambda lib, u: u.pack_padded_sequence(lib.tensor(X), [2, 3, 1]),
    "batch_size": lambda lib, u: u.pack_padded_sequence(lib.tensor(X), [3, 2]),
    "zero_length": lambda lib, u: u.pack_padded_sequence(lib.tensor(X), [3, 0, 1], False, False),
    "lengths_2d": lambda lib, u: u.pack_padded_sequence(lib.tensor(X), lib.tensor([[3, 2, 1]])),
    "pack_sequence": lambda lib, u: u.pack_sequence([lib.zeros(1), lib.zeros(2)]),
    "total_length": lambda lib, u: u.pad_packed_sequence(
        u.pack_padded_sequence(lib.tensor(X), [3, 2, 1]), total_length=2
    ),
    "empty": lambda lib, u: u.pad_sequence([]),
    "padding_side": lambda lib, u: u.pad_sequence([lib.zeros(2)], padding_side="up"),
    "not_iterable": lambda lib, u: u.pad_sequence(3),
    "tuple_form": lambda lib, u: u.PackedSequence(lib.zeros(2)),
    "data_3d": lambda lib, u: lib.nn.GRU(2, 3)(
        u.pack_padded_sequence(lib.zeros(4, 3, 2, 2), [3, 2, 1])
    ),
    "input_size": lambda lib, u: lib.nn.GRU(5, 3)(u.pack_sequence([lib.zeros(2, 2)])),
    "dtype": lambda lib, u: lib.nn.RNN(2, 3)(u.pack_sequence([lib.zeros(2, 2).double()])),
    "h0_size": lambda lib, u: lib.nn.RNN(2, 3)(
        u.pack_sequence([lib.zeros(2, 2), lib.zeros(1, 2)]), lib.zeros(1, 3, 3)
    ),
}


@pytest.mark.parametrize("misuse", MISUSES)
def test_misuse_errors(torch: Any, misuse: str) -> None:
    same_error(*_both(MISUSES[misuse]))


def test_packed_lstm_checks_its_inputs_as_padded_input_does() -> None:
    """torch's LSTM skips its Python checks for packed input; tensorkit's makes them, with the
    texts of the padded case (and of torch's RNN and GRU on packed input)."""
    packed = pack_sequence([tk.zeros(2, 2)])
    with pytest.raises(
        RuntimeError, match=r"^Expected hidden\[1\] size \(1, 1, 3\), got \[1, 2, 3\]$"
    ):
        LSTM(2, 3)(packed, (tk.zeros(1, 1, 3), tk.zeros(1, 2, 3)))
    with pytest.raises(
        RuntimeError, match=r"^input.size\(-1\) must be equal to input_size. Expected 5, got 2$"
    ):
        LSTM(5, 3)(packed)
