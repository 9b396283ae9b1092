"""``export``: record the call, translate each node, write the model atomically."""

from __future__ import annotations

import os
from typing import Any

import onnx
from onnx import helper, numpy_helper

from ..jit.ir import CONSTANT, EXTERNAL, INPUT, Graph, Ref
from ..serialization._files import atomic_write, is_path
from . import _ops_math, _ops_nn, _ops_shape  # noqa: F401  (they fill the table)
from ._builder import Builder, Dynamic, ExportError, UnsupportedOperatorError, onnx_dtype
from ._dynamic import find_dynamic
from ._record import Recording, host, record
from ._table import TABLE

__all__ = ["export"]

MIN_OPSET = 17


def export(
    model: Any,
    args: Any,
    path: str | os.PathLike,
    opset_version: int = MIN_OPSET,
    input_names: list[str] | None = None,
    output_names: list[str] | None = None,
    dynamic_axes: dict[str, Any] | None = None,
) -> None:
    """Write ``model(*args)`` as an ONNX model to ``path`` (see :mod:`tensorkit.onnx`)."""
    if not is_path(path):
        raise TypeError(
            f"tk.onnx.export: path must be a str or os.PathLike, got {type(path).__name__}"
        )
    newest = onnx.defs.onnx_opset_version()
    if not isinstance(opset_version, int) or not MIN_OPSET <= opset_version <= newest:
        raise ValueError(
            f"tk.onnx.export: opset_version must be an int from {MIN_OPSET} to {newest} (the "
            f"installed onnx's newest), got {opset_version!r}"
        )
    args = args if isinstance(args, tuple) else (args,)
    module = model if callable(getattr(model, "named_parameters", None)) else None
    recording = record(model, args, module)
    graph = recording.graph
    _check_recorded(graph)
    inputs = _names(input_names, len(recording.inputs), "input", "input_names")
    outputs = _names(output_names, len(graph.outputs), "output", "output_names")
    axes = _dynamic_axes(dynamic_axes, inputs, outputs, recording, graph)
    dynamic = (
        find_dynamic(recording, model, args, module, axes[0], inputs) if axes[0] else Dynamic()
    )
    proto = _build(recording, inputs, outputs, axes, dynamic, opset_version)
    onnx.checker.check_model(proto)
    target = os.fsdecode(path)
    directory = os.path.dirname(os.path.realpath(target))
    if not os.path.isdir(directory):
        raise FileNotFoundError(
            f"tk.onnx.export cannot write {target}: the folder {directory} does not exist"
        )
    try:
        atomic_write(target, lambda stream: stream.write(proto.SerializeToString()))
    except OSError as error:
        raise OSError(
            error.errno, f"tk.onnx.export cannot write {target}: {error.strerror}"
        ) from error


def _check_recorded(graph: Graph) -> None:
    for node in graph.nodes:
        where = (f" at {node.site}" if node.site else "") + (
            f" in module {node.module}" if node.module else ""
        )
        if node.kind == "random":
            raise UnsupportedOperatorError(
                f"tk.onnx.export: random draw {node.op!r}{where} has no ONNX translation (an "
                "exported graph must compute the same values as the call; call model.eval() "
                "to turn dropout off)"
            )
        if node.kind == "function":
            raise UnsupportedOperatorError(
                f"tk.onnx.export: custom autograd.Function {node.op!r}{where} is opaque to "
                "tracing and has no ONNX translation; write it as a tk.library op"
            )
    if graph.mutations:
        written = ", ".join(repr(graph.placeholders[m.placeholder].name) for m in graph.mutations)
        raise ExportError(
            f"tk.onnx.export: the call writes in place into {written} (a training-mode "
            "BatchNorm updating its running stats?); ONNX graphs hold no state: call "
            "model.eval() first"
        )
    for position, out in enumerate(graph.outputs):
        if type(out) is not Ref:
            raise ExportError(
                f"tk.onnx.export: output {position} is a {type(out).__name__}, not a Tensor; "
                "ONNX graphs return tensors only"
            )


def _names(given: list[str] | None, count: int, stem: str, what: str) -> list[str]:
    if given is None:
        return [f"{stem}_{i}" for i in range(count)]
    given = list(given)
    if len(given) > count or len(set(given)) != len(given):
        raise ValueError(
            f"tk.onnx.export: {what} has {len(given)} names {given} for {count} tensors "
            f"(names must be unique, at most one per tensor)"
        )
    return given + [f"{stem}_{i}" for i in range(len(given), count)]


