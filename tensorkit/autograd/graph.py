"""Graph nodes: one per recorded op, holding its edges, saved values and hooks.

A node's *edges* point, in argument order, to the nodes that produced its tensor inputs
(``None`` for inputs that need no gradient). Leaves that require grad are reached through an
:class:`AccumulateGrad` node, made once per leaf and held weakly by the leaf.

Saved values are kept explicitly, so a viewer can show what a node keeps alive: an input is
kept as ``(tensor, version_when_saved)``; an output is kept as its array and version counter
(keeping the output tensor itself would make a reference cycle through ``grad_fn``).
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._callsite import display_site

if TYPE_CHECKING:
    from ..tensor import Tensor

_sequence = itertools.count()

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class Node:
    """A recorded op in the backward graph (what ``tensor.grad_fn`` points to)."""

    # Hot attributes in slots; hooks and metadata default at class level until first set.
    __slots__ = ("__dict__", "__weakref__", "attrs", "edges", "input_meta", "op", "seq")

    _saved_inputs: list | tuple | None = None
    _saved_outputs: tuple | None = None
    _freed = False
    _pre_hooks: dict | None = None
    _post_hooks: dict | None = None
    _tensor_pre_hooks: dict | None = None
    _retain_grad_hooks: dict | None = None
    output_meta: tuple | None = None
    _metadata: dict | None = None
    _has_hooks = False  # set by any hook registration: the engine's fast path checks one flag

    def __init__(self, op: Any, edges: tuple, attrs: dict, input_meta: tuple) -> None:
        self.op = op
        self.edges = edges
        self.attrs = attrs
        self.input_meta = input_meta
        self.seq = next(_sequence)

    @property
    def metadata(self) -> dict:
        """A free-form dict for tools (anomaly mode stores the forward stack here)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    # ---------------------------------------------------------------- identification
    def name(self) -> str:
        return self.op.node_name

    def __repr__(self) -> str:
        return f"<{self.op.node_name} object at {id(self):#x}>"

    @property
    def next_functions(self) -> tuple[tuple[Node | None, int], ...]:
        """The nodes of this node's inputs, PyTorch style: ``(node, output_nr)`` per input."""
        return tuple((None, 0) if edge is None else edge for edge in self.edges)

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        return tuple([edge is not None for edge in self.edges])

    @property
    def num_outputs(self) -> int:
        meta = self.output_meta
        return 1 if meta is None else len(meta)

    # -------------------------------------------------------------------- saved values
    @property
    def saved_tensors(self) -> tuple:
        """The values the gradient rule needs, checked against in-place changes."""
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        if self._saved_outputs is None and self._saved_inputs is not None:
            unpack = self._unpack_input
            return tuple([unpack(entry, i) for i, entry in enumerate(self._saved_inputs)])
        saved: list = []
        if self._saved_inputs is not None:
            for index, entry in enumerate(self._saved_inputs):
                if type(entry) is tuple:
                    tensor, version = entry
                    _check_version(self, tensor.version_counter(), version, tensor, index)
                    saved.append(tensor)
                else:
                    saved.append(entry)
        if self._saved_outputs is not None:
            for data, dev, counter, version, output_nr in self._saved_outputs:
                saved.append(self._unpack_output(data, dev, counter, version, output_nr))
        return tuple(saved)

    def saved_arrays(self) -> tuple:
        """``saved_tensors`` as arrays (Python scalars as they are), with the same checks:
        what array-level rules read."""
        if self._freed:
            raise RuntimeError(FREED_MESSAGE)
        if self._saved_inputs is None and self._saved_outputs is None:
            return ()
        saved: list = []
        if self._saved_inputs is not None:
            for entry in self._saved_inputs:
                if type(entry) is tuple:
                    tensor, version = entry
                    counter = tensor._version_counter
                    if (0 if counter is None else counter.value) != version:
                        self._unpack_input(entry, len(saved))
                    saved.append(tensor._data)
                else:
                    saved.append(entry)
        if self._saved_outputs is not None:
            for data, _, counter, version, output_nr in self._saved_outputs:
                if counter.value != version:
                    _raise_modified(self, counter, version, data, f"output {output_nr}")
                saved.append(data)
        return tuple(saved)

    def _unpack_input(self, entry: Any, index: int) -> Any:
        if type(entry) is not tuple:
            return entry  # a Python scalar argument
        tensor, version = entry
        counter = tensor._version_counter
        if (0 if counter is None else counter.value) != version:
            _check_version(self, tensor.version_counter(), version, tensor, index)
        return tensor

    def _unpack_output(self, data: Any, dev: Any, counter: Any, version: int, nr: int) -> Tensor:
        from ..tensor import wrap

        if counter.value != version:
            _raise_modified(self, counter, version, data, f"output {nr}")
        tensor = wrap(data, dev)
        tensor.grad_fn = self
        tensor._requires_grad = True
        tensor._output_nr = nr
        tensor._version_counter = counter
        return tensor

    def saved_summary(self) -> list[dict]:
        """What this node keeps alive: one dict per saved tensor (shape, dtype, bytes)."""
        if self._freed:
            return []
        summary = []
        for entry in self._saved_inputs or ():
            if type(entry) is tuple:
                data = entry[0]._data
                summary.append(_describe(data, "input"))
        for data, *_ in self._saved_outputs or ():
            summary.append(_describe(data, "output"))
        return summary

    def free_saved(self) -> None:
        self._saved_inputs = None
        self._saved_outputs = None
        self._freed = True

    # ------------------------------------------------------------------------- hooks
    def register_hook(self, hook: Callable) -> Any:
        """``hook(grad_inputs, grad_outputs)`` runs after this node; it may return new inputs."""
        from ..tensor import RemovableHandle

        if self._post_hooks is None:
            self._post_hooks = {}
        self._has_hooks = True
        return RemovableHandle(self._post_hooks, hook)

    def register_prehook(self, hook: Callable) -> Any:
        """``hook(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        from ..tensor import RemovableHandle

        if self._pre_hooks is None:
            self._pre_hooks = {}
        self._has_hooks = True
        return RemovableHandle(self._pre_hooks, hook)

    def register_tensor_pre_hook(self, output_nr: int, hook: Callable) -> Any:
        from ..tensor import RemovableHandle

        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        self._has_hooks = True
        return RemovableHandle(self._tensor_pre_hooks.setdefault(output_nr, {}), hook)

    def register_retain_grad_hook(self, output_nr: int, hook: Callable) -> None:
        if self._retain_grad_hooks is None:
            self._retain_grad_hooks = {}
        self._has_hooks = True
        self._retain_grad_hooks[output_nr] = hook

    def apply(self, *grad_outputs: Tensor) -> tuple:
        """Run this node's gradient rule: one gradient (or None) per input."""
        grads = self.op.backward(self, *grad_outputs)
        if type(grads) is not tuple:
            grads = (grads,)
        return grads


