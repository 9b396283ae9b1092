"""Recurrent layers: RNN, LSTM and GRU over whole sequences, and their one-step cells.

A layer projects its whole input sequence with one matmul, then loops over the time steps in
Python with one matmul per step for all the gates (``h @ W_hh^T``). Gradients come from the
ops' own rules. Gate order and formulas are PyTorch's (LSTM: i, f, g, o; GRU: r, z, n).

A ``PackedSequence`` input runs the same loop on its steps, each ``batch_sizes[t]`` rows: going
forward, the sequences that end leave their final state behind as the batch shrinks; going
backward, the sequences that start join with their initial state as it grows.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

from ...ops.creation import empty, zeros
from ...ops.shape import cat, stack
from ...tensor import Tensor
from .. import functional as F  # noqa: N812
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

State = tuple[Tensor, ...]
Step = Callable[[Tensor, Tensor, State], State]


def _tanh_step(gi: Tensor, gh: Tensor, state: State) -> State:
    return ((gi + gh).tanh(),)


def _relu_step(gi: Tensor, gh: Tensor, state: State) -> State:
    return (F.relu(gi + gh),)


def _lstm_step(gi: Tensor, gh: Tensor, state: State) -> State:
    """``c' = f * c + i * g``, ``h' = o * tanh(c')``."""
    ingate, forget, cell, outgate = (gi + gh).chunk(4, -1)
    c = forget.sigmoid() * state[1] + ingate.sigmoid() * cell.tanh()
    return outgate.sigmoid() * c.tanh(), c


def _gru_step(gi: Tensor, gh: Tensor, state: State) -> State:
    """``n = tanh(x_n + r * h_n)``, ``h' = (1 - z) * n + z * h``."""
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    reset = (i_r + h_r).sigmoid()
    update = (i_z + h_z).sigmoid()
    new = (i_n + reset * h_n).tanh()
    return ((state[0] - new) * update + new,)


# mode -> (gates per hidden unit, step function)
_MODES: dict[str, tuple[int, Step]] = {
    "RNN_TANH": (1, _tanh_step),
    "RNN_RELU": (1, _relu_step),
    "LSTM": (4, _lstm_step),
    "GRU": (3, _gru_step),
}


def _check_rnn_args(
    input_size: Any, hidden_size: Any, num_layers: int, dropout: Any, proj_size: int
) -> None:
    """PyTorch's constructor checks of the sizes, dropout and proj_size."""
    if (
        not isinstance(dropout, numbers.Number)
        or isinstance(dropout, bool)
        or not 0 <= dropout <= 1  # type: ignore[operator]
    ):
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the probability of an "
            "element being zeroed"
        )
    if dropout > 0 and num_layers == 1:  # type: ignore[operator]
        warnings.warn(
            "dropout option adds dropout after all but last recurrent layer, so non-zero "
            f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
            f"num_layers={num_layers}",
            stacklevel=4,
        )
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNNBase(Module):
    """Shared machinery of RNN, LSTM and GRU: parameters per layer and direction, named
    ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (LSTM with
    ``proj_size`` adds ``weight_hr_l{k}``), with a ``_reverse`` suffix for the backward
    direction; all initialized from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if mode not in _MODES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        for name, flag in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} should be of type bool, got: {type(flag).__name__}")
        _check_rnn_args(input_size, hidden_size, num_layers, dropout, proj_size)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[: self._num_directions]:
                self._add_layer_parameters(layer, suffix, device, dtype)
        self.reset_parameters()

    @property
    def _num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _output_size(self) -> int:
        """The size of ``h`` (``proj_size`` when projecting, else ``hidden_size``)."""
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _add_layer_parameters(self, layer: int, suffix: str, device: Any, dtype: Any) -> None:
        gates = _MODES[self.mode][0] * self.hidden_size
        layer_input = self.input_size if layer == 0 else self._output_size * self._num_directions
        shapes = {"weight_ih": (gates, layer_input), "weight_hh": (gates, self._output_size)}
        if self.bias:
            shapes.update(bias_ih=(gates,), bias_hh=(gates,))
        if self.proj_size > 0:
            shapes["weight_hr"] = (self.proj_size, self.hidden_size)
        names = []
        for kind, shape in shapes.items():
            name = f"{kind}_l{layer}{suffix}"
            setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
            names.append(name)
        self._all_weights.append(names)

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Nothing to do: PyTorch packs the weights into one buffer for cuDNN; tensorkit's
        RNNs use the parameters as they are. Kept so PyTorch code calling it runs."""

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text

    # ------------------------------------------------------------------------- forward
    def _check_input_dims(self, input: Tensor, name: str, suffix: str) -> bool:
        """True for a batched (3-D) input; raises for anything but 2-D or 3-D."""
        if input.ndim not in (2, 3):
            raise ValueError(
                f"{name}: Expected input to be 2D or 3D, got {input.ndim}D{suffix} instead"
            )
        return input.ndim == 3

    def _check_input(self, input: Tensor, dims: int = 3) -> None:
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
                f"Convert input: input.to({weight.dtype}), or convert model: "
                f"model.to({input.dtype})"
            )
        if input.ndim != dims:
            raise RuntimeError(f"input must have {dims} dimensions, got {input.ndim}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.shape[-1]}"
            )

    def _initial_states(self, input: Tensor, batch: int, states: State | None) -> State:
        """The given (time-major, batched) states after size checks, or zeros."""
        rows = self.num_layers * self._num_directions
        expected = [(rows, batch, self._output_size)]
        if self.mode == "LSTM":
            expected.append((rows, batch, self.hidden_size))
        if states is None:
            return tuple(zeros(size, dtype=input.dtype, device=input.device) for size in expected)
        for index, (state, size) in enumerate(zip(states, expected, strict=True)):
            if tuple(state.shape) != size:
                label = f"hidden[{index}]" if self.mode == "LSTM" else "hidden"
                raise RuntimeError(f"Expected {label} size {size}, got {list(state.shape)}")
        return states

    def _run(self, input: Tensor, states: State | None, batched: bool) -> tuple[Tensor, State]:
        """Run every layer over ``input``; returns the output and the final states, in the
        caller's layout (batch_first or not, batched or not)."""
        x = input
        if not batched:
            x = x.unsqueeze(1)
            states = None if states is None else tuple(s.unsqueeze(1) for s in states)
        elif self.batch_first:
            x = x.transpose(0, 1)
        self._check_input(x)
        output, finals = self._layers(x, self._initial_states(x, x.shape[1], states))
        if not batched:
            return output.squeeze(1), tuple(f.squeeze(1) for f in finals)
        return (output.transpose(0, 1) if self.batch_first else output), finals

    def _run_packed(
        self, input: PackedSequence, states: State | None
    ) -> tuple[PackedSequence, State]:
        """Run every layer over a packed batch; the given states and the final ones are in
        the caller's batch order (the packed steps are sorted longest first)."""
        data, batch_sizes, sorted_indices, unsorted_indices = input
        sizes = [int(n) for n in batch_sizes.tolist()]
        if states is not None and sorted_indices is not None:
            states = tuple(s.index_select(1, sorted_indices) for s in states)
        self._check_input(data, dims=2)
        output, finals = self._layers(data, self._initial_states(data, sizes[0], states), sizes)
        if unsorted_indices is not None:
            finals = tuple(f.index_select(1, unsorted_indices) for f in finals)
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), finals

    def _layers(
        self, x: Tensor, states: State, batch_sizes: list[int] | None = None
    ) -> tuple[Tensor, State]:
        """Time-major ``x`` (T, N, F), or packed data with ``batch_sizes``, through all
        layers; dropout between layers in training."""
        rows = [state.unbind(0) for state in states]
        finals: list[State] = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self._num_directions):
                index = layer * self._num_directions + direction
                start = tuple(row[index] for row in rows)
                output, final = self._direction(x, start, index, direction == 1, batch_sizes)
                outputs.append(output)
                finals.append(final)
            x = outputs[0] if len(outputs) == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        return x, tuple(stack(parts) for parts in zip(*finals, strict=True))

    def _direction(
        self, x: Tensor, state: State, index: int, reverse: bool, batch_sizes: list[int] | None
    ) -> tuple[Tensor, State]:
        """One layer in one direction: one matmul for the input, one per time step."""
        w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(index)
        projected = F.linear(x, w_ih, b_ih)
        recurrent = (w_hh, b_hh, w_hr)
        if batch_sizes is not None:
            return self._packed_direction(projected, state, recurrent, reverse, batch_sizes)
        outputs, state = self._recur(projected.unbind(0), state, recurrent, reverse)
        return stack(outputs), state

    def _packed_direction(
        self,
        projected: Tensor,
        state: State,
        recurrent: tuple[Any, ...],
        reverse: bool,
        batch_sizes: list[int],
    ) -> tuple[Tensor, State]:
        """``_direction`` over packed steps: the state keeps one row per running sequence."""
        initial, ended = state, []
        if reverse:
            state = tuple(s[: batch_sizes[-1]] for s in state)

        def resize(state: State, rows: int) -> State:
            return _resize_state(state, rows, initial, ended)

        steps = projected.split(batch_sizes)
        outputs, state = self._recur(steps, state, recurrent, reverse, resize)
        if ended:
            state = tuple(cat(list(parts)) for parts in zip(state, *reversed(ended), strict=True))
        return cat(outputs), state

    def _recur(
        self,
        steps: Any,
        state: State,
        recurrent: tuple[Any, ...],
        reverse: bool,
        resize: Callable[[State, int], State] | None = None,
    ) -> tuple[list[Tensor], State]:
        """The recurrence over ``steps`` (the input projections, in time order) with
        ``recurrent`` = (weight_hh, bias_hh, weight_hr): each step's output, in time order,
        and the last state. ``resize`` first fits the state to a step's rows (packed input)."""
        w_hh, b_hh, w_hr = recurrent
        step = _MODES[self.mode][1]
        w_hh_t = w_hh.T
        w_hr_t = None if w_hr is None else w_hr.T
        outputs = []
        for gi in reversed(steps) if reverse else steps:
            if resize is not None:
                state = resize(state, gi.shape[0])
            gh = state[0] @ w_hh_t
            state = step(gi, gh if b_hh is None else gh + b_hh, state)
            if w_hr_t is not None:
                state = (state[0] @ w_hr_t, *state[1:])
            outputs.append(state[0])
        if reverse:
            outputs.reverse()
        return outputs, state

    def _layer_weights(self, index: int) -> tuple[Any, ...]:
        """(weight_ih, weight_hh, bias_ih, bias_hh, weight_hr) of one layer and direction;
        None for the ones this module does not have."""
        layer, direction = divmod(index, self._num_directions)
        suffix = "_reverse" if direction else ""
        kinds = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")
        return tuple(getattr(self, f"{kind}_l{layer}{suffix}", None) for kind in kinds)


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu).

    ``forward(input, hx=None)`` returns ``(output, h_n)``; input is (L, N, H_in), (N, L, H_in)
    with ``batch_first``, unbatched (L, H_in), or a ``PackedSequence`` (then so is output).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        self.nonlinearity = nonlinearity
        super().__init__(
            "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )

    def forward(
        self, input: Tensor | PackedSequence, hx: Tensor | None = None
    ) -> tuple[Tensor | PackedSequence, Tensor]:
        return _forward_single_state(self, "RNN", input, hx)


class GRU(RNNBase):
    """Gated recurrent unit layers; ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            "GRU",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            device=device,
            dtype=dtype,
        )

    def forward(
        self, input: Tensor | PackedSequence, hx: Tensor | None = None
    ) -> tuple[Tensor | PackedSequence, Tensor]:
        return _forward_single_state(self, "GRU", input, hx)


def _resize_state(state: State, rows: int, initial: State, ended: list[State]) -> State:
    """The state for a packed step of ``rows`` sequences: the rows of sequences that ended
    go to ``ended``; the rows of sequences that start come from ``initial``."""
    have = state[0].shape[0]
    if rows < have:
        ended.append(tuple(s[rows:] for s in state))
        return tuple(s[:rows] for s in state)
    if rows > have:
        return tuple(cat([s, s0[have:rows]]) for s, s0 in zip(state, initial, strict=True))
    return state


def _forward_single_state(
    module: RNNBase, name: str, input: Tensor | PackedSequence, hx: Tensor | None
) -> tuple[Tensor | PackedSequence, Tensor]:
    """RNN's and GRU's forward: one state tensor ``h``."""
    if isinstance(input, PackedSequence):
        packed, (h_n,) = module._run_packed(input, None if hx is None else (hx,))
        return packed, h_n
    batched = module._check_input_dims(input, name, " tensor" if name == "RNN" else "")
    if hx is not None and hx.ndim != (3 if batched else 2):
        kind = "batched 3-D" if batched else "unbatched 2-D"
        raise RuntimeError(
            f"For {kind} input, hx should also be {3 if batched else 2}-D but got "
            f"{hx.ndim}-D tensor"
        )
    output, (h_n,) = module._run(input, None if hx is None else (hx,), batched)
    return output, h_n


class LSTM(RNNBase):
    """Long short-term memory layers, optionally with projections (``proj_size``).

    ``forward(input, hx=None)`` takes ``hx = (h_0, c_0)`` and returns
    ``(output, (h_n, c_n))``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            "LSTM",
            input_size,
            hidden_size,
            num_layers,
            bias,
            batch_first,
            dropout,
            bidirectional,
            proj_size,
            device=device,
            dtype=dtype,
        )

    def forward(
        self, input: Tensor | PackedSequence, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor | PackedSequence, tuple[Tensor, Tensor]]:
        if isinstance(input, PackedSequence):
            packed, (h_n, c_n) = self._run_packed(input, None if hx is None else tuple(hx))
            return packed, (h_n, c_n)
        batched = self._check_input_dims(input, "LSTM", "")
        if hx is not None:
            dims = 3 if batched else 2
            if hx[0].ndim != dims or hx[1].ndim != dims:
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {dims}-D but got "
                    f"({hx[0].ndim}-D, {hx[1].ndim}-D) tensors"
                )
        output, (h_n, c_n) = self._run(input, None if hx is None else tuple(hx), batched)
        return output, (h_n, c_n)


