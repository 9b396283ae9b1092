"""The graph IR: placeholders, nodes over values, outputs.

A :class:`Graph` is what ``tk.jit.trace`` records from one call. Every tensor the call sees is
a :class:`Value` (shape, dtype, device). Values enter as :class:`Placeholder`\\ s (the call's
tensor arguments, a module's parameters and buffers, tensors the call reads from elsewhere,
constants it made, and in a training graph the gradients flowing into its outputs) and are
produced by :class:`Node`\\ s. A node names its op by the ``OpDef`` key (``ops._apply.OPS``),
takes its arguments as :class:`Ref`\\ s to values or as the Python constants the call passed,
and records where it came from: the user's call site, the nn module path and the phase
("forward" or "backward"). The graph is plain data; ``passes/`` rewrite it and ``plan.py``
lowers it to arrays calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Graph", "Node", "Placeholder", "Ref", "Value"]

# What a placeholder stands for.
INPUT = "input"  # a tensor argument of the call
PARAMETER = "parameter"  # a parameter of the traced module (by qualified name)
BUFFER = "buffer"  # a buffer of the traced module (by qualified name)
EXTERNAL = "external"  # a tensor the call read that is none of the above (held by identity)
CONSTANT = "constant"  # a tensor the call made without an op (tk.zeros, tk.tensor): its value
GRAD_OUTPUT = "grad_output"  # the gradient reaching an output (a training graph's backward)
PLACEHOLDER_KINDS = (INPUT, PARAMETER, BUFFER, EXTERNAL, CONSTANT, GRAD_OUTPUT)


@dataclass(frozen=True)
class Value:
    """One tensor of the graph: an id unique in its graph, and its metadata."""

    id: int
    shape: tuple[int, ...]
    dtype: str  # a tensorkit dtype name, "float32"
    device: str  # "cpu", "cuda:0"
    requires_grad: bool = False

    def describe(self) -> str:
        return f"%{self.id}: {self.dtype}{list(self.shape)} on {self.device}"


@dataclass(frozen=True)
class Ref:
    """An argument that is a value of the graph (``%id``)."""

    id: int

    def __repr__(self) -> str:
        return f"%{self.id}"


@dataclass
class Placeholder:
    """A value the graph does not compute: see the kinds above. ``name`` is the argument's
    position ("input 0"), a parameter's qualified name, or a description."""

    value: Value
    kind: str
    name: str


@dataclass
class Node:
    """One op applied to arguments.

    ``op`` is the OpDef key; ``args`` are :class:`Ref`\\ s and Python constants (numbers,
    None) in the op's argument order; ``attrs`` its keyword attributes, where an array a
    tensor of the graph gave (gather's index, where's condition) is a :class:`Ref` too;
    ``cast`` the NumPy dtype name every tensor argument is promoted to before the op runs
    (None: no cast), as
    ``ops._apply.unwrap`` would. ``kind`` is "op" for an OpDef, "fused" for a group the fusion
    pass made (``members`` holds its nodes), "random" for a sampling call (``op`` names it),
    "guard" for a value read the graph checks (``op`` names the read, "item()"; one argument,
    no outputs; ``attrs`` hold the recorded ``value`` and the guard's ``number``, see
    ``guards.py``).
    """

    op: str
    args: tuple
    attrs: dict
    outputs: tuple[Value, ...]
    site: str = ""
    module: str = ""
    phase: str = "forward"
    cast: str | None = None
    kind: str = "op"
    members: list[Node] = field(default_factory=list)
    multi_output: bool = False  # the op returns a tuple (even of one array)
    source: str = ""  # a fused node's generated kernel source

    def refs(self) -> Iterator[int]:
        """The ids of the values this node reads: arguments in order, then attributes (an
        index or a mask a tensor gave)."""
        for arg in self.args:
            if type(arg) is Ref:
                yield arg.id
        for value in self.attrs.values():
            yield from attr_refs(value)

    def like(self, op: str, args: tuple, attrs: dict, output: Value) -> Node:
        """A node of ``op`` that a pass puts in this one's place: its call site, module and
        phase, one output."""
        return Node(
            op=op,
            args=args,
            attrs=attrs,
            outputs=(output,),
            site=self.site,
            module=self.module,
            phase=self.phase,
        )

    def describe(self) -> str:
        where = f"  # {self.site}" if self.site else ""
        if self.kind == "guard":
            return f"guard Tensor.{self.op}({self.args[0]!r}) == {self.attrs['value']!r}{where}"
        outs = ", ".join(f"%{v.id}" for v in self.outputs)
        args = ", ".join(repr(a) for a in self.args)
        attrs = "".join(f", {k}={v!r}" for k, v in self.attrs.items())
        return f"{outs} = {self.op}({args}{attrs}){where}"