def _dynamic_axes(
    spec: dict[str, Any] | None,
    inputs: list[str],
    outputs: list[str],
    recording: Recording,
    graph: Graph,
) -> tuple[dict[int, dict[int, str]], dict[int, dict[int, str]]]:
    """``dynamic_axes`` as {input position: {axis: name}} and the same for outputs (torch's
    form: a name maps to {axis: dim name} or to a list of axes, named for it)."""
    found: tuple[dict[int, dict[int, str]], dict[int, dict[int, str]]] = ({}, {})
    values = graph.values()
    for name, named in (spec or {}).items():
        if name in inputs:
            side, position = 0, inputs.index(name)
            rank = recording.inputs[position].ndim
        elif name in outputs:
            side, position = 1, outputs.index(name)
            rank = len(values[graph.outputs[position].id].shape)
        else:
            raise ValueError(
                f"tk.onnx.export: dynamic_axes names {name!r}, which is none of the inputs "
                f"{inputs} or outputs {outputs}"
            )
        if not isinstance(named, dict):
            named = {axis: f"{name}_dynamic_axes_{i + 1}" for i, axis in enumerate(named)}
        for axis in named:
            if not isinstance(axis, int) or not -rank <= axis < rank:
                raise ValueError(
                    f"tk.onnx.export: dynamic_axes[{name!r}] names axis {axis!r}, but {name} "
                    f"has {rank} dims"
                )
        found[side][position] = {axis % rank: str(dim) for axis, dim in named.items()}
    for position, named in found[0].items():
        for axis in named:
            if recording.inputs[position].shape[axis] == 0:
                raise ValueError(
                    f"tk.onnx.export: dynamic axis {axis} of {inputs[position]} has size 0; "
                    "trace with at least one element along it"
                )
    return found


def _build(
    recording: Recording,
    inputs: list[str],
    outputs: list[str],
    axes: tuple[dict[int, dict[int, str]], dict[int, dict[int, str]]],
    dynamic: Dynamic,
    opset: int,
) -> onnx.ModelProto:
    graph = recording.graph
    b = Builder(graph.values(), opset, dynamic)
    used = {i for node in graph.nodes for i in node.refs()}
    used.update(out.id for out in graph.outputs)
    graph_inputs = []
    position = 0
    for index, placeholder in enumerate(graph.placeholders):
        value = placeholder.value
        if placeholder.kind == INPUT:
            b.names[value.id] = inputs[position]
            graph_inputs.append(_value_info(inputs[position], value, dynamic.value_dims))
            position += 1
        elif value.id in used:
            if placeholder.kind == CONSTANT:
                name, array = f"constant_{value.id}", graph.constants[value.id]
            elif placeholder.kind == EXTERNAL:
                name, array = f"external_{value.id}", recording.tensors[index]._data
            else:  # a parameter or buffer, by its qualified name
                name, array = placeholder.name, recording.tensors[index]._data
            b.names[value.id] = b.initializer(array, name)
    for index, node in enumerate(graph.nodes):
        if node.kind == "guard":  # the branch traced is exported, as torch.onnx does
            continue
        b.node, b.index = node, index
        produced = _translate(b)
        produced = [produced] if isinstance(produced, str) else list(produced)
        for value, name in zip(node.outputs, produced, strict=True):
            b.names[value.id] = name
            b.producers[value.id] = node
    graph_outputs = []
    for position, (out, name) in enumerate(zip(graph.outputs, outputs, strict=True)):
        b.add("Identity", [b.name(out.id)], [name])
        dims = {**dynamic.value_dims.get(out.id, {}), **axes[1].get(position, {})}
        graph_outputs.append(_value_info(name, b.values[out.id], {out.id: dims}))
    nodes = _used_nodes(b.nodes, outputs)
    kept = {name for node in nodes for name in node.input}
    initializers = [t for t in b.initializers if t.name in kept]
    proto_graph = helper.make_graph(nodes, "tensorkit", graph_inputs, graph_outputs, initializers)
    imports = [helper.make_opsetid("", opset)] + [
        helper.make_opsetid(domain, 1) for domain in sorted(b.domains)
    ]
    model = helper.make_model(proto_graph, opset_imports=imports, producer_name="tensorkit")
    model.ir_version = helper.find_min_ir_version_for(imports, ignore_unknown=True)
    return model


def _translate(b: Builder) -> Any:
    node = b.node
    if "::" in node.op:
        return _custom(b)
    translation = TABLE.get(node.op)
    if translation is None:
        raise UnsupportedOperatorError(
            f"tk.onnx.export: {b.where()} has no ONNX translation (tk.onnx.supported_ops() "
            "lists the ops it translates, besides tk.library ops 'domain::name')"
        )
    return translation(b)


def _custom(b: Builder) -> Any:
    """A tk.library op "domain::name": a node of that domain (its tensors as inputs, its
    attributes as ONNX attributes)."""
    node = b.node
    domain, op_type = node.op.split("::", 1)
    b.domains.add(domain)
    inputs = ["" if arg is None else b.arg(i) for i, arg in enumerate(node.args)]
    attrs = {}
    for key, value in node.attrs.items():
        if type(value) is Ref or value is None:
            raise b.unsupported(f"attribute {key}={value!r} cannot be an ONNX attribute")
        attrs[key] = numpy_helper.from_array(host(value)) if hasattr(value, "shape") else value
    return b.add(op_type, inputs, len(node.outputs), domain=domain, **attrs)


def _value_info(name: str, value: Any, dims: dict[int, dict[int, str]]) -> Any:
    named = dims.get(value.id, {})
    shape = [named.get(axis, n) for axis, n in enumerate(value.shape)]
    return helper.make_tensor_value_info(name, onnx_dtype(value.dtype), shape)


def _used_nodes(nodes: list[Any], outputs: list[str]) -> list[Any]:
    """The nodes an output needs (a matmul written as a Conv leaves its layout unused)."""
    needed = set(outputs)
    kept = []
    for node in reversed(nodes):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(node.input)
    kept.reverse()
    return kept
