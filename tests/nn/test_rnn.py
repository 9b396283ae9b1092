"""Recurrent layers and cells against PyTorch (same weights): outputs, final states, and the
gradients of every input, initial state and parameter; plus gradchecks, names and errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from nn_parity import same_error

import tensorkit as tk
from tensorkit.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell

LAYERS = {"RNN": RNN, "LSTM": LSTM, "GRU": GRU}
CELLS = {"RNNCell": RNNCell, "LSTMCell": LSTMCell, "GRUCell": GRUCell}
SIZES = (4, 3)  # input_size, hidden_size


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


def _twins(torch: Any, name: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """A tensorkit module and its torch twin, with torch's initial weights loaded by name."""
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    mine = {**LAYERS, **CELLS}[name](*args, **kwargs)
    mine.load_state_dict({k: tk.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return mine, theirs


def _flat(value: Any) -> list:
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in _flat(item)]
    return [value]


def _nest(leaves: list, like: Any) -> Any:
    """``leaves`` in the tuple structure of ``like`` (consumed from the front)."""
    if isinstance(like, tuple | list):
        return tuple(_nest(leaves, item) for item in like)
    return leaves.pop(0)


def _compare(torch: Any, mine: Any, theirs: Any, *args: Any, atol: float = 1e-5) -> None:
    """Forward both modules on the same arrays (nested tuples allowed, None passes through),
    then backward a random weighting of all outputs; every output and gradient agrees."""
    arrays = _flat(args)
    torch_leaves = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    tk_leaves = [None if a is None else tk.tensor(a).requires_grad_() for a in arrays]
    out_theirs = _flat(theirs(*_nest(list(torch_leaves), args)))
    out_mine = _flat(mine(*_nest(list(tk_leaves), args)))
    assert len(out_mine) == len(out_theirs)
    rng = np.random.default_rng(3)
    loss_theirs, loss_mine = 0, 0
    for got, expected in zip(out_mine, out_theirs, strict=True):
        expected_np = expected.detach().numpy()
        assert tuple(got.shape) == expected_np.shape
        np.testing.assert_allclose(got.detach().numpy(), expected_np, atol=atol, rtol=1e-4)
        w = rng.standard_normal(expected_np.shape).astype(expected_np.dtype)
        loss_theirs = loss_theirs + (expected * torch.tensor(w)).sum()
        loss_mine = loss_mine + (got * tk.tensor(w)).sum()
    loss_theirs.backward()
    loss_mine.backward()
    for got, expected in zip(tk_leaves, torch_leaves, strict=True):
        if expected is not None:
            np.testing.assert_allclose(got.grad.numpy(), expected.grad.numpy(), atol=atol)
    params = dict(theirs.named_parameters())
    for name, param in mine.named_parameters():
        np.testing.assert_allclose(
            param.grad.numpy(), params[name].grad.numpy(), atol=atol, err_msg=name
        )


def _states(name: str, rows: int, batch: int | None, hidden: int, proj: int = 0) -> Any:
    """Random initial states: h (and c for an LSTM), batched or not."""
    rng = np.random.default_rng(5)

    def make(size: int) -> np.ndarray:
        shape = (rows, size) if batch is None else (rows, batch, size)
        return rng.standard_normal(shape).astype(np.float32)

    h = make(proj or hidden)
    return (h, make(hidden)) if name == "LSTM" else h


def _sequence(length: int, batch: int | None, size: int, batch_first: bool) -> np.ndarray:
    if batch is None:
        shape = (length, size)
    else:
        shape = (batch, length, size) if batch_first else (length, batch, size)
    return np.random.default_rng(4).standard_normal(shape).astype(np.float32)


MODES = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu"}),
    ("LSTM", {}),
    ("GRU", {}),
]
OPTIONS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
    {"bias": False, "batch_first": True},
]


