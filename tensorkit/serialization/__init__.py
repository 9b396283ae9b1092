"""Safe checkpoints: ``save(obj, f)`` and ``load(f, map_location=None)``.

A checkpoint is a plain safetensors file, so other safetensors tools read its tensors.
``__metadata__`` holds, as JSON strings, the format version (``tensorkit.format``), the
object's structure with tensors replaced by names (``tensorkit.structure``), each tensor's
device, ``requires_grad`` and complex flag (``tensorkit.tensors``), the SHA-256 of each
tensor's bytes (``tensorkit.checksums``) and the SHA-256 of the rest of the header
(``tensorkit.header``: every tensor's dtype, shape and offsets and every other metadata key,
as :func:`header_digest` serializes them), so no change to the file goes unnoticed unless
it leaves every value as it was.

- Objects: tensors (``nn.Parameter`` loads as one), and dicts (also OrderedDicts), lists,
  tuples and sets of them and of str, bytes, int, float, complex, bool, None, ``tk.Size``,
  ``tk.dtype`` and ``tk.device``, nested: what PyTorch's ``weights_only`` loading allows. Dict
  keys and set items may be str, bytes, int, float, complex, bool, None or tuples of those, and
  keep their type (optimizer state keys are ints). A tensor reached twice is stored once and
  loads as one tensor. Anything else raises ``TypeError`` naming where it is.
- Names: a tensor's path joined by dots, so a state dict keeps its keys (``fc.weight``).
- Complex tensors are stored as their real view with a trailing dimension of 2 (as
  ``torch.view_as_real``), flagged in ``tensorkit.tensors``; other tools see that float tensor.
- Saving to a path is atomic: the old file stays intact until the new one is complete. A new
  file gets the mode of the user's other files (0666 less the umask); a replaced one keeps its.
- Loading never runs code from the file: it parses JSON and copies bytes, checks every field
  against the file's size before reading data, verifies the header's and each tensor's
  checksum and raises :class:`CheckpointError` for anything malformed. A file with any
  ``tensorkit.*`` metadata key is taken for a checkpoint and must pass every check.
  ``weights_only``, ``mmap``, ``pickle_module`` and ``pickle_protocol`` exist for PyTorch
  compatibility and change nothing: a checkpoint can only ever hold data.
- A safetensors file without tensorkit metadata loads as a dict of its tensors (on the cpu).
- Format versions: 2 (this one) added ``tensorkit.header``; files of format 1, written by
  earlier tensorkit releases, still load, with the per-tensor checksums only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from .._backend import as_device, cpu, device, to_device_array
from ..tensor import Tensor, wrap
from ._files import atomic_write, is_path, open_source
from ._format import (
    CheckpointError,
    Entry,
    Header,
    as_bytes,
    layout,
    parse_json,
    read_data,
    read_header,
)
from ._format import write as write_safetensors
from ._tree import flatten, unflatten

__all__ = ["CheckpointError", "load", "save"]

FORMAT_VERSION = "2"
READABLE_VERSIONS = ("1", "2")  # 1 has no header checksum
FORMAT_KEY = "tensorkit.format"
STRUCTURE_KEY = "tensorkit.structure"
TENSORS_KEY = "tensorkit.tensors"
CHECKSUMS_KEY = "tensorkit.checksums"
HEADER_KEY = "tensorkit.header"

_INFO_KEYS = {"device", "requires_grad", "complex"}
_OPTIONAL_INFO_KEYS = {"parameter"}
_DEVICE_TEXT = re.compile(r"cpu|cuda:\d{1,4}")
_SHA256_TEXT = re.compile(r"[0-9a-f]{64}")
_PLAIN = {"device": "cpu", "requires_grad": False, "complex": False}

FileLike = str | bytes | os.PathLike | BinaryIO
MapLocation = None | str | device | int | dict[str, Any] | Callable[[Tensor, str], Any]


def save(obj: Any, f: FileLike, pickle_module: Any = None, pickle_protocol: int = 2) -> None:
    """Write ``obj`` to the path or binary file-like object ``f`` as a safetensors checkpoint.

    ``pickle_module`` and ``pickle_protocol`` are accepted for PyTorch compatibility and unused.
    """
    structure, tensors = flatten(obj)
    stored = {name: _stored_array(tensor) for name, tensor in tensors.items()}
    # Widest items first: with the 8-byte-aligned header every tensor lands aligned in the file.
    arrays = dict(sorted(stored.items(), key=lambda item: -item[1].dtype.itemsize))
    infos = {
        name: {
            "device": str(tensor.device),
            "requires_grad": tensor.requires_grad,
            "complex": tensor.is_complex(),
            **({"parameter": True} if tensor._is_parameter else {}),
        }
        for name, tensor in tensors.items()
    }
    checksums = {
        name: hashlib.sha256(as_bytes(array)).hexdigest() for name, array in stored.items()
    }
    metadata = {
        FORMAT_KEY: FORMAT_VERSION,
        STRUCTURE_KEY: _dumps(structure),
        TENSORS_KEY: _dumps(infos),
        CHECKSUMS_KEY: _dumps(checksums),
    }
    header = layout(arrays, metadata)
    metadata[HEADER_KEY] = header_digest(header)
    if is_path(f):
        parent = os.path.dirname(os.path.abspath(os.fsdecode(f)))
        if not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {parent} does not exist.")
        atomic_write(f, lambda stream: write_safetensors(stream, header, arrays))
    elif callable(getattr(f, "write", None)):
        write_safetensors(f, header, arrays)
    else:
        raise TypeError(
            f"save() expects a path or a binary file-like object, got {type(f).__name__}"
        )


def load(
    f: FileLike,
    map_location: MapLocation = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
) -> Any:
    """Read a checkpoint written by :func:`save` (or any safetensors file) from ``f``.

    ``map_location``: None puts each tensor on the device it was saved from (the cpu, with a
    warning, when that device is not available here); a device, device string or index puts
    all tensors there; a dict maps saved device strings (``"cuda:1"``) to devices, others as
    None; a callable gets ``(tensor_on_cpu, saved_device_string)`` and returns a tensor, a
    device, or None for the default. ``pickle_module``, ``weights_only`` and ``mmap`` are
    accepted and ignored (see the module).
    """
    if not isinstance(weights_only, bool | None):
        raise TypeError(f"weights_only must be a bool, got {type(weights_only).__name__}")
    placement = _Placement(map_location)
    with open_source(f) as (stream, start, size, source):
        header = read_header(stream, start, size, source)
        plan = _read_plan(header, source)
        structure, infos, checksums = plan if plan is not None else (None, {}, {})
        loaded: dict[str, Tensor] = {}

        def resolve(name: str) -> Tensor:
            if name not in loaded:
                info, checksum = infos.get(name, _PLAIN), checksums.get(name)
                raw = _checked_bytes(stream, header, header.entries[name], checksum, source)
                loaded[name] = _tensor(raw, header.entries[name], info, placement)
            return loaded[name]

        if plan is None:
            obj = {name: resolve(name) for name in header.entries}
        else:
            where = f"{source}: {STRUCTURE_KEY}"
            used: set[str] = set()
            unflatten(structure, header.entries, used.add, where)  # check it all before reading
            unused = [name for name in header.entries if name not in used]
            if unused:
                raise CheckpointError(f"{where} does not use tensors {unused}")
            obj = unflatten(structure, header.entries, resolve, where)
    if placement.unavailable:
        warnings.warn(
            f"{source}: tensors were saved on {', '.join(sorted(placement.unavailable))}, which "
            "is not available here; they were loaded on the cpu",
            UserWarning,
            stacklevel=2,
        )
    return obj


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def header_digest(header: dict[str, Any]) -> str:
    """The SHA-256 (hex) of a header's JSON object without its ``tensorkit.header`` entry,
    serialized as compact JSON with sorted keys and ASCII escapes (so any change to a tensor's
    dtype, shape or offsets, or to any metadata key or value, changes it)."""
    metadata = {k: v for k, v in header.get("__metadata__", {}).items() if k != HEADER_KEY}
    signed = {**header, "__metadata__": metadata}
    text = json.dumps(signed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _stored_array(tensor: Tensor) -> np.ndarray:
    """The tensor's data on the host, C-contiguous and little-endian; complex as a real view."""
    host = to_device_array(tensor._data, cpu)
    array = np.asarray(host, dtype=host.dtype.newbyteorder("<"), order="C")
    if array.dtype.kind == "c":
        real = np.dtype(f"<f{array.dtype.itemsize // 2}")
        array = array.reshape(-1).view(real).reshape((*array.shape, 2))
    return array


