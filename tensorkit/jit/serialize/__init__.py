"""``tk.jit.save(traced, f)`` and ``tk.jit.load(f)``: a traced graph in one safetensors file.

The file is a ``tk.save`` checkpoint of ``{"graph": text, "parameter": {...}, "buffer":
{...}, "external": {...}, "constant": {...}, "array": {...}}``, so it has every guarantee
of ``tk.save`` (per-tensor and header SHA-256 checksums, an atomic write with the user's
file mode) and ``tk.load`` reads its tensors. ``graph`` is the graph as versioned JSON
(``{"format": "tensorkit.jit", "version": 1, "opset": 1, ...}``, see ``_encode.document``);
the tables hold the tensors it names: parameters and buffers by qualified name, external
tensors and constants by value id ("%7"), and the arrays of node attributes (index arrays,
NumPy scalars) by number. Loading never imports or runs anything the file names: the op keys
must be registered ops, and ``plan.py`` generates code from value ids only.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from typing import Any, BinaryIO

from ... import serialization
from ...serialization import CheckpointError
from ...serialization._format import parse_json
from ...tensor import Tensor
from ..compiler import CompiledFunction
from ..ir import BUFFER, PARAMETER, Graph
from ..trace import TracedFunction, _name_of
from ._decode import LoadError, read_graph, register_ops
from ._encode import FORMAT, FORMAT_VERSION, OPSET_VERSION, TABLES, document

__all__ = ["FORMAT_VERSION", "OPSET_VERSION", "LoadError", "LoadedFunction", "load", "save"]

FileLike = str | bytes | os.PathLike | BinaryIO
_KEYS = {"graph", *TABLES}


def save(traced: TracedFunction | CompiledFunction, f: FileLike) -> None:
    """Write a function or module traced by ``tk.jit.trace`` (or one ``load`` returned), or
    the path a ``tk.compile`` function compiled last, to the path or binary file ``f``:
    its optimized graph, and its parameters, buffers, external tensors and constants as they
    are now. A graph holding something other than ops on data (a custom
    ``autograd.Function``, an attribute of another type) raises ``TypeError`` naming the
    node, the op and the attribute."""
    if isinstance(traced, CompiledFunction):
        path = traced.latest().path
        name = _name_of(traced.fn)
        doc, tables = document(path.compiled.graph, path.tensors, path.input_spec, name)
        serialization.save({"graph": _compact(doc), **tables}, f)
        return
    if not isinstance(traced, TracedFunction):
        raise TypeError(
            f"tk.jit.save expects a TracedFunction (from tk.jit.trace or tk.jit.load) or a "
            f"tk.compile function, got {type(traced).__name__}"
        )
    origin = traced.fn
    name = origin.name if isinstance(origin, _Origin) else _name_of(origin)
    doc, tables = document(traced.graph, traced._tensors, traced._input_spec, name)
    serialization.save({"graph": _compact(doc), **tables}, f)


def load(f: FileLike) -> LoadedFunction:
    """Read a graph :func:`save` wrote from the path or binary file ``f``: a function to
    call like the traced one, in a process that never imported its source. Parameters,
    buffers and external tensors are fresh tensors (``requires_grad`` as saved), and a
    training graph's outputs backpropagate into them. A file that is corrupt, truncated,
    not a saved graph, of a newer format, or naming an op this process lacks raises
    :class:`LoadError` naming the file."""
    source = _label(f)
    try:
        with warnings.catch_warnings():  # devices missing here are refused below, by name
            warnings.filterwarnings("ignore", "tensors were saved on", UserWarning)
            obj = serialization.load(f)
        tables = _tables(obj, source)
        doc = parse_json(obj["graph"], f"{source}: the graph")
    except LoadError:
        raise
    except CheckpointError as error:  # what tk.load refuses, named the same
        raise LoadError(str(error)) from None
    _check_version(doc, source)
    register_ops()
    graph, tensors, input_spec, name = read_graph(doc, tables, source)
    return LoadedFunction(graph, tensors, input_spec, name, source)


class _Origin:
    """Stands for the traced Python function, which a file does not hold: its name (in
    messages, ``__qualname__`` says where it was loaded from) and the file."""

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self.__qualname__ = f"{name} (loaded from {source})"


class LoadedFunction(TracedFunction):
    """A traced function read by :func:`load`: call it like the original. ``path`` names
    the file; ``named_parameters()`` and ``named_buffers()`` give its fresh tensors (to
    train them, or to read the running statistics a call updated)."""

    def __init__(
        self, graph: Graph, tensors: list, input_spec: Any, name: str, source: str
    ) -> None:
        super().__init__(_Origin(name, source), graph, tensors, input_spec, passes=False)
        self.path = source

    def named_parameters(self) -> Iterator[tuple[str, Tensor]]:
        return self._named(PARAMETER)

    def parameters(self) -> Iterator[Tensor]:
        return (tensor for _, tensor in self.named_parameters())

    def named_buffers(self) -> Iterator[tuple[str, Tensor]]:
        return self._named(BUFFER)

    def _named(self, kind: str) -> Iterator[tuple[str, Tensor]]:
        for placeholder, tensor in zip(self.graph.placeholders, self._tensors, strict=True):
            if placeholder.kind == kind:
                yield placeholder.name, tensor

    def __repr__(self) -> str:
        nodes = len(self.graph.nodes)
        return f"<tk.jit.LoadedFunction {self.fn.name} from {self.path}: {nodes} nodes>"


def _tables(obj: Any, source: str) -> dict[str, dict[str, Tensor]]:
    """The file's tensors by table, checking that the checkpoint is a saved graph."""
    if not (type(obj) is dict and set(obj) == _KEYS and type(obj["graph"]) is str):
        found = sorted(map(str, obj)) if type(obj) is dict else type(obj).__name__
        raise LoadError(
            f"{source}: not a tk.jit file (a checkpoint of {{'graph': str, "
            f"{', '.join(repr(t) + ': {...}' for t in TABLES)}}}, got {found}); a tk.save "
            "checkpoint loads with tk.load"
        )
    for table in TABLES:
        tensors = obj[table]
        if type(tensors) is not dict or not all(
            type(name) is str and isinstance(tensor, Tensor) for name, tensor in tensors.items()
        ):
            raise LoadError(f"{source}: {table!r} must map names to tensors")
    return {table: obj[table] for table in TABLES}