def attr_refs(value: Any) -> Iterator[int]:
    """The value ids of the :class:`Ref`\\ s inside an attribute (through tuples and lists)."""
    if type(value) is Ref:
        yield value.id
    elif isinstance(value, tuple | list):
        for item in value:
            yield from attr_refs(item)


def map_refs(value: Any, replace: Callable[[Ref], Any]) -> Any:
    """An attribute with each :class:`Ref` inside replaced by ``replace(ref)``."""
    if type(value) is Ref:
        return replace(value)
    if isinstance(value, tuple | list) and any(True for _ in attr_refs(value)):
        return type(value)(map_refs(item, replace) for item in value)
    return value


@dataclass
class Mutation:
    """An in-place write the call made to a tensor from outside: after a replay, ``value``
    is written into the placeholder's tensor, as the eager call would have."""

    placeholder: int  # index into Graph.placeholders
    value: int  # the value id written


@dataclass
class Graph:
    """A recorded call: placeholders, nodes in execution order, outputs.

    ``outputs`` are :class:`Ref`\\ s (or a Python constant the call returned, kept as it is)
    in the order of ``output_spec``'s leaves; ``output_spec`` rebuilds the call's result structure
    (see ``capture.flatten``). ``grads`` (training graphs) maps each placeholder index that
    requires grad to the value id of its gradient, computed by ``backward`` (the nodes of
    the gradient rules, captured ahead of time) from the GRAD_OUTPUT placeholders.
    ``leaf_grads`` records what a call that ran its own backward left in ``.grad``:
    placeholder index -> value id (or None).
    """

    placeholders: list[Placeholder] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    backward: list[Node] = field(default_factory=list)
    grad_outputs: list[Ref] = field(default_factory=list)  # the outputs ``backward`` starts at
    outputs: list[Any] = field(default_factory=list)
    output_spec: Any = None
    grads: dict[int, int] = field(default_factory=dict)
    mutations: list[Mutation] = field(default_factory=list)
    leaf_grads: dict[int, int | None] = field(default_factory=dict)
    constants: dict[int, Any] = field(default_factory=dict)  # CONSTANT value id -> array
    breaks: list[Any] = field(default_factory=list)  # capture.GraphBreak, in call order

    # ------------------------------------------------------------------ queries
    def values(self) -> dict[int, Value]:
        """Every value by id."""
        found = {p.value.id: p.value for p in self.placeholders}
        for node in [*self.nodes, *self.backward]:
            for value in node.outputs:
                found[value.id] = value
        return found

    def placeholder_index(self, value_id: int) -> int | None:
        for index, placeholder in enumerate(self.placeholders):
            if placeholder.value.id == value_id:
                return index
        return None

    def output_ids(self) -> list[int]:
        """Every value id the graph must still produce once it has run: outputs, gradients,
        mutations and leaf gradients."""
        ids = [v.id for v in self.outputs if type(v) is Ref]
        ids += list(self.grads.values())
        ids += [m.value for m in self.mutations]
        ids += [v for v in self.leaf_grads.values() if v is not None]
        return ids

    def rename(self, renamed: dict[int, int]) -> None:
        """Read value ``renamed[id]`` wherever value ``id`` was read (a pass that found two
        values equal): node arguments and attributes, outputs, gradients and writes."""
        if not renamed:
            return

        def new(value_id: int) -> int:
            return renamed.get(value_id, value_id)

        for node in [*self.nodes, *self.backward]:
            node.args = tuple(Ref(new(a.id)) if type(a) is Ref else a for a in node.args)
            node.attrs = {
                k: map_refs(v, lambda ref: Ref(new(ref.id))) for k, v in node.attrs.items()
            }
        self.outputs = [Ref(new(v.id)) if type(v) is Ref else v for v in self.outputs]
        self.grad_outputs = [Ref(new(v.id)) for v in self.grad_outputs]
        self.grads = {i: new(v) for i, v in self.grads.items()}
        self.leaf_grads = {i: None if v is None else new(v) for i, v in self.leaf_grads.items()}
        for mutation in self.mutations:
            mutation.value = new(mutation.value)

    def uses(self) -> dict[int, int]:
        """How many times each value is read (by nodes, or as something the graph gives)."""
        counts: dict[int, int] = {}
        for node in [*self.nodes, *self.backward]:
            for value_id in node.refs():
                counts[value_id] = counts.get(value_id, 0) + 1
        for value_id in self.output_ids():
            counts[value_id] = counts.get(value_id, 0) + 1
        return counts

    def __str__(self) -> str:
        lines = [f"graph({len(self.placeholders)} placeholders, {len(self.nodes)} nodes)"]
        for p in self.placeholders:
            lines.append(f"  {p.value.describe()}  <- {p.kind} {p.name}")
        for node in self.nodes:
            lines.append("  " + node.describe())
        lines.append(f"  return {self.outputs}")
        if self.backward:
            lines.append("backward:")
            lines += ["  " + node.describe() for node in self.backward]
            lines.append(f"  gradients {self.grads}")
        return "\n".join(lines)
