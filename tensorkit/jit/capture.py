"""Capture: one call of a function recorded into a :class:`~tensorkit.jit.ir.Graph`.

The :class:`Tracer` is an op observer (the channel the Tape uses): every op the call runs,
forward and the gradient rules a backward runs, becomes a node. Three more events reach it
through ``_state.tracer``, which tensorkit checks where they happen: a tensor's value read
into Python (``item()``, ``bool(t)``, ``tolist()``, ``numpy()``...), an in-place write
(``ops.inplace.inplace_update``) and a random draw (``tensorkit.random``). A value read is a
*graph break*: a replay computes no Python, so the graph is only valid while that value does
not steer the call. A read whose value can be compared (``bool(t)``, ``item()``...) becomes a
guard node holding the value (``guards.py``), which a replay checks; ``tk.jit.trace`` warns
(``TracerWarning``) at every read, and ``tk.compile`` compiles a path per guarded value and
runs a call with any other break eagerly; ``tk.jit.explain`` lists them all.

Tensors the call meets that no op made are placeholders: its arguments and a module's
parameters and buffers (registered before the call), and others found on first use: a tensor
that outlives the call is *external* (optimizer state, a tensor from a closure: a replay reads
its current value), one made and dropped inside it is a *constant* (its value when first
read).
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _state
from .._callsite import display_site, user_call_site
from ..ops._apply import OPS, OpDef, unwrap
from ..tensor import Tensor, wrap
from .guards import unguarded
from .ir import (
    BUFFER,
    CONSTANT,
    EXTERNAL,
    GRAD_OUTPUT,
    INPUT,
    PARAMETER,
    Graph,
    Mutation,
    Node,
    Placeholder,
    Ref,
    Value,
)

__all__ = ["GraphBreak", "TracerWarning", "Tracer", "TracingError", "flatten", "unflatten"]


class TracerWarning(UserWarning):
    """A traced call did something a replay cannot repeat (it read a tensor's value)."""


class TracingError(RuntimeError):
    """A call cannot be captured (an in-place write to a view, an object the IR cannot hold)."""


@dataclass(frozen=True)
class GraphBreak:
    """Where and why a capture cannot stand for the call: ``kind`` is "value_read",
    "random", "function", "inplace_view" or "unsupported"; ``site`` the user's call site.
    A ``guarded`` break is a value read the graph holds as a guard node (``guards.py``):
    a compiled call checks it reads ``value`` again, so the call still compiles."""

    kind: str
    reason: str
    site: str
    guarded: bool = False
    value: Any = None

    def __str__(self) -> str:
        return f"{self.reason} (at {self.site})" if self.site else self.reason


_NOT_GIVEN: Any = object()  # value_read without a value


def _site() -> str:
    return display_site(user_call_site()) or ""


def value_meta(tensor: Tensor, value_id: int) -> Value:
    data = tensor._data
    return Value(
        value_id, tuple(data.shape), data.dtype.name, str(tensor._device), tensor._requires_grad
    )


class Tracer:
    """An op observer building one :class:`Graph` (use as a context manager)."""

    def __init__(self, *, warn: bool = False) -> None:
        self.graph = Graph()
        self.warn = warn
        self._next_id = 0
        self._by_tensor: dict[int, tuple[Any, int]] = {}  # id(tensor) -> (weakref, value id)
        self._by_array: dict[int, tuple[Any, int]] = {}  # id(array) -> (array, value id)
        self._found: list[tuple[Any, int]] = []  # (weakref, placeholder index) found in use
        self._snapshots: dict[int, Any] = {}  # placeholder index -> its array before a write
        self._placeholder_refs: list[Any] = []  # per placeholder, a weakref to its tensor
        self._placeholder_by_tensor: dict[int, int] = {}  # id(tensor) -> placeholder index
        self._grad_before: dict[int, Any] = {}  # placeholder index -> its .grad when met
        self._forward_sites: dict[int, str] = {}  # id(autograd node) -> its op's call site
        self._view_root: dict[int, int] = {}  # a view's value id -> the value it views
        self._stale: set[int] = set()  # views of a tensor written in place after they were made
        self._pending_draws = 0
        self._drawn = False  # a captured random draw ran (a later read cannot be guarded)
        self._in_backward = False  # capture_backward is running (a read is not guarded)
        self._guards = 0  # guard nodes so far
        self._reader = ""  # the library code reading values now (``reading_for``)

    # ------------------------------------------------------------------ registering
    def add_placeholder(self, tensor: Tensor, kind: str, name: str) -> int:
        """Make ``tensor`` a placeholder of ``kind``; returns its value id."""
        value_id = self._new_id()
        self._placeholder_by_tensor[id(tensor)] = len(self.graph.placeholders)
        self._placeholder_refs.append(weakref.ref(tensor))
        if tensor._requires_grad:
            self._grad_before[len(self.graph.placeholders)] = tensor.grad
        self.graph.placeholders.append(Placeholder(value_meta(tensor, value_id), kind, name))
        self._bind(tensor, value_id)
        return value_id

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _bind(self, tensor: Tensor, value_id: int) -> None:
        self._by_tensor[id(tensor)] = (weakref.ref(tensor), value_id)
        self._by_array[id(tensor._data)] = (tensor._data, value_id)

    def known_value(self, tensor: Tensor) -> int | None:
        """The value id ``tensor`` holds now, or None for a tensor not met yet."""
        entry = self._by_tensor.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1]
        entry = self._by_array.get(id(tensor._data))
        if entry is not None and entry[0] is tensor._data:  # a detached or rewrapped tensor
            return entry[1]
        return None

    def computed_value(self, tensor: Tensor, what: str) -> int:
        """The value id of a tensor the call computed (a gradient); raises if none did."""
        value_id = self.known_value(tensor)
        if value_id is None:
            raise TracingError(f"tk.jit could not follow how {what} was computed")
        return value_id

    def value_of(self, tensor: Tensor) -> int:
        """The value id ``tensor`` holds now (a new placeholder for a tensor not met yet)."""
        value_id = self.known_value(tensor)
        if value_id is not None:
            return value_id
        index = len(self.graph.placeholders)
        value_id = self.add_placeholder(tensor, EXTERNAL, f"tensor read at {_site()}")
        self._found.append((weakref.ref(tensor), index))
        self._snapshots[index] = tensor._data  # replaced by a copy before any write
        return value_id

    def placeholder_tensor(self, index: int) -> Tensor | None:
        """The live tensor of a registered or found placeholder (None once it is gone)."""
        return self._placeholder_refs[index]()

    # ------------------------------------------------------------------ observer protocol
    def __enter__(self) -> Tracer:
        if _state.tracer is not None:
            raise TracingError("tk.jit cannot capture a call while another capture is running")
        _state.tracer = self
        _state.add_observer(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.remove_observer(self)
        _state.tracer = None

    def op_started(self, event: Any) -> None:
        op = event.op
        if not _registered(op):
            return  # a custom Function: op_finished records it as opaque
        arrays, _, _ = unwrap(op, event.inputs)
        event.records["jit_cast"] = _cast_of(event.inputs, arrays)

    def op_finished(self, event: Any) -> None:
        op = event.op
        if op is None:
            return  # a backward node's summary event: its ops were seen one by one
        outputs = tuple(t for t in event.outputs if isinstance(t, Tensor))
        given = event.inputs if event.arguments is None else event.arguments
        args = tuple(self._arg(x) for x in given)
        if getattr(op, "view", False) and args and type(args[0]) is Ref:
            root = self._view_root.get(args[0].id, args[0].id)
        else:
            root = None
        out_values = []
        for tensor in outputs:
            value_id = self._new_id()
            out_values.append(value_meta(tensor, value_id))
            self._bind(tensor, value_id)
            if root is not None:
                self._view_root[value_id] = root
        known = _registered(op)
        if event.phase == "backward":  # a gradient rule's op: where its forward op was called
            site = self._forward_sites.get(id(event.backward_node), "")
        else:
            site = _site()
            if event.node is not None:
                self._forward_sites[id(event.node)] = site
        node = Node(
            op=op.key if known else op.name,
            args=args,
            attrs={key: self._attr(value) for key, value in event.attrs.items()},
            outputs=tuple(out_values),
            site=site,
            module=event.module_path,
            phase=event.phase,
            cast=event.records.pop("jit_cast", None) if known else None,
            kind="op" if known else "function",
            multi_output=getattr(op, "outputs", len(outputs)) != 1,
        )
        self.graph.nodes.append(node)
        if not known:  # a custom Function: replayed by calling it, unless it must differentiate
            node.attrs = {"function": op}
            if event.node is not None:
                self.graph.breaks.append(
                    GraphBreak(
                        "function",
                        f"custom autograd.Function {op.name} needs its backward, which tk.jit "
                        "does not capture (its saved tensors live in its ctx)",
                        node.site,
                    )
                )

    def _arg(self, x: Any) -> Any:
        if isinstance(x, Tensor):
            value_id = self.value_of(x)
            if value_id in self._stale:
                self._stale.discard(value_id)  # one break per stale view is enough
                self.graph.breaks.append(
                    GraphBreak(
                        "inplace_view",
                        "a view is read after the tensor it views was written in place "
                        f"(shape {list(x.shape)}); tk.jit does not follow aliasing",
                        _site(),
                    )
                )
            return Ref(value_id)
        if isinstance(x, np.generic):
            return x.item()
        return x

    def _attr(self, value: Any) -> Any:
        """An attribute as the IR keeps it: an array that is a tensor's data (gather's index,
        where's condition) becomes a :class:`Ref` to that tensor's value."""
        if isinstance(value, tuple | list):
            return type(value)(self._attr(item) for item in value)
        if hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__"):
            entry = self._by_array.get(id(value))
            if entry is not None and entry[0] is value:
                return Ref(entry[1])
        return value

    # ------------------------------------------------------------------ other events
    def unsupported(self, reason: str) -> None:
        """Something the call does cannot be captured (a tk.library op that writes its
        arguments in place): an "unsupported" graph break."""
        self.graph.breaks.append(GraphBreak("unsupported", reason, _site()))

    def value_read(self, tensor: Tensor, how: str, value: Any = _NOT_GIVEN) -> None:
        """``tensor``'s value is read into Python by ``how`` (for example "item()"), giving
        ``value`` (not given: a read no guard can repeat, such as ``numpy()``)."""
        site = _site()
        reason = self._reader or f"Tensor.{how} reads a tensor's value into Python"
        why = unguarded(how, tensor, value is not _NOT_GIVEN) or self._unguardable()
        if why:
            self.graph.breaks.append(GraphBreak("value_read", f"{reason}; {why}", site))
        else:
            self.graph.nodes.append(
                Node(
                    op=how,
                    args=(self._arg(tensor),),
                    attrs={"value": value, "number": self._guards},
                    outputs=(),
                    site=site,
                    module=".".join(_state.module_path),
                    phase=_state.phase,
                    kind="guard",
                )
            )
            self._guards += 1
            self.graph.breaks.append(GraphBreak("value_read", reason, site, True, value))
        if self.warn:
            then = (
                f"the trace treats it as a constant and will not follow a different value ({why})"
                if why
                else "the trace follows the branch this value took, and a replay reading "
                "another value raises tk.jit.GuardError"
            )
            warnings.warn(
                f"{reason} at {site or 'an unknown call site'}: {then} (a TracerWarning, as "
                "torch.jit.trace gives)",
                TracerWarning,
                stacklevel=3,
            )

    @contextlib.contextmanager
    def reading_for(self, reader: str) -> Iterator[None]:
        """Inside, value reads are library code's: their graph breaks give ``reader`` as the
        reason ("scaled_dot_product_attention reads ..."), not a Tensor method the user's
        code never called."""
        previous, self._reader = self._reader, reader
        try:
            yield
        finally:
            self._reader = previous

    def guards_reads(self) -> bool:
        """Whether a value read here becomes a guard node without a warning (tk.compile's
        capture, in the forward, before any random draw): library code may then read a
        tensor to choose its path, as it does eagerly."""
        return not self.warn and not self._unguardable()

    def _unguardable(self) -> str:
        """Why no read could be guarded at this point of the call ("" when one can)."""
        if self._in_backward:
            return (
                "it runs in the backward tk.jit captures ahead of time (a hook), which runs "
                "after the call returned: too late to take another path"
            )
        if self._drawn:
            return (
                "it follows a random draw, which a replay taking another path here would "
                "already have made"
            )
        return ""

    def before_inplace(self, tensor: Tensor, result: Tensor, op_name: str) -> None:
        """``result`` is about to be written into ``tensor``'s storage by ``op_name``."""
        if tensor._base is not None:
            self.graph.breaks.append(
                GraphBreak(
                    "inplace_view",
                    f"{op_name} writes in place into a view of another tensor "
                    f"(shape {list(tensor.shape)}); tk.jit does not capture writes to views",
                    _site(),
                )
            )
            return
        target = self.value_of(tensor)
        root = self._view_root.get(target, target)
        self._stale.update(v for v, r in self._view_root.items() if r == root)
        index = self.graph.placeholder_index(target)
        if index is not None and index in self._snapshots:  # keep what it held before
            self._snapshots[index] = tensor._data.copy()
        written = self.value_of(result)
        mutated = self._root_placeholder(tensor)
        self._bind(tensor, written)
        if mutated is not None and self.graph.placeholders[mutated].kind != CONSTANT:
            self.graph.mutations = [m for m in self.graph.mutations if m.placeholder != mutated]
            self.graph.mutations.append(Mutation(mutated, written))

    def _root_placeholder(self, tensor: Tensor) -> int | None:
        """The placeholder whose tensor object this is (its storage outlives the call)."""
        index = self._placeholder_by_tensor.get(id(tensor))
        if index is not None and self._placeholder_refs[index]() is tensor:
            return index
        return None

    def random_requested(self) -> None:
        """A sampler asked for a generator: a draw is coming (see ``random_made``)."""
        self._pending_draws += 1

    def random_made(self, out: Tensor, kind: str, args: tuple, attrs: dict) -> None:
        """A supported sampler drew ``out``: a "random" node (drawn again on each replay)."""
        self._pending_draws -= 1
        self._drawn = True
        value_id = self._new_id()
        self.graph.nodes.append(
            Node(
                op=kind,
                args=tuple(self._arg(a) for a in args),
                attrs=attrs,
                outputs=(value_meta(out, value_id),),
                site=_site(),
                module=".".join(_state.module_path),
                phase=_state.phase,
                kind="random",
            )
        )
        self._bind(out, value_id)

    # ------------------------------------------------------------------ training graphs
    def record_leaf_grads(self) -> None:
        """Note each placeholder whose ``.grad`` the call replaced (a step that ran its own
        backward, or zeroed the gradients)."""
        for index, ref in enumerate(self._placeholder_refs):
            tensor = ref()
            if tensor is None or index not in self._grad_before:
                continue
            grad = tensor.grad
            if grad is not self._grad_before[index]:
                self.graph.leaf_grads[index] = (
                    None if grad is None else self.computed_value(grad, f"the .grad of {index}")
                )

    def capture_backward(self, outputs: list[Tensor], autograd_grad: Any) -> None:
        """Record the gradient rules from ``outputs`` to every placeholder that requires
        grad, as ``graph.backward`` (see ``capture``)."""
        graph = self.graph
        targets = [
            (index, tensor)
            for index, ref in enumerate(self._placeholder_refs)
            if (tensor := ref()) is not None and tensor._requires_grad
        ]
        if not targets:
            return
        seeds = []
        for number, out in enumerate(outputs):
            seed = wrap(out._device.xp.ones(out._data.shape, out._data.dtype), out._device)
            self.add_placeholder(seed, GRAD_OUTPUT, f"gradient of output {number}")
            seeds.append(seed)
        graph.grad_outputs = [Ref(self.value_of(out)) for out in outputs]
        start = len(graph.nodes)
        self._in_backward = True
        try:
            grads = autograd_grad(
                outputs, [t for _, t in targets], seeds, retain_graph=True, allow_unused=True
            )
        finally:
            self._in_backward = False
        graph.backward = graph.nodes[start:]
        del graph.nodes[start:]
        for (index, _), g in zip(targets, grads, strict=True):
            if g is not None:
                name = graph.placeholders[index].name
                graph.grads[index] = self.computed_value(g, f"the gradient of {name}")

    # ------------------------------------------------------------------ finishing
    def finish(self) -> Graph:
        """Settle the placeholders found during the call (external or constant) and the
        random draws no op recorded; returns the graph."""
        graph = self.graph
        for ref, index in self._found:
            placeholder = graph.placeholders[index]
            if ref() is None:
                placeholder.kind = CONSTANT
                placeholder.name = placeholder.name.replace("tensor read", "constant made")
                graph.constants[placeholder.value.id] = self._snapshots[index]
        constant = {i for i, p in enumerate(graph.placeholders) if p.kind == CONSTANT}
        graph.mutations = [m for m in graph.mutations if m.placeholder not in constant]
        if self._pending_draws > 0:
            graph.breaks.append(
                GraphBreak(
                    "random",
                    f"{self._pending_draws} random draw(s) by a sampler tk.jit does not "
                    "capture (it captures rand, randn, their _like forms and bernoulli)",
                    "",
                )
            )
        return graph

    def placeholder_tensors(self) -> list[Tensor | None]:
        """Per placeholder, the live tensor a replay reads (None for constants)."""
        return [
            None if p.kind == CONSTANT else self.placeholder_tensor(i)
            for i, p in enumerate(self.graph.placeholders)
        ]


def _registered(op: Any) -> bool:
    """Whether ``op`` is an OpDef of the table (not a custom Function's op)."""
    return isinstance(op, OpDef) and OPS.get(op.key) is op


def _cast_of(inputs: tuple, arrays: list) -> str | None:
    """The dtype ``unwrap`` promoted the tensor inputs to, if it changed any."""
    for x, array in zip(inputs, arrays, strict=True):
        if isinstance(x, Tensor) and array.dtype != x._data.dtype:
            return array.dtype.name
    return None


# ---------------------------------------------------------------------- structures
def flatten(obj: Any) -> tuple[list, Any]:
    """The leaves of nested tuples, lists and dicts (str keys) and a spec to rebuild them
    (hashable: nested tuples of strings)."""
    if isinstance(obj, tuple | list):
        leaves: list = []
        specs = []
        for item in obj:
            sub_leaves, sub_spec = flatten(item)
            leaves += sub_leaves
            specs.append(sub_spec)
        return leaves, ("tuple" if isinstance(obj, tuple) else "list", tuple(specs))
    if isinstance(obj, dict):
        leaves = []
        specs = []
        for key, item in obj.items():
            if not isinstance(key, str):
                raise TracingError(
                    f"tk.jit captures dicts with str keys only, got a {type(key).__name__} key"
                )
            sub_leaves, sub_spec = flatten(item)
            leaves += sub_leaves
            specs.append((key, sub_spec))
        return leaves, ("dict", tuple(specs))
    return [obj], "leaf"


def unflatten(leaves: list, spec: Any) -> Any:
    """Rebuild what ``flatten`` took apart."""
    iterator = iter(leaves)

    def build(s: Any) -> Any:
        if s == "leaf":
            return next(iterator)
        kind, items = s
        if kind == "dict":
            return {key: build(sub) for key, sub in items}
        built = [build(sub) for sub in items]
        return tuple(built) if kind == "tuple" else built

    return build(spec)


# ---------------------------------------------------------------------- one call
@dataclass
class Capture:
    """What ``capture`` returns: the graph, the live tensor of every placeholder (None for
    constants), the call's own (eager) result, and the input spec of its arguments."""

    graph: Graph
    tensors: list[Tensor | None]
    result: Any
    input_spec: Any


def capture(
    fn: Any, args: tuple, kwargs: dict, module: Any = None, *, warn: bool = False
) -> Capture:
    """Run ``fn(*args, **kwargs)`` once, eagerly, recording it.

    The call's tensor arguments become INPUT placeholders (in ``flatten`` order), the
    ``module``'s parameters and buffers PARAMETER and BUFFER ones. When grad mode is on and
    an output requires grad, the backward of the outputs is captured too, ahead of time:
    ``autograd.grad`` runs under the tracer from GRAD_OUTPUT placeholders (keeping the eager
    graph, so the returned result still backpropagates), and its ops become
    ``graph.backward``. A call that runs a backward itself (a whole training step) records
    it among its nodes, and what it leaves in ``.grad`` in ``graph.leaf_grads``.
    """
    from ..autograd import grad as autograd_grad
    from ..autograd.grad_mode import is_grad_enabled

    tracer = Tracer(warn=warn)
    leaves, input_spec = flatten((list(args), kwargs))
    for position, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor):
            tracer.add_placeholder(leaf, INPUT, f"input {position}")
    if module is not None:
        for name, parameter in module.named_parameters():
            tracer.add_placeholder(parameter, PARAMETER, name)
        for name, buffer in module.named_buffers():
            tracer.add_placeholder(buffer, BUFFER, name)
    with tracer:
        result = fn(*args, **kwargs)
        out_leaves, output_spec = flatten(result)
        graph = tracer.graph
        graph.outputs = [
            Ref(tracer.value_of(t)) if isinstance(t, Tensor) else t for t in out_leaves
        ]
        graph.output_spec = output_spec
        tracer.record_leaf_grads()
        ran_backward = any(node.phase == "backward" for node in graph.nodes)
        differentiable = [t for t in out_leaves if isinstance(t, Tensor) and t.requires_grad]
        if is_grad_enabled() and differentiable and not ran_backward:
            tracer.capture_backward(differentiable, autograd_grad)
    tracer.finish()
    return Capture(graph, tracer.placeholder_tensors(), result, input_spec)