def _check_version(doc: Any, source: str) -> None:
    """Refuse another format, a newer version or another opset before reading the rest."""
    if type(doc) is not dict or doc.get("format") != FORMAT:
        found = doc.get("format") if type(doc) is dict else type(doc).__name__
        raise LoadError(f"{source}: the graph is not in the {FORMAT} format (got {found!r:.40})")
    version, writer = doc.get("version"), doc.get("tensorkit")
    writer = writer[:40] if type(writer) is str else "an unknown version"
    if type(version) is not int:
        raise LoadError(f"{source}: the graph's version must be an integer, got {version!r:.40}")
    if version > FORMAT_VERSION:
        raise LoadError(
            f"{source}: written by tensorkit {writer} in {FORMAT} format version {version}; "
            f"this tensorkit reads version {FORMAT_VERSION}: load it with tensorkit {writer} "
            "or newer"
        )
    if version != FORMAT_VERSION:
        raise LoadError(f"{source}: unknown {FORMAT} format version {version}")
    opset = doc.get("opset")
    if opset != OPSET_VERSION or type(opset) is not int:
        raise LoadError(
            f"{source}: the graph uses opset {opset!r:.40} (written by tensorkit {writer}); "
            f"this tensorkit runs opset {OPSET_VERSION} only"
        )


def _compact(doc: dict) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _label(f: Any) -> str:
    """How ``tk.load`` names ``f`` in its errors."""
    if isinstance(f, str | bytes | os.PathLike):
        return os.fsdecode(f)
    return str(getattr(f, "name", None) or f"<{type(f).__name__}>")