_node_classes: dict[str, type[Node]] = {}


def node_class(name: str) -> type[Node]:
    """The Node subclass called ``name`` ("MulBackward0"), made once, so that
    ``type(t.grad_fn).__name__`` is PyTorch's name for the node."""
    cls = _node_classes.get(name)
    if cls is None:
        cls = _node_classes[name] = type(name, (Node,), {"__slots__": (), "__module__": __name__})
    return cls


class AccumulateGrad(Node):
    """The node at a leaf that requires grad: adds the incoming gradient into ``leaf.grad``."""

    def __init__(self, leaf: Tensor) -> None:
        super().__init__(ACCUMULATE_OP, (), {}, ((leaf._data.shape, leaf._data.dtype),))
        self.seq = float("inf")  # run as soon as ready, like PyTorch
        self.variable = leaf

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


class _AccumulateOp:
    name = "accumulate_grad"
    node_name = "AccumulateGrad"
    backward = None


ACCUMULATE_OP = _AccumulateOp()


def grad_accumulator(leaf: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad node, made on first use and then reused while alive."""
    ref = leaf._grad_accumulator
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._grad_accumulator = weakref.ref(node)
    return node


def edge_of(tensor: Tensor) -> tuple[Node, int] | None:
    """Where gradient for ``tensor`` flows: its grad_fn, its leaf accumulator, or nowhere."""
    if not tensor._requires_grad:
        return None
    if tensor.grad_fn is not None:
        return (tensor.grad_fn, tensor._output_nr)
    return (grad_accumulator(tensor), 0)


def _describe(data: Any, role: str) -> dict:
    return {
        "role": role,
        "shape": list(data.shape),
        "dtype": str(data.dtype),
        "bytes": int(data.nbytes),
    }


def _check_version(node: Node, counter: Any, version: int, tensor: Tensor, index: int) -> None:
    if counter.value != version:
        _raise_modified(node, counter, version, tensor._data, f"argument {index}")


def _raise_modified(node: Node, counter: Any, version: int, data: Any, which: str) -> None:
    culprit = ""
    if counter.last_op is not None:
        culprit = f" It was last modified in place by {counter.last_op}"
        culprit += f" at {display_site(counter.last_site)}." if counter.last_site else "."
    raise RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: the {data.dtype} tensor of shape {list(data.shape)} saved by "
        f"{node.op.node_name} ({which}) is at version {counter.value}; expected version "
        f"{version} instead.{culprit} Hint: clone the tensor before changing it in place, or "
        "change it after backward."
    )