def _read_plan(
    header: Header, source: str
) -> tuple[Any, dict[str, dict[str, Any]], dict[str, str]] | None:
    """The checked structure, tensor infos and checksums; None for a foreign safetensors file."""
    metadata = header.metadata
    ours = [key for key in metadata if key.startswith("tensorkit")]
    if not ours:
        return None
    if FORMAT_KEY not in metadata:
        raise CheckpointError(
            f"{source}: the header has tensorkit metadata ({', '.join(map(repr, ours))}) but no "
            f"{FORMAT_KEY!r}: the file is corrupt"
        )
    version = metadata[FORMAT_KEY]
    if version not in READABLE_VERSIONS:
        raise CheckpointError(
            f"{source}: tensorkit checkpoint format {version!r} is not one this version reads "
            f"({', '.join(map(repr, READABLE_VERSIONS))}); the file is corrupt or newer"
        )
    if version == "1" and HEADER_KEY in metadata:
        raise CheckpointError(
            f"{source}: a format 1 checkpoint has no {HEADER_KEY!r}: the file is corrupt"
        )
    if version != "1":
        if HEADER_KEY not in metadata:
            raise CheckpointError(f"{source}: __metadata__ has no {HEADER_KEY!r}")
        if header_digest(header.raw) != metadata[HEADER_KEY]:
            raise CheckpointError(
                f"{source}: the header does not match its SHA-256 checksum ({HEADER_KEY}): the "
                "file is corrupt"
            )
    parts = []
    for key in (STRUCTURE_KEY, TENSORS_KEY, CHECKSUMS_KEY):
        if key not in metadata:
            raise CheckpointError(f"{source}: __metadata__ has no {key!r}")
        parts.append(parse_json(metadata[key], f"{source}: {key}"))
    structure, infos, checksums = parts
    names = set(header.entries)
    for key, table in ((TENSORS_KEY, infos), (CHECKSUMS_KEY, checksums)):
        if not isinstance(table, dict):
            raise CheckpointError(f"{source}: {key} must be a JSON object")
        if set(table) != names:
            raise CheckpointError(
                f"{source}: {key} must list exactly the tensors in the file: missing "
                f"{sorted(names - set(table))}, unknown {sorted(set(table) - names)}"
            )
    for name, info in infos.items():
        _check_info(header.entries[name], info, f"{source}: {TENSORS_KEY}[{name!r}]")
    for name, digest in checksums.items():
        if not (isinstance(digest, str) and _SHA256_TEXT.fullmatch(digest)):
            raise CheckpointError(
                f"{source}: {CHECKSUMS_KEY}[{name!r}] must be a SHA-256 in lowercase hex"
            )
    return structure, infos, checksums