@pytest.mark.parametrize("given_state", [False, True], ids=["zero_state", "h0"])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(o) or "default")
@pytest.mark.parametrize(("name", "mode"), MODES, ids=["tanh", "relu", "lstm", "gru"])
def test_layers_match_torch(
    torch: Any, name: str, mode: dict, options: dict, given_state: bool
) -> None:
    mine, theirs = _twins(torch, name, *SIZES, **mode, **options)
    x = _sequence(5, 2, SIZES[0], options.get("batch_first", False))
    rows = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    state = _states(name, rows, 2, SIZES[1]) if given_state else None
    _compare(torch, mine, theirs, x, state)


@pytest.mark.parametrize("given_state", [False, True], ids=["zero_state", "h0"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("name", LAYERS)
def test_unbatched_input(torch: Any, name: str, batch_first: bool, given_state: bool) -> None:
    kwargs = {"num_layers": 2, "bidirectional": True, "batch_first": batch_first}
    mine, theirs = _twins(torch, name, *SIZES, **kwargs)
    state = _states(name, 4, None, SIZES[1]) if given_state else None
    _compare(torch, mine, theirs, _sequence(5, None, SIZES[0], batch_first), state)


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("given_state", [False, True], ids=["zero_state", "h0"])
def test_lstm_projection(torch: Any, given_state: bool) -> None:
    kwargs = {"num_layers": 2, "bidirectional": True, "proj_size": 2}
    mine, theirs = _twins(torch, "LSTM", 4, 5, **kwargs)
    state = _states("LSTM", 4, 3, 5, proj=2) if given_state else None
    _compare(torch, mine, theirs, _sequence(4, 3, 4, False), state)
    assert mine.weight_hr_l1_reverse.shape == (2, 5)
    assert mine.weight_ih_l1.shape == (20, 4)  # the next layer sees 2 directions x proj_size


def test_float64_layer(torch: Any) -> None:
    mine, theirs = _twins(torch, "LSTM", *SIZES, num_layers=2)
    mine.double()
    theirs.double()
    assert mine.weight_ih_l0.dtype == tk.float64
    _compare(torch, mine, theirs, _sequence(6, 2, SIZES[0], False).astype(np.float64), atol=1e-12)


def test_dropout_only_between_layers_in_training(torch: Any) -> None:
    mine, theirs = _twins(torch, "GRU", *SIZES, num_layers=2, dropout=0.5)
    x = _sequence(5, 2, SIZES[0], False)
    mine.train()
    tk.manual_seed(1)
    out_train, h_train = mine(tk.tensor(x))
    mine.eval()
    out_eval, h_eval = mine(tk.tensor(x))
    assert not np.allclose(out_train.detach().numpy(), out_eval.detach().numpy())
    # the first layer runs before any dropout; its final state is untouched
    np.testing.assert_allclose(h_train[0].detach().numpy(), h_eval[0].detach().numpy(), atol=1e-6)
    theirs.eval()
    _compare(torch, mine, theirs, x)


@pytest.mark.parametrize("given_state", [False, True], ids=["zero_state", "hx"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("RNNCell", {}),
        ("RNNCell", {"nonlinearity": "relu", "bias": False}),
        ("LSTMCell", {}),
        ("LSTMCell", {"bias": False}),
        ("GRUCell", {}),
    ],
    ids=["tanh", "relu_nobias", "lstm", "lstm_nobias", "gru"],
)
def test_cells_match_torch(
    torch: Any, name: str, kwargs: dict, batched: bool, given_state: bool
) -> None:
    mine, theirs = _twins(torch, name, *SIZES, **kwargs)
    rng = np.random.default_rng(2)
    lead = (2,) if batched else ()
    x = rng.standard_normal((*lead, SIZES[0])).astype(np.float32)
    state = None
    if given_state:
        hidden = [rng.standard_normal((*lead, SIZES[1])).astype(np.float32) for _ in range(2)]
        state = tuple(hidden) if name == "LSTMCell" else hidden[0]
    _compare(torch, mine, theirs, x, state)


@pytest.mark.parametrize("cell", [LSTMCell, GRUCell])
def test_cell_gradcheck(cell: type) -> None:
    module = cell(3, 2, dtype=tk.float64)
    rng = np.random.default_rng(0)
    x = tk.tensor(rng.standard_normal((2, 3))).requires_grad_()
    states = [tk.tensor(rng.standard_normal((2, 2))).requires_grad_() for _ in range(2)]
    params = list(module.parameters())

    def run(x: tk.Tensor, h: tk.Tensor, c: tk.Tensor, *weights: tk.Tensor) -> Any:
        return module(x, (h, c)) if cell is LSTMCell else module(x, h)

    inputs = [x, *states, *params]
    assert tk.autograd.gradcheck(run, inputs, eps=1e-6, atol=1e-6)
    assert tk.autograd.gradgradcheck(run, inputs, eps=1e-6, atol=1e-5)


def test_small_lstm_gradcheck() -> None:
    module = LSTM(2, 2, num_layers=2, bidirectional=True, dtype=tk.float64)
    x = tk.tensor(np.random.default_rng(0).standard_normal((3, 1, 2))).requires_grad_()

    def run(x: tk.Tensor, *weights: tk.Tensor) -> tk.Tensor:
        output, (h, c) = module(x)
        return output.sum() + h.sum() + c.sum()

    assert tk.autograd.gradcheck(run, [x, *module.parameters()], eps=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("RNN", (4, 3), {"num_layers": 2, "bidirectional": True}),
        ("GRU", (4, 3), {"bias": False, "num_layers": 3}),
        ("LSTM", (4, 3), {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
        ("LSTMCell", (4, 3), {}),
        ("GRUCell", (4, 3), {"bias": False}),
    ],
)
def test_state_dict_names_shapes_and_repr(torch: Any, name: str, args: tuple, kwargs: dict) -> None:
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    mine = {**LAYERS, **CELLS}[name](*args, **kwargs)
    expected = {key: tuple(value.shape) for key, value in theirs.state_dict().items()}
    assert {key: tuple(value.shape) for key, value in mine.state_dict().items()} == expected
    assert list(mine.state_dict()) == list(expected)
    assert repr(mine) == repr(theirs)


def test_default_initialization() -> None:
    module = LSTM(8, 16, num_layers=2)
    bound = 1 / math.sqrt(16)
    values = np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.1)  # U(-b, b)
    cell = GRUCell(8, 4)
    assert np.abs(cell.weight_hh.detach().numpy()).max() <= 1 / math.sqrt(4)


def test_all_weights_and_extra_repr() -> None:
    module = GRU(4, 3, num_layers=2, bidirectional=True, batch_first=True)
    assert [len(group) for group in module.all_weights] == [4, 4, 4, 4]
    assert module.all_weights[1][0] is module.weight_ih_l0_reverse
    assert module.flatten_parameters() is None  # PyTorch code calls it; nothing to pack here
    assert repr(module) == "GRU(4, 3, num_layers=2, batch_first=True, bidirectional=True)"
    assert repr(RNNCell(2, 3, nonlinearity="relu")) == "RNNCell(2, 3, nonlinearity=relu)"


def _call(torch: Any, name: str, module_args: tuple, *arrays: Any, **kwargs: Any) -> tuple:
    """Two thunks that build the named module and call it on ``arrays``."""
    lib_mine = {**LAYERS, **CELLS}

    def convert(value: Any, to_tensor: Any) -> Any:
        if isinstance(value, tuple):
            return tuple(convert(v, to_tensor) for v in value)
        return to_tensor(value)

    def mine() -> Any:
        return lib_mine[name](*module_args, **kwargs)(*convert(arrays, tk.tensor))

    def theirs() -> Any:
        return getattr(torch.nn, name)(*module_args, **kwargs)(*convert(arrays, torch.tensor))

    return mine, theirs


def _zeros(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return np.zeros(shape, dtype)


@pytest.mark.parametrize(
    ("name", "arrays"),
    [
        ("LSTM", (_zeros(5, 2, 6),)),
        ("GRU", (_zeros(5, 2, 2, 4),)),
        ("RNN", (_zeros(5, 2, 4), _zeros(1, 2, 3))),
        ("RNN", (_zeros(5, 2, 4), _zeros(2, 3))),
        ("GRU", (_zeros(5, 4), _zeros(2, 1, 3))),
        ("LSTM", (_zeros(5, 2, 4), (_zeros(2, 2, 4), _zeros(2, 2, 3)))),
        ("LSTM", (_zeros(5, 2, 4), (_zeros(2, 2, 3), _zeros(2, 3, 3)))),
        ("LSTM", (_zeros(5, 4), (_zeros(2, 2, 3), _zeros(2, 2, 3)))),
        ("LSTM", (_zeros(5, 2, 4), (_zeros(2, 3), _zeros(2, 2, 3)))),
        ("RNN", (_zeros(5, 2, 4, dtype=np.float64),)),
    ],
    ids=[
        "input_size",
        "input_4d",
        "hidden_size",
        "hx_2d_for_batched",
        "hx_3d_for_unbatched",
        "lstm_h0",
        "lstm_c0",
        "lstm_unbatched_states",
        "lstm_batched_states",
        "dtype",
    ],
)
def test_layer_misuse_errors(torch: Any, name: str, arrays: tuple) -> None:
    same_error(*_call(torch, name, (4, 3, 2), *arrays))


@pytest.mark.parametrize(
    ("name", "arrays"),
    [
        ("LSTMCell", (_zeros(2, 5),)),
        ("LSTMCell", (_zeros(2, 4), (_zeros(2, 2), _zeros(2, 3)))),
        ("LSTMCell", (_zeros(2, 4), (_zeros(3, 3), _zeros(3, 3)))),
        ("GRUCell", (_zeros(2, 4), _zeros(2, 5))),
        ("RNNCell", (_zeros(2, 2, 4),)),
        ("GRUCell", (_zeros(2, 4), _zeros(1, 2, 3))),
    ],
    ids=["input_size", "hidden_size", "batch", "gru_hidden", "input_3d", "hidden_3d"],
)
def test_cell_misuse_errors(torch: Any, name: str, arrays: tuple) -> None:
    same_error(*_call(torch, name, (4, 3), *arrays))


@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("RNN", (4, 3), {"nonlinearity": "gelu"}),
        ("LSTM", (4, 3), {"proj_size": 3}),
        ("LSTM", (4, 3), {"proj_size": -1}),
        ("GRU", (4, 3), {"dropout": 2}),
        ("GRU", (4, 3), {"dropout": True}),
        ("GRU", (4, 0), {}),
        ("GRU", (4.0, 3), {}),
        ("LSTM", (4, 3), {"num_layers": 0}),
        ("RNN", (4, 3), {"bias": 1}),
    ],
)
def test_constructor_errors(torch: Any, name: str, args: tuple, kwargs: dict) -> None:
    same_error(
        lambda: LAYERS[name](*args, **kwargs),
        lambda: getattr(torch.nn, name)(*args, **kwargs),
    )


def test_dropout_with_one_layer_warns() -> None:
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        LSTM(4, 3, dropout=0.2)


def test_one_matmul_per_time_step() -> None:
    """The input is projected once per layer and direction, then one matmul per step."""
    module = LSTM(3, 4, num_layers=2, bidirectional=True)
    with tk.autograd.Tape() as tape:
        module(tk.randn(5, 2, 3))
    matmuls = [entry for entry in tape.forward_entries() if entry.name == "matmul"]
    projections = [entry for entry in tape.forward_entries() if entry.name == "addmm"]
    assert len(matmuls) == 2 * 2 * 5 and len(projections) == 2 * 2
    assert {entry.module_path for entry in matmuls} == {"LSTM"}
