"""The document of a saved graph, read back and checked field by field into a Graph.

The file is untrusted: every field must have its type, every value id must be defined
before it is read (placeholders, then each node's outputs, in order), every op key must be a
registered op and every kind one tensorkit knows; anything else raises :class:`LoadError`
naming the file and the field. Nothing read here becomes code: ``plan.py`` generates its
source from value ids (checked to be ints) and binds ops and attributes as objects.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..._backend import device
from ..._dtype import ALL_DTYPES
from ...ops._apply import OPS
from ...serialization import CheckpointError
from ...tensor import Tensor
from ..elementwise import fusible, reduced_axes
from ..guards import READS
from ..ir import (
    CONSTANT,
    GRAD_OUTPUT,
    INPUT,
    PLACEHOLDER_KINDS,
    Graph,
    Mutation,
    Node,
    Placeholder,
    Ref,
    Value,
    attr_refs,
)
from ._encode import TABLES, tensor_key
from ._values import MAX_DEPTH, NESTED_REFS, NO_REFS, TOP_REFS, decode

__all__ = ["LoadError", "read_graph", "register_ops"]

_NODE_KEYS = (
    "op",
    "kind",
    "args",
    "attrs",
    "cast",
    "outputs",
    "site",
    "module",
    "phase",
    "multi_output",
    "members",
)
_VALUE_KEYS = ("id", "shape", "dtype", "device", "requires_grad")
_PLACEHOLDER_KEYS = ("kind", "name", "value")
_DOCUMENT_KEYS = (
    "format",
    "version",
    "opset",
    "tensorkit",
    "name",
    "input_spec",
    "placeholders",
    "nodes",
    "backward",
    "outputs",
    "output_spec",
    "grad_outputs",
    "grads",
    "mutations",
    "leaf_grads",
)
_NODE_KINDS = ("op", "random", "fused", "guard")
_GUARD_VALUES = (bool, int, float, complex, list)  # what a guarded read gives
_RANDOM_OPS = ("rand", "randn", "bernoulli")  # what tensorkit.random.redraw draws again
_PHASES = ("forward", "backward")
_DTYPE_NAMES = {d.np.name for d in ALL_DTYPES}
_DEVICE_TEXT = re.compile(r"cpu|cuda:\d{1,4}")
_INPUT_NAME = re.compile(r"input (\d{1,9})")
_MAX_NDIM = 64


class LoadError(CheckpointError):
    """A file ``tk.jit.load`` refuses: corrupt, truncated, not a saved graph, written by a
    newer tensorkit, or naming an op this process does not have."""


def register_ops() -> None:
    """Import the modules whose ops ``import tensorkit`` leaves unregistered."""
    import tensorkit.array_api
    import tensorkit.fft
    import tensorkit.linalg
    import tensorkit.nn.functional
    import tensorkit.special  # noqa: F401


class _Reader:
    """Checks the document's fields; ``fail`` makes the error of one field."""

    def __init__(self, source: str, tables: dict[str, dict[str, Tensor]]) -> None:
        self.source = source
        self.tables = tables
        self.used: dict[str, set[str]] = {table: set() for table in TABLES}

    def fail(self, where: str, problem: str) -> LoadError:
        return LoadError(f"{self.source}: {where}: {problem}")

    def fields(self, obj: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
        if type(obj) is not dict:
            raise self.fail(where, f"expected an object, got {_json_type(obj)}")
        if set(obj) != set(keys):
            missing, extra = sorted(set(keys) - set(obj)), sorted(set(obj) - set(keys))
            raise self.fail(where, f"missing fields {missing}, unexpected fields {extra}")
        return obj

    def typed(self, value: Any, kind: type, where: str) -> Any:
        if type(value) is not kind:
            raise self.fail(where, f"expected {_JSON_NAMES[kind]}, got {_json_type(value)}")
        return value

    def items(self, value: Any, where: str) -> list:
        return self.typed(value, list, where)

    def index(self, value: Any, where: str, count: int | None = None) -> int:
        number = self.typed(value, int, where)
        if number < 0 or (count is not None and number >= count):
            bound = "" if count is None else f" below {count}"
            raise self.fail(where, f"expected an integer from 0{bound}, got {number}")
        return number

    def value(self, obj: Any, where: str) -> Value:
        fields = self.fields(obj, _VALUE_KEYS, where)
        shape = self.items(fields["shape"], f"{where}.shape")
        if len(shape) > _MAX_NDIM:
            raise self.fail(f"{where}.shape", f"more than {_MAX_NDIM} dimensions")
        dims = tuple(self.index(n, f"{where}.shape[{i}]") for i, n in enumerate(shape))
        dtype = self.typed(fields["dtype"], str, f"{where}.dtype")
        if dtype not in _DTYPE_NAMES:
            raise self.fail(f"{where}.dtype", f"unknown dtype {dtype!r}")
        where_device = f"{where}.device"
        text = self.typed(fields["device"], str, where_device)
        if not _DEVICE_TEXT.fullmatch(text):
            raise self.fail(where_device, f"bad device {text[:40]!r}")
        requires_grad = self.typed(fields["requires_grad"], bool, f"{where}.requires_grad")
        return Value(self.index(fields["id"], f"{where}.id"), dims, dtype, text, requires_grad)

    def decoded(self, node: Any, where: str, refs: str = NO_REFS) -> Any:
        used = self.used["array"]
        return decode(node, self.tables["array"], used, lambda p: self.fail(where, p), refs)

    def tensor(self, table: str, key: str, value: Value, where: str) -> Tensor:
        tensor = self.tables[table].get(key)
        if tensor is None:
            raise self.fail(where, f"its tensor '{table}.{key}' is not in the file")
        if key in self.used[table]:
            raise self.fail(where, f"its tensor '{table}.{key}' belongs to another placeholder")
        self.used[table].add(key)
        data = tensor._data
        if (tuple(data.shape), data.dtype.name, str(tensor.device)) != (
            value.shape,
            value.dtype,
            value.device,
        ):
            raise self.fail(
                where,
                f"its tensor '{table}.{key}' is {data.dtype.name}{list(data.shape)} on "
                f"{tensor.device}, the graph says {value.dtype}{list(value.shape)} on "
                f"{value.device}",
            )
        return tensor


class _Scope:
    """The value ids defined so far (each exactly once in the graph); ``hidden`` ones are
    taken but cannot be read here (the outputs' gradients, in the forward)."""

    def __init__(
        self, reader: _Reader, visible: set[int], hidden: set[int] | frozenset[int] = frozenset()
    ) -> None:
        self.reader = reader
        self.visible = set(visible)
        self.hidden = set(hidden)
        self.dtypes: dict[int, str] = {}  # value id -> dtype, of the values defined here

    def define(self, value: Value, where: str) -> None:
        if value.id in self.visible or value.id in self.hidden:
            raise self.reader.fail(where, f"value %{value.id} is defined twice")
        self.visible.add(value.id)
        self.dtypes[value.id] = value.dtype

    def check(self, value_id: Any, where: str) -> int:
        self.reader.index(value_id, where)
        if value_id not in self.visible:
            raise self.reader.fail(where, f"refers to value %{value_id}, which is not defined")
        return value_id

    def check_ref(self, value: Any, where: str) -> None:
        if type(value) is Ref:
            self.check(value.id, where)


def read_graph(
    doc: dict[str, Any], tables: dict[str, dict[str, Tensor]], source: str
) -> tuple[Graph, list, Any, str]:
    """The graph, the placeholders' tensors (None where a call supplies them), the input
    spec and the traced function's name, from a document whose format, version and opset
    were checked."""
    reader = _Reader(source, tables)
    reader.fields(doc, _DOCUMENT_KEYS, "the graph")
    name = reader.typed(doc["name"], str, "name")
    input_spec, leaves = _spec(reader, doc["input_spec"], "input_spec")
    graph = Graph()
    tensors = _placeholders(reader, doc["placeholders"], graph, leaves)
    seeds = {p.value.id for p in graph.placeholders if p.kind == GRAD_OUTPUT}
    fed = {p.value.id for p in graph.placeholders} - seeds
    forward = _Scope(reader, fed, seeds)  # the forward reads no output's gradient
    forward.dtypes = {p.value.id: p.value.dtype for p in graph.placeholders}
    graph.nodes = _nodes(reader, doc["nodes"], "nodes", forward)
    backward = _Scope(reader, forward.visible | seeds, forward.hidden - seeds)
    backward.dtypes = dict(forward.dtypes)
    graph.backward = _nodes(reader, doc["backward"], "backward", backward)
    for i, node in enumerate(graph.backward):
        if node.kind == "guard":
            raise reader.fail(f"backward[{i}]", "a guard runs in the forward only")
    graph.outputs = [
        reader.decoded(item, f"outputs[{i}]", TOP_REFS)
        for i, item in enumerate(reader.items(doc["outputs"], "outputs"))
    ]
    for i, item in enumerate(graph.outputs):
        forward.check_ref(item, f"outputs[{i}]")
    graph.output_spec, leaves = _spec(reader, doc["output_spec"], "output_spec")
    if leaves != len(graph.outputs):
        raise reader.fail("output_spec", f"does not have {len(graph.outputs)} leaves")
    graph.grad_outputs = [
        Ref(forward.check(v, f"grad_outputs[{i}]"))
        for i, v in enumerate(reader.items(doc["grad_outputs"], "grad_outputs"))
    ]
    if len(seeds) != len(graph.grad_outputs):
        raise reader.fail("grad_outputs", "do not match the gradient placeholders")
    graph.grads = dict(_pairs(reader, doc["grads"], "grads", graph, backward.check))
    graph.mutations = [
        Mutation(index, value_id)
        for index, value_id in _pairs(reader, doc["mutations"], "mutations", graph, forward.check)
    ]
    graph.leaf_grads = dict(
        _pairs(reader, doc["leaf_grads"], "leaf_grads", graph, forward.check, none=True)
    )
    _check_all_used(reader)
    _check_devices(reader, graph)
    return graph, tensors, input_spec, name


def _placeholders(reader: _Reader, items: Any, graph: Graph, leaves: int) -> list:
    """Read the placeholders into ``graph`` (constants' arrays into ``graph.constants``);
    returns the tensor of each (None for inputs, constants and gradients); ``leaves``: the
    number of the call's arguments."""
    scope = _Scope(reader, set())
    positions: set[int] = set()
    tensors: list[Tensor | None] = []
    for i, obj in enumerate(reader.items(items, "placeholders")):
        where = f"placeholders[{i}]"
        fields = reader.fields(obj, _PLACEHOLDER_KEYS, where)
        kind = reader.typed(fields["kind"], str, f"{where}.kind")
        label = reader.typed(fields["name"], str, f"{where}.name")
        value = reader.value(fields["value"], f"{where}.value")
        if kind not in PLACEHOLDER_KINDS:
            raise reader.fail(f"{where}.kind", f"unknown placeholder kind {kind!r}")
        scope.define(value, f"{where}.value.id")
        graph.placeholders.append(Placeholder(value, kind, label))
        tensor = None
        if kind == INPUT:
            positions.add(_input_position(reader, label, leaves, positions, where))
        elif kind == CONSTANT:
            key = tensor_key(kind, label, value.id)
            graph.constants[value.id] = reader.tensor("constant", key, value, where)._data
        elif kind != GRAD_OUTPUT:
            tensor = reader.tensor(kind, tensor_key(kind, label, value.id), value, where)
        tensors.append(tensor)
    return tensors


def _nodes(reader: _Reader, items: Any, where: str, scope: _Scope) -> list[Node]:
    return [
        _node(reader, obj, f"{where}[{i}]", scope)
        for i, obj in enumerate(reader.items(items, where))
    ]


def _node(reader: _Reader, obj: Any, where: str, scope: _Scope, member: bool = False) -> Node:
    fields = reader.fields(obj, _NODE_KEYS, where)
    op = reader.typed(fields["op"], str, f"{where}.op")
    kind = reader.typed(fields["kind"], str, f"{where}.kind")
    if kind not in _NODE_KINDS or (member and kind != "op"):
        allowed = ("op",) if member else _NODE_KINDS
        raise reader.fail(f"{where}.kind", f"unknown node kind {kind!r} (expected {allowed})")
    if kind == "op" and op not in OPS:
        raise _unknown_op(reader, op, where)
    if kind == "random" and op not in _RANDOM_OPS:
        raise reader.fail(f"{where}.op", f"unknown random draw {op!r} (expected {_RANDOM_OPS})")
    args = tuple(
        reader.decoded(arg, f"{where}.args[{i}]", TOP_REFS)
        for i, arg in enumerate(reader.items(fields["args"], f"{where}.args"))
    )
    for i, arg in enumerate(args):
        scope.check_ref(arg, f"{where}.args[{i}]")
    attrs = reader.typed(fields["attrs"], dict, f"{where}.attrs")
    attrs = {
        key: reader.decoded(v, f"{where}.attrs[{key!r}]", NESTED_REFS) for key, v in attrs.items()
    }
    for key, value in attrs.items():
        for value_id in attr_refs(value):
            scope.check(value_id, f"{where}.attrs[{key!r}]")
    cast = fields["cast"]
    if cast is not None and (type(cast) is not str or cast not in _DTYPE_NAMES):
        raise reader.fail(f"{where}.cast", f"expected null or a dtype name, got {cast!r:.40}")
    outputs = tuple(
        reader.value(v, f"{where}.outputs[{i}]")
        for i, v in enumerate(reader.items(fields["outputs"], f"{where}.outputs"))
    )
    multi_output = reader.typed(fields["multi_output"], bool, f"{where}.multi_output")
    if kind == "guard":
        _check_guard(reader, op, args, attrs, outputs, where)
    elif not multi_output and len(outputs) != 1:
        raise reader.fail(f"{where}.outputs", f"a single-output node has {len(outputs)}")
    phase = reader.typed(fields["phase"], str, f"{where}.phase")
    if phase not in _PHASES:
        raise reader.fail(f"{where}.phase", f"unknown phase {phase!r} (expected {_PHASES})")
    members = _members(reader, fields["members"], kind, where, scope, outputs, args)
    for i, value in enumerate(outputs):
        scope.define(value, f"{where}.outputs[{i}].id")
    return Node(
        op=op,
        args=args,
        attrs=attrs,
        outputs=outputs,
        site=reader.typed(fields["site"], str, f"{where}.site"),
        module=reader.typed(fields["module"], str, f"{where}.module"),
        phase=phase,
        cast=cast,
        kind=kind,
        members=members,
        multi_output=multi_output,
    )


def _members(
    reader: _Reader, items: Any, kind: str, where: str, scope: _Scope, outputs: tuple, args: tuple
) -> list[Node]:
    """A fused node's members, read in their own scope; its outputs are theirs."""
    items = reader.items(items, f"{where}.members")
    if (kind == "fused") != bool(items):
        raise reader.fail(f"{where}.members", "a fused node, and only one, has members")
    inner = _Scope(reader, scope.visible, scope.hidden)
    inner.dtypes = dict(scope.dtypes)
    members = [
        _node(reader, obj, f"{where}.members[{i}]", inner, member=True)
        for i, obj in enumerate(items)
    ]
    if members:
        _check_kernel(reader, args, members, where, inner.dtypes)
    made = {v.id for m in members for v in m.outputs}
    for i, value in enumerate(outputs if members else ()):
        if value.id not in made:
            raise reader.fail(f"{where}.outputs[{i}]", f"no member computes %{value.id}")
    scope.hidden |= made - {v.id for v in outputs}  # a member's value is the kernel's own
    return members


def _check_kernel(
    reader: _Reader, args: tuple, members: list[Node], where: str, dtypes: dict[int, str]
) -> None:
    """A fused node's members must make a kernel: each an op with a scalar form over one shape
    (the last may be a sum or mean of the one before), reading only the node's arguments and
    earlier members."""
    for i, arg in enumerate(args):
        if type(arg) is not Ref:
            raise reader.fail(f"{where}.args[{i}]", "a fused node's arguments are values")
    readable = {a.id for a in args}
    shape = members[0].outputs[0].shape if members[0].outputs else None
    known = defaultdict(str, dtypes)  # an unknown value's dtype fits no kernel
    for i, member in enumerate(members):
        at = f"{where}.members[{i}]"
        for value_id in member.refs():
            if value_id not in readable:
                raise reader.fail(at, f"reads %{value_id}, which is no argument of the kernel")
        previous = members[i - 1].outputs[0] if i and members[i - 1].outputs else None
        ends = (
            i == len(members) - 1
            and previous is not None
            and reduced_axes(member, len(previous.shape)) is not None
            and member.args[0] == Ref(previous.id)
            and member.outputs[0].dtype == previous.dtype
        )
        if not ends and not (fusible(member, known) and member.outputs[0].shape == shape):
            raise reader.fail(f"{at}.op", f"{member.op!r} here cannot be a fused kernel's step")
        readable.add(member.outputs[0].id)


def _check_guard(
    reader: _Reader, op: str, args: tuple, attrs: dict, outputs: tuple, where: str
) -> None:
    """A guard node: a read ``guards.READS`` knows, of one value, in the forward, with no
    outputs and its recorded value and number."""
    if op not in READS:
        raise reader.fail(
            f"{where}.op", f"unknown guarded read {op!r:.40} (expected {list(READS)})"
        )
    if len(args) != 1 or type(args[0]) is not Ref or outputs:
        raise reader.fail(where, "a guard reads one value and has no outputs")
    if set(attrs) != {"value", "number"} or type(attrs["number"]) is not int:
        raise reader.fail(f"{where}.attrs", "a guard holds its 'value' and its integer 'number'")
    if type(attrs["value"]) not in _GUARD_VALUES:
        kind = type(attrs["value"]).__name__
        raise reader.fail(f"{where}.attrs['value']", f"a guard's value cannot be a {kind}")


def _unknown_op(reader: _Reader, op: str, where: str) -> LoadError:
    if "::" in op:
        return reader.fail(
            f"{where}.op",
            f"custom op {op!r} is not registered in this process; define it (tk.library) "
            "before loading this file",
        )
    return reader.fail(
        f"{where}.op",
        f"unknown op key {op!r:.80}: this tensorkit has no such op (the file is corrupt or "
        "from another tensorkit)",
    )


def _pairs(
    reader: _Reader,
    items: Any,
    where: str,
    graph: Graph,
    check: Callable[[Any, str], int],
    none: bool = False,
) -> list[tuple[int, int | None]]:
    """``[[placeholder index, value id], ...]`` (the value may be null with ``none``): what
    a run computes for a placeholder a call supplies (not a constant or a gradient)."""
    pairs: list[tuple[int, int | None]] = []
    placeholders = graph.placeholders
    for i, pair in enumerate(reader.items(items, where)):
        at = f"{where}[{i}]"
        if type(pair) is not list or len(pair) != 2:
            raise reader.fail(at, f"expected [placeholder index, value id], got {pair!r:.60}")
        index = reader.index(pair[0], f"{at}[0]", len(placeholders))
        if any(index == seen for seen, _ in pairs):
            raise reader.fail(f"{at}[0]", f"placeholder {index} is listed twice")
        if placeholders[index].kind in (CONSTANT, GRAD_OUTPUT):
            kind = placeholders[index].kind
            raise reader.fail(
                f"{at}[0]", f"placeholder {index} is a {kind}, not a tensor of a call"
            )
        value_id = None if none and pair[1] is None else check(pair[1], f"{at}[1]")
        pairs.append((index, value_id))
    return pairs


def _spec(reader: _Reader, spec: Any, where: str, depth: int = 0) -> tuple[Any, int]:
    """A structure spec (``capture.flatten``: "leaf", ("tuple" | "list", (spec, ...)) or
    ("dict", ((str, spec), ...))) from its JSON, with its number of leaves."""
    if spec == "leaf":
        return spec, 1
    if depth < MAX_DEPTH and type(spec) is list and len(spec) == 2 and type(spec[1]) is list:
        kind, items = spec
        if kind in ("tuple", "list"):
            parts = [_spec(reader, item, where, depth + 1) for item in items]
            return (kind, tuple(p for p, _ in parts)), sum(n for _, n in parts)
        if kind == "dict" and all(
            type(item) is list and len(item) == 2 and type(item[0]) is str for item in items
        ):
            parts = [_spec(reader, item[1], where, depth + 1) for item in items]
            keyed = tuple((item[0], p) for item, (p, _) in zip(items, parts, strict=True))
            return (kind, keyed), sum(n for _, n in parts)
    raise reader.fail(where, f"bad structure spec {spec!r:.60}")


def _input_position(reader: _Reader, label: str, leaves: int, taken: set[int], where: str) -> int:
    match = _INPUT_NAME.fullmatch(label)
    position = int(match.group(1)) if match else -1
    if not 0 <= position < leaves or position in taken:
        raise reader.fail(
            f"{where}.name",
            f"an input placeholder is named 'input N' for a distinct argument N below "
            f"{leaves}, got {label[:40]!r}",
        )
    return position


def _check_all_used(reader: _Reader) -> None:
    for table in TABLES:
        unused = sorted(set(reader.tables[table]) - reader.used[table])
        if unused:
            raise reader.fail(f"the {table} tensors", f"{unused[:5]} belong to no graph value")


def _check_devices(reader: _Reader, graph: Graph) -> None:
    for text in sorted({value.device for value in graph.values().values()}):
        try:
            device(text)
        except RuntimeError as error:
            problem = f"it runs on {text}, not available here: {error}"
            raise reader.fail("the graph", problem) from None


_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer"}
_JSON_NAMES[bool] = "true or false"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return _JSON_NAMES.get(type(value), type(value).__name__)