# --------------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """Shared machinery of the cells: ``weight_ih`` (chunks * hidden, input), ``weight_hh``
    (chunks * hidden, hidden), ``bias_ih`` and ``bias_hh``, all from
    U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = num_chunks * hidden_size
        self.weight_ih = Parameter(empty((rows, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((rows, hidden_size), device=device, dtype=dtype))
        for name in ("bias_ih", "bias_hh"):
            if bias:
                setattr(self, name, Parameter(empty(rows, device=device, dtype=dtype)))
            else:
                self.register_parameter(name, None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            text += f", nonlinearity={nonlinearity}"
        return text

    def _prepare(
        self, name: str, input: Tensor, states: State | None, labels: tuple[str, ...]
    ) -> tuple[Tensor, State, bool]:
        """Batch unbatched arguments, make zero states, check sizes as PyTorch's cells do."""
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if states is not None:
            for label, state in zip(labels, states, strict=True):
                if state.ndim not in (1, 2):
                    raise ValueError(
                        f"{name}: Expected {label} to be 1D or 2D, got {state.ndim}D instead"
                    )
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        if not batched and states is not None:
            states = tuple(s.unsqueeze(0) for s in states)
        if x.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}"
            )
        if states is None:
            state = zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
            return x, (state,) * len(labels), batched
        for index, state in enumerate(states):
            _check_cell_state(x, state, index, self.hidden_size)
        return x, states, batched

    def _step(self, step: Step, input: Tensor, states: State) -> State:
        gi = F.linear(input, self.weight_ih, self.bias_ih)
        gh = F.linear(states[0], self.weight_hh, self.bias_hh)
        return step(gi, gh, states)


def _check_cell_state(input: Tensor, state: Tensor, index: int, hidden_size: int) -> None:
    if input.shape[0] != state.shape[0]:
        raise RuntimeError(
            f"Input batch size {input.shape[0]} doesn't match hidden{index} batch size "
            f"{state.shape[0]}"
        )
    if state.shape[1] != hidden_size:
        raise RuntimeError(
            f"hidden{index} has inconsistent hidden_size: got {state.shape[1]}, expected "
            f"{hidden_size}"
        )


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        states = None if hx is None else (hx,)
        x, states, batched = self._prepare("RNNCell", input, states, ("hidden",))
        steps = {"tanh": _tanh_step, "relu": _relu_step}
        if self.nonlinearity not in steps:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        (h,) = self._step(steps[self.nonlinearity], x, states)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c))`` returns ``(h', c')``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        states = None if hx is None else tuple(hx)
        x, states, batched = self._prepare("LSTMCell", input, states, ("hx[0]", "hx[1]"))
        h, c = self._step(_lstm_step, x, states)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``h' = (1 - z) * n + z * h``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        states = None if hx is None else (hx,)
        x, states, batched = self._prepare("GRUCell", input, states, ("hidden",))
        (h,) = self._step(_gru_step, x, states)
        return h if batched else h.squeeze(0)