def _check_info(entry: Entry, info: Any, where: str) -> None:
    if not (isinstance(info, dict) and _INFO_KEYS <= set(info) <= _INFO_KEYS | _OPTIONAL_INFO_KEYS):
        raise CheckpointError(
            f"{where}: expected an object with keys {sorted(_INFO_KEYS)} (and optionally "
            f"{sorted(_OPTIONAL_INFO_KEYS)})"
        )
    if info.get("parameter", True) is not True:
        raise CheckpointError(f"{where}: parameter must be true when present")
    if not (isinstance(info["device"], str) and _DEVICE_TEXT.fullmatch(info["device"])):
        raise CheckpointError(f"{where}: bad device {info['device']!r}")
    if type(info["requires_grad"]) is not bool or type(info["complex"]) is not bool:
        raise CheckpointError(f"{where}: requires_grad and complex must be true or false")
    if info["complex"] and not (entry.dtype.kind == "f" and entry.shape[-1:] == (2,)):
        raise CheckpointError(
            f"{where}: a complex tensor is stored as floats with a last dimension of 2, got "
            f"{entry.dtype} of shape {list(entry.shape)}"
        )
    if info["requires_grad"] and entry.dtype.kind not in "fc":
        raise CheckpointError(f"{where}: {entry.dtype} tensors cannot require grad")


def _checked_bytes(
    stream: BinaryIO, header: Header, entry: Entry, checksum: str | None, source: str
) -> np.ndarray:
    raw = read_data(stream, header, entry, source)
    if checksum is not None and hashlib.sha256(raw).hexdigest() != checksum:
        raise CheckpointError(
            f"{source}: tensor {entry.name!r} does not match its SHA-256 checksum: the file is "
            "corrupt"
        )
    if entry.dtype.kind == "b" and raw.max(initial=0) > 1:
        raise CheckpointError(f"{source}: bool tensor {entry.name!r} holds bytes other than 0, 1")
    return raw


def _tensor(raw: np.ndarray, entry: Entry, info: dict[str, Any], placement: _Placement) -> Tensor:
    array = raw.view(entry.dtype).reshape(entry.shape)
    if info["complex"]:
        complex_dtype = np.dtype(f"<c{2 * entry.dtype.itemsize}")
        array = array.view(complex_dtype).reshape(entry.shape[:-1])
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    tensor = placement.place(array, info["device"])
    if info.get("parameter"):
        from ..nn import Parameter

        return Parameter(tensor, requires_grad=info["requires_grad"])
    if info["requires_grad"]:
        tensor.requires_grad_(True)
    return tensor


class _Placement:
    """Where loaded tensors go, by ``map_location`` and the device each was saved from."""

    def __init__(self, map_location: MapLocation) -> None:
        self.rule = map_location
        self.fixed: device | None = None
        if not (map_location is None or isinstance(map_location, dict) or callable(map_location)):
            self.fixed = as_device(map_location)
        self.unavailable: set[str] = set()  # saved devices missing here (tensors went to cpu)

    def place(self, array: np.ndarray, saved: str) -> Tensor:
        if self.fixed is not None:
            return _on(array, self.fixed)
        target: Any = None
        if isinstance(self.rule, dict):
            target = self.rule.get(saved)
        elif self.rule is not None:
            target = self.rule(wrap(array, cpu), saved)
            if isinstance(target, Tensor):
                return target
        if target is not None:
            return _on(array, as_device(target))
        return _on(array, self._saved_or_cpu(saved))

    def _saved_or_cpu(self, saved: str) -> device:
        if saved == "cpu":
            return cpu
        from .. import cuda

        index = int(saved.partition(":")[2])
        if index < cuda.device_count():
            return device("cuda", index)
        self.unavailable.add(saved)
        return cpu


def _on(array: np.ndarray, target: device) -> Tensor:
    return wrap(array if target is cpu else to_device_array(array, target), target)
