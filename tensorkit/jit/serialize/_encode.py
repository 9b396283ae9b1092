"""A traced function as the document ``tk.jit.save`` writes: the graph's JSON and its tensors."""

from __future__ import annotations

from typing import Any

from ... import __version__
from ..._backend import as_device
from ...tensor import Tensor, wrap
from ..ir import BUFFER, CONSTANT, EXTERNAL, PARAMETER, Graph, Node, Value
from ._values import NESTED_REFS, TOP_REFS, ArrayTable, encode

__all__ = ["FORMAT", "FORMAT_VERSION", "OPSET_VERSION", "TABLES", "document"]

FORMAT = "tensorkit.jit"
FORMAT_VERSION = 1
# The meaning of the ops a file names: their keys, arguments, attributes and results. It
# changes when any op's meaning does (an attribute renamed, a result reordered), so a file
# recorded against other meanings is refused rather than run wrongly.
OPSET_VERSION = 2
# The tensors of a file, by table: placeholders' tensors (parameters and buffers by
# qualified name, external tensors and constants by value id "%id") and the values' arrays.
TABLES = ("parameter", "buffer", "external", "constant", "array")
_TABLE_OF = {PARAMETER: "parameter", BUFFER: "buffer", EXTERNAL: "external", CONSTANT: "constant"}


def tensor_key(kind: str, name: str, value_id: int) -> str:
    """The name of a placeholder's tensor in its table."""
    return name if kind in (PARAMETER, BUFFER) else f"%{value_id}"


def document(graph: Graph, tensors: list, input_spec: Any, name: str) -> tuple[str, dict]:
    """The graph as a JSON-able object and the tensors it names, by table (see ``TABLES``);
    ``tensors`` are the traced function's placeholder tensors."""
    arrays = ArrayTable()
    tables: dict[str, dict[str, Tensor]] = {table: {} for table in TABLES}
    placeholders = []
    for index, placeholder in enumerate(graph.placeholders):
        value = placeholder.value
        table = _TABLE_OF.get(placeholder.kind)
        if table is not None:
            tensor = (
                wrap(graph.constants[value.id], as_device(value.device))
                if placeholder.kind == CONSTANT
                else tensors[index]
            )
            tables[table][tensor_key(placeholder.kind, placeholder.name, value.id)] = tensor
        placeholders.append(
            {"kind": placeholder.kind, "name": placeholder.name, "value": _value(value)}
        )
    doc = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "opset": OPSET_VERSION,
        "tensorkit": __version__,
        "name": name,
        "input_spec": input_spec,
        "placeholders": placeholders,
        "nodes": [_node(node, f"node {i}", arrays) for i, node in enumerate(graph.nodes)],
        "backward": [
            _node(node, f"backward node {i}", arrays) for i, node in enumerate(graph.backward)
        ],
        "outputs": [
            encode(value, arrays, f"output {i}", TOP_REFS) for i, value in enumerate(graph.outputs)
        ],
        "output_spec": graph.output_spec,
        "grad_outputs": [ref.id for ref in graph.grad_outputs],
        "grads": [[index, value_id] for index, value_id in graph.grads.items()],
        "mutations": [[m.placeholder, m.value] for m in graph.mutations],
        "leaf_grads": [[index, value_id] for index, value_id in graph.leaf_grads.items()],
    }
    tables["array"] = arrays.tensors
    return doc, tables


def _value(value: Value) -> dict[str, Any]:
    return {
        "id": value.id,
        "shape": list(value.shape),
        "dtype": value.dtype,
        "device": value.device,
        "requires_grad": value.requires_grad,
    }


def _node(node: Node, where: str, arrays: ArrayTable) -> dict[str, Any]:
    if node.kind == "function":
        function = node.attrs["function"]
        raise TypeError(
            f"tk.jit.save: {where} is custom autograd.Function {function.name}, which the "
            "graph keeps as an opaque Python object; a saved graph holds ops only (write it "
            "as a custom op with tk.library to save it)"
        )
    what = f"{where} ({node.op})"
    return {
        "op": node.op,
        "kind": node.kind,
        "args": [
            encode(arg, arrays, f"argument {i} of {what}", TOP_REFS)
            for i, arg in enumerate(node.args)
        ],
        "attrs": {
            key: encode(value, arrays, f"attribute {key!r} of {what}", NESTED_REFS)
            for key, value in node.attrs.items()
        },
        "cast": node.cast,
        "outputs": [_value(value) for value in node.outputs],
        "site": node.site,
        "module": node.module,
        "phase": node.phase,
        "multi_output": node.multi_output,
        "members": [
            _node(member, f"member {i} of {where}", arrays) for i, member in enumerate(node.members)
        ],
    }
