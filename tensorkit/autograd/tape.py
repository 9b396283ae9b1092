"""The Tape: a first-class record of every op run while it is active.

``with tk.autograd.Tape() as tape:`` observes each op (forward, and the ops that gradient rules
run in backward): its name, its inputs and outputs (shape, dtype, device, a tape-local id),
the user's call site, the nn module path, the ranges it ran in (``scopes``: record_function
ranges and composite functions such as ``conv2d``, each call told apart in ``scope_calls``),
and a ``records`` dict that the profiler fills with time and memory. The tape also learns the
class of each module path it sees (``module_classes``) and names the tensors it first meets
as inputs (``tensor_names``): a parameter or buffer by its qualified name in the outermost
module running ("0.weight"), another tensor by the expression at the user's call site that
denotes it ("x"; see :mod:`tensorkit._callsite`). ``tape.graph()`` turns that into plain,
JSON-serializable nodes and edges.
The tape holds tensors only weakly, so recording a training loop keeps no memory alive
(the backward graph of a pass being recorded is held until the next pass or the tape's exit).
Each backward step observed is kept in ``backward_steps``; the first ``step_details`` of them
also keep a description for replay (the stepper's: gradients as bounded payloads, see
:mod:`tensorkit.notebook.replay`), and ``backward_passes`` each pass's leaves before it.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from .. import _notebook_hooks, _state
from .._callsite import display_site, source_names, user_frame
from .._ranges import scope_calls as _scope_calls
from .._ranges import scopes as _scopes
from ..tensor import Tensor

__all__ = [
    "Tape",
    "TapeEntry",
    "TensorInfo",
    "enter_module",
    "exit_module",
    "module_scope",
    "summarize_values",
]

# The module object of each open module scope, beside ``_state.module_path`` (None for a
# scope opened by name alone).
_modules: list[Any] = []


@dataclass
class TensorInfo:
    """What the tape knows of one tensor: enough to draw it, nothing that keeps it alive."""

    id: int
    shape: list[int]
    dtype: str
    device: str
    requires_grad: bool
    is_leaf: bool
    nbytes: int
    summary: dict | None = None

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "shape": self.shape,
            "dtype": self.dtype,
            "device": self.device,
            "requires_grad": self.requires_grad,
            "is_leaf": self.is_leaf,
            "nbytes": self.nbytes,
            "summary": self.summary,
        }


@dataclass
class TapeEntry:
    """One recorded op."""

    index: int
    name: str
    phase: str
    inputs: list[TensorInfo | str]
    outputs: list[TensorInfo]
    attrs: dict
    call_site: str | None
    module_path: str
    grad_fn: str | None
    backward_of: int | None
    start_ns: int
    end_ns: int
    records: dict = field(default_factory=dict)
    scopes: tuple[str, ...] = ()  # record_function ranges and composite functions, outermost first
    # per scope: (call number, nn module path it was opened in, "function" or "range")
    scope_calls: tuple[tuple[int, str, str], ...] = ()

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "name": self.name,
            "phase": self.phase,
            "inputs": [
                i.to_dict() if isinstance(i, TensorInfo) else {"value": i} for i in self.inputs
            ],
            "outputs": [o.to_dict() for o in self.outputs],
            "attrs": self.attrs,
            "call_site": self.call_site,
            "module_path": self.module_path,
            "grad_fn": self.grad_fn,
            "backward_of": self.backward_of,
            "duration_ns": self.duration_ns,
            "records": _jsonable(self.records),
            "scopes": list(self.scopes),
            "scope_calls": [list(call) for call in self.scope_calls],
        }


class Tape:
    """Records ops while active (``with Tape() as tape:``); reusable and nestable.

    ``summaries=True`` stores min/max/mean/std and NaN/inf counts of each floating output at
    the time it was made (O(size) per op); ``call_sites`` captures the user's file:line (and
    the variable names of the tensors passed there, in ``tensor_names``);
    ``step_details`` is how many backward steps keep a replayable description (each costs
    O(size) per gradient, a copy to the host included, and at most ~25 KB of JSON per
    gradient; 0 keeps none).
    """

    def __init__(
        self, *, summaries: bool = True, call_sites: bool = True, step_details: int = 200
    ) -> None:
        if isinstance(step_details, bool) or not isinstance(step_details, int):
            raise TypeError(f"step_details must be an int, got {type(step_details).__name__}")
        if step_details < 0:
            raise ValueError(f"step_details must be >= 0, got {step_details}")
        self.entries: list[TapeEntry] = []
        self.backward_steps: list[dict] = []
        self.backward_passes: list[dict] = []
        self.summaries = summaries
        self.call_sites = call_sites
        self.step_details = step_details
        self._described = 0
        self._pass: Any = None  # the PassRecorder of the pass being recorded
        self._ids: dict[int, tuple[weakref.ref, int]] = {}
        self._next_id = 0
        self._producer: dict[int, tuple[int, int]] = {}
        self._entry_of_node: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._active = False
        self.module_classes: dict[str, str] = {}  # module path -> class name of its module
        self.tensor_names: dict[int, str] = {}  # tape id -> parameter or variable name
        self._paths_seen: set[str] = set()
        self._member_names: dict[int, tuple[weakref.ref, dict[int, str]]] = {}

    # --------------------------------------------------------------------- recording
    def __enter__(self) -> Tape:
        if self._active:
            raise RuntimeError("this Tape is already recording; use a new Tape to nest")
        self._active = True
        _state.add_observer(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self._active = False
        self._pass = None
        _state.remove_observer(self)

    def op_started(self, event: Any) -> None:
        return None

    def op_finished(self, event: Any) -> None:
        index = len(self.entries)
        known_ids = self._next_id
        inputs = [
            self._describe(x) if isinstance(x, Tensor) else _short_repr(x) for x in event.inputs
        ]
        frame = user_frame() if self.call_sites else None
        if self._next_id != known_ids:  # tensors made outside the tape: name them
            self._name_inputs(event.inputs, inputs, known_ids, frame)
        if event.module_path not in self._paths_seen:
            self._learn_modules(event.module_path)
        outputs = [
            self._describe(o, summarize=True) for o in event.outputs if isinstance(o, Tensor)
        ]
        for nr, info in enumerate(outputs):
            self._producer[info.id] = (index, nr)
        backward_of = None
        if event.backward_node is not None:
            backward_of = self._entry_of_node.get(event.backward_node)
        entry = TapeEntry(
            index=index,
            name=event.name,
            phase=event.phase,
            inputs=inputs,
            outputs=outputs,
            attrs=_summarize_attrs(event.attrs),
            call_site=None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}",
            module_path=event.module_path,
            grad_fn=event.node.name() if event.node is not None else None,
            backward_of=backward_of,
            start_ns=event.start_ns,
            end_ns=event.end_ns,
            records=event.records,
            scopes=tuple(_scopes),
            scope_calls=tuple(_scope_calls),
        )
        self.entries.append(entry)
        if event.node is not None:
            self._entry_of_node[event.node] = index

    def _learn_modules(self, path: str) -> None:
        """Record the class of each module open now, by path (``path`` is the innermost)."""
        self._paths_seen.add(path)
        prefix = ""
        for segment, module in zip(_state.module_path, _modules, strict=False):
            prefix = f"{prefix}.{segment}" if prefix else segment
            if module is not None:
                self.module_classes.setdefault(prefix, type(module).__name__)

    def _name_inputs(
        self, tensors: tuple, inputs: list, known_ids: int, frame: FrameType | None
    ) -> None:
        """Name the inputs seen for the first time (tape ids above ``known_ids``): parameters
        and buffers of the outermost module running by their qualified names, other tensors by
        the expression at the call site that denotes them."""
        new = {
            id(tensor): info.id
            for tensor, info in zip(tensors, inputs, strict=True)
            if isinstance(info, TensorInfo) and info.id > known_ids
        }
        members = self._module_member_names(tensors, new)
        for key in [key for key in new if key in members]:
            self.tensor_names[new.pop(key)] = members[key]
        if new and frame is not None:
            for key, text in source_names(frame, new).items():
                self.tensor_names[new[key]] = text

    def _module_member_names(self, tensors: tuple, new: dict[int, int]) -> dict[int, str]:
        """id(tensor) -> qualified name, for the parameters and buffers of the outermost
        module running (names relative to it; prefixed with its path segment when it was
        called by the name its parent gave it). Cached per module, rebuilt once when a
        parameter among ``tensors`` is missing (a parameter replaced since)."""
        root = _modules[0] if _modules else None
        if root is None:
            return {}
        cached = self._member_names.get(id(root))
        names = cached[1] if cached is not None and cached[0]() is root else None
        if names is None or any(
            key not in names and t._is_parameter for t in tensors if (key := id(t)) in new
        ):
            segment = _state.module_path[0]
            prefix = "" if segment == type(root).__name__ else segment + "."
            names = {
                id(member): prefix + name
                for members in (root.named_parameters(), root.named_buffers())
                for name, member in members
            }
            self._member_names[id(root)] = (weakref.ref(root), names)
        return names

    def backward_step(self, step: Any) -> None:
        if step.index == 0 or not self.backward_passes:  # a new pass (or joined mid-pass)
            self._start_pass(step.node)
        detail = None
        if self._pass is not None and self._described < self.step_details:
            detail = self._pass.describe(step)
            self._described += 1
        self.backward_steps.append(
            {
                "index": step.index,
                "node": step.name,
                "forward_entry": self._entry_of_node.get(step.node),
                "pass": len(self.backward_passes) - 1,
                "step": detail,
            }
        )

    def _start_pass(self, root: Any) -> None:
        self._pass = None
        leaves: list[dict] = []
        if self._described < self.step_details:
            self._pass = _notebook_hooks.lookup("tape.pass_recorder")(root)
            leaves = self._pass.leaves  # grows if the pass reaches other roots' graphs
        self.backward_passes.append({"leaves": leaves})

    def tensor_id(self, tensor: Tensor) -> int:
        """The tape-local id of ``tensor`` (stable while the tensor lives)."""
        key = id(tensor)
        known = self._ids.get(key)
        if known is not None and known[0]() is tensor:
            return known[1]
        self._next_id += 1
        self._ids[key] = (weakref.ref(tensor), self._next_id)
        return self._next_id

    def entry_for(self, tensor: Tensor) -> TapeEntry | None:
        """The entry that produced ``tensor``, or None for tensors made outside the tape."""
        produced = self._producer.get(self.tensor_id(tensor))
        return None if produced is None else self.entries[produced[0]]

    def _describe(self, tensor: Tensor, summarize: bool = False) -> TensorInfo:
        data = tensor._data
        return TensorInfo(
            id=self.tensor_id(tensor),
            shape=list(data.shape),
            dtype=str(data.dtype),
            device=str(tensor._device),
            requires_grad=tensor._requires_grad,
            is_leaf=tensor.grad_fn is None,
            nbytes=int(data.nbytes),
            summary=summarize_values(tensor) if summarize and self.summaries else None,
        )

    # ----------------------------------------------------------------------- reading
    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[TapeEntry]:
        return iter(self.entries)

    def __getitem__(self, index: int) -> TapeEntry:
        return self.entries[index]

    def forward_entries(self) -> list[TapeEntry]:
        return [e for e in self.entries if e.phase == "forward"]

    def graph(self, *, phase: str | None = "forward") -> dict:
        """Plain-data graph: op nodes, tensor nodes for inputs made outside the tape (with
        their ``name`` from ``tensor_names``, None when unnamed), edges.

        Each edge goes from a producer (op or external tensor) to the op consuming it, with the
        tensor id and the argument position. ``phase=None`` includes backward ops too.
        """
        entries = [e for e in self.entries if phase is None or e.phase == phase]
        nodes: list[dict] = []
        edges: list[dict] = []
        external: dict[int, dict] = {}
        kept = {e.index for e in entries}
        for entry in entries:
            nodes.append({**entry.to_dict(), "id": f"op{entry.index}", "kind": "op"})
            for position, info in enumerate(entry.inputs):
                if not isinstance(info, TensorInfo):
                    continue
                produced = self._producer.get(info.id)
                if produced is not None and produced[0] in kept and produced[0] < entry.index:
                    source = f"op{produced[0]}"
                elif info.id not in external:
                    source = f"t{info.id}"
                    external[info.id] = {
                        **info.to_dict(),
                        "id": source,
                        "tensor": info.id,
                        "kind": "tensor",
                        "name": self.tensor_names.get(info.id),
                    }
                else:
                    source = f"t{info.id}"
                edges.append(
                    {
                        "source": source,
                        "target": f"op{entry.index}",
                        "tensor": info.id,
                        "position": position,
                        "shape": info.shape,
                    }
                )
        return {"nodes": list(external.values()) + nodes, "edges": edges}

    def show(self, **kwargs: Any) -> Any:
        """A graph widget of this tape: ``tensorkit.notebook.show(self, **kwargs)``."""
        return _notebook_hooks.lookup("tape.show")(self, **kwargs)

    def save(self, path: str) -> Any:
        """Write this tape as one shareable JSON recording (``tk.notebook.open`` shows it)."""
        return _notebook_hooks.lookup("tape.save")(self, path)

    def to_html(self, path: str) -> Any:
        """Write a standalone HTML page of this tape's graph and entries (no kernel needed)."""
        return _notebook_hooks.lookup("tape.to_html")(self, path)

    def to_text(self) -> str:
        """One line per op: index, phase, name, shapes, module path and call site (as
        :func:`tensorkit._callsite.display_site` shows it: "cell [3], line 2" in a notebook)."""
        lines = []
        shown: dict[str, str | None] = {}
        for e in self.entries:
            shapes_in = ", ".join(
                "x".join(map(str, i.shape)) or "scalar" if isinstance(i, TensorInfo) else str(i)
                for i in e.inputs
            )
            shapes_out = ", ".join("x".join(map(str, o.shape)) or "scalar" for o in e.outputs)
            where = f"  [{e.module_path}]" if e.module_path else ""
            if e.call_site is not None and e.call_site not in shown:
                shown[e.call_site] = display_site(e.call_site)
            site = f"  {shown[e.call_site]}" if e.call_site else ""
            phase = "fwd" if e.phase == "forward" else "bwd"
            lines.append(f"{e.index:4d} {phase} {e.name}({shapes_in}) -> {shapes_out}{where}{site}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Tape: {len(self.entries)} ops>"


def summarize_values(tensor: Tensor) -> dict | None:
    """min/max/mean/std and NaN/inf counts of a tensor (None for non-numeric or empty)."""
    data = tensor._data
    if data.size == 0 or data.dtype.kind not in "fiub":
        return None
    xp = tensor._device.xp
    values = data.astype("float64") if data.dtype.kind != "f" or data.dtype.itemsize < 8 else data
    finite_mask = xp.isfinite(values)
    nan_count = int(xp.isnan(values).sum())
    inf_count = int(values.size - int(finite_mask.sum()) - nan_count)
    finite = values[finite_mask] if nan_count or inf_count else values
    if finite.size == 0:
        return {
            "min": None,
            "max": None,
            "mean": None,
            "std": None,
            "nan": nan_count,
            "inf": inf_count,
        }
    return {
        "min": _float(finite.min()),
        "max": _float(finite.max()),
        "mean": _float(finite.mean()),
        "std": _float(finite.std()),
        "nan": nan_count,
        "inf": inf_count,
    }


def _float(value: Any) -> float:
    result = float(value)
    return result if math.isfinite(result) else None  # type: ignore[return-value]


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _summarize_attrs(attrs: dict) -> dict:
    """Attributes as JSON-able values; arrays (index tensors, masks) become shape summaries."""
    return {key: _jsonable(value) for key, value in attrs.items()}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, slice):
        parts = [value.start, value.stop] + ([value.step] if value.step is not None else [])
        return ":".join("" if part is None else str(part) for part in parts)
    if value is Ellipsis:
        return "..."
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return {"array": list(value.shape), "dtype": str(value.dtype)}
    return _short_repr(value)


def enter_module(name: str, module: Any = None) -> None:
    """Open the scope of the module at path ``name`` (``module_scope`` without a context
    manager, for ``Module.__call__``, which opens one on every call); ``exit_module`` closes
    it."""
    _state.module_path.append(name)
    _modules.append(module)


def exit_module() -> None:
    _state.module_path.pop()
    _modules.pop()


@contextlib.contextmanager
def module_scope(name: str, module: Any = None) -> Iterator[None]:
    """Mark ops run inside as belonging to the module at path ``name`` (used by tk.nn, which
    passes the ``module`` too, so that a Tape learns its class and its parameters' names)."""
    enter_module(name, module)
    try:
        yield
    finally:
        exit_module()
