"""The safetensors container: writing one, and reading one from an untrusted source.

Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON
``{name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
"__metadata__": {str: str}}`` (padded with spaces to a multiple of 8 bytes), then the data
section, in which each tensor's bytes (C order, little-endian) lie at ``data_offsets``, back to
back with no gaps. Reading checks every field against the file's size before reading data.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

__all__ = [
    "CheckpointError",
    "Entry",
    "Header",
    "as_bytes",
    "layout",
    "parse_json",
    "read_data",
    "read_header",
    "write",
]

MAX_HEADER_BYTES = 100 * 2**20
MAX_NDIM = 64
MAX_ARRAY_BYTES = 2**63 - 1  # NumPy's limit on the product of a shape's nonzero dimensions

_CODES: dict[np.dtype, str] = {
    np.dtype(np.bool_): "BOOL",
    np.dtype(np.uint8): "U8",
    np.dtype(np.int8): "I8",
    np.dtype(np.int16): "I16",
    np.dtype(np.int32): "I32",
    np.dtype(np.int64): "I64",
    np.dtype(np.float16): "F16",
    np.dtype(np.float32): "F32",
    np.dtype(np.float64): "F64",
}
# Reading also takes C64, which the safetensors library writes for complex64 arrays.
_DTYPES: dict[str, np.dtype] = {
    code: dt.newbyteorder("<") for dt, code in [*_CODES.items(), (np.dtype(np.complex64), "C64")]
}
_ENTRY_KEYS = {"dtype", "shape", "data_offsets"}


class CheckpointError(ValueError):
    """A checkpoint that is truncated, corrupt, hostile or in a format tensorkit cannot read."""


@dataclass(frozen=True)
class Entry:
    """One tensor of the header; ``dtype`` is little-endian, offsets are into the data section."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class Header:
    """A validated header: entries in header order, the metadata, where the data section
    starts, and the header's JSON object as parsed (``raw``, for checksums over all of it)."""

    entries: dict[str, Entry]
    metadata: dict[str, str]
    data_start: int
    raw: dict[str, Any]


def dtype_code(dtype: np.dtype) -> str:
    """The safetensors code of a (native-order) NumPy dtype, e.g. float32 -> "F32"."""
    return _CODES[dtype]


def as_bytes(array: np.ndarray) -> np.ndarray:
    """A C-contiguous array's bytes as a flat uint8 view (also for 0-d arrays)."""
    return array.reshape(-1).view(np.uint8)


def write_array(stream: BinaryIO, array: np.ndarray) -> None:
    stream.write(as_bytes(array))


def layout(arrays: dict[str, np.ndarray], metadata: dict[str, str]) -> dict[str, Any]:
    """The header (as a JSON object) of C-contiguous little-endian ``arrays`` stored back to
    back in the given order, with ``metadata``."""
    header: dict[str, Any] = {"__metadata__": metadata}
    offset = 0
    for name, array in arrays.items():
        code = dtype_code(array.dtype.newbyteorder("="))
        header[name] = {
            "dtype": code,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
    return header


def write(stream: BinaryIO, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write ``header`` (from :func:`layout`), then the ``arrays`` it lays out."""
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    stream.write(struct.pack("<Q", len(text)))
    stream.write(text)
    for array in arrays.values():
        write_array(stream, array)


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A ``json`` object hook that refuses duplicated keys (JSON parsers disagree on them)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise CheckpointError(f"duplicated key {duplicate!r}")
    return result


def parse_json(text: str | bytes, where: str) -> Any:
    """Parse JSON from the file: UTF-8, no NaN/Infinity, no duplicated keys."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text, object_pairs_hook=unique_pairs, parse_constant=_no_constant)
    except CheckpointError as error:
        raise CheckpointError(f"{where}: {error}") from None
    except UnicodeDecodeError as error:
        raise CheckpointError(
            f"{where} is not valid UTF-8 ({error.reason} at byte {error.start})"
        ) from None
    except (ValueError, RecursionError) as error:
        raise CheckpointError(f"{where} is not valid JSON ({error})") from None


def _no_constant(name: str) -> Any:
    raise CheckpointError(f"{name} is not a JSON value")


def read_header(stream: BinaryIO, start: int, size: int, source: str) -> Header:
    """Read and check the header of the ``size``-byte checkpoint at ``start`` in ``stream``."""
    if size < 8:
        raise CheckpointError(
            f"{source}: the file is {size} bytes long, too short for a safetensors header "
            "(an 8-byte length, then JSON)"
        )
    stream.seek(start)
    (length,) = struct.unpack("<Q", read_exact(stream, 8, source, "the header length"))
    if length > MAX_HEADER_BYTES:
        raise CheckpointError(
            f"{source}: the header claims {length} bytes, more than the limit of "
            f"{MAX_HEADER_BYTES} bytes; this is not a checkpoint or it is corrupt"
        )
    if 8 + length > size:
        raise CheckpointError(
            f"{source}: the header claims {length} bytes but only {size - 8} follow its length; "
            "the file is truncated or corrupt"
        )
    parsed = parse_json(read_exact(stream, length, source, "the header"), f"{source}: the header")
    if not isinstance(parsed, dict):
        raise CheckpointError(
            f"{source}: the header must be a JSON object, got {type(parsed).__name__}"
        )
    metadata = parsed.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise CheckpointError(f"{source}: __metadata__ must be an object of strings to strings")
    data_size = size - 8 - length
    entries = {
        name: _entry(name, spec, data_size, f"{source}: tensor {name!r}")
        for name, spec in parsed.items()
        if name != "__metadata__"
    }
    _check_layout(entries, data_size, source)
    return Header(entries, metadata, start + 8 + length, parsed)


def _entry(name: str, spec: Any, data_size: int, where: str) -> Entry:
    if not isinstance(spec, dict):
        raise CheckpointError(f"{where}: expected an object, got {type(spec).__name__}")
    if set(spec) != _ENTRY_KEYS:
        missing, extra = sorted(_ENTRY_KEYS - set(spec)), sorted(set(spec) - _ENTRY_KEYS)
        problems = []
        if missing:
            problems.append(f"missing keys {missing}")
        if extra:
            problems.append(f"unexpected keys {extra}")
        raise CheckpointError(f"{where}: {', '.join(problems)}")
    code, shape, offsets = spec["dtype"], spec["shape"], spec["data_offsets"]
    if not isinstance(code, str) or code not in _DTYPES:
        raise CheckpointError(
            f"{where}: unsupported dtype {code!r} (tensorkit reads {', '.join(_DTYPES)})"
        )
    if not (
        isinstance(shape, list)
        and len(shape) <= MAX_NDIM
        and all(type(n) is int and n >= 0 for n in shape)
    ):
        raise CheckpointError(
            f"{where}: shape must be a list of at most {MAX_NDIM} non-negative integers, "
            f"got {_short(shape)}"
        )
    if not (
        isinstance(offsets, list) and len(offsets) == 2 and all(type(n) is int for n in offsets)
    ):
        raise CheckpointError(f"{where}: data_offsets must be [begin, end], got {_short(offsets)}")
    begin, end = offsets
    if not 0 <= begin <= end <= data_size:
        raise CheckpointError(
            f"{where}: data_offsets [{begin}, {end}] are out of range: the data section holds "
            f"{data_size} bytes"
        )
    dtype = _DTYPES[code]
    if math.prod(n for n in shape if n) * dtype.itemsize > MAX_ARRAY_BYTES:
        raise CheckpointError(
            f"{where}: shape {_short(shape)} of {code} is too large for any array (even one "
            "with a zero dimension): its nonzero dimensions span more than 2**63 - 1 bytes"
        )
    nbytes = math.prod(shape) * dtype.itemsize
    if end - begin != nbytes:
        raise CheckpointError(
            f"{where}: shape {shape} of {code} needs {nbytes} bytes but data_offsets "
            f"[{begin}, {end}] hold {end - begin}"
        )
    return Entry(name, dtype, tuple(shape), begin, end)


def _check_layout(entries: dict[str, Entry], data_size: int, source: str) -> None:
    """The tensors must tile the data section exactly: no overlap, no gap, nothing after."""
    position, previous = 0, None
    for entry in sorted(entries.values(), key=lambda e: (e.begin, e.end)):
        if entry.begin < position:
            raise CheckpointError(
                f"{source}: tensor {entry.name!r} (bytes {entry.begin}..{entry.end}) overlaps "
                f"tensor {previous.name!r} (bytes {previous.begin}..{previous.end})"
            )
        if entry.begin > position:
            raise CheckpointError(
                f"{source}: bytes {position}..{entry.begin} of the data section, before tensor "
                f"{entry.name!r}, belong to no tensor"
            )
        position, previous = entry.end, entry
    if position != data_size:
        raise CheckpointError(
            f"{source}: bytes {position}..{data_size} of the data section belong to no tensor"
        )


def read_data(stream: BinaryIO, header: Header, entry: Entry, source: str) -> np.ndarray:
    """The bytes of one tensor, as a new uint8 array (its size was checked against the file)."""
    stream.seek(header.data_start + entry.begin)
    buffer = np.empty(entry.end - entry.begin, np.uint8)
    view = memoryview(buffer)
    filled = 0
    while filled < len(view):
        count = stream.readinto(view[filled:])
        if not count:
            raise CheckpointError(f"{source}: the file ends inside tensor {entry.name!r}")
        filled += count
    return buffer


def read_exact(stream: BinaryIO, count: int, source: str, what: str) -> bytes:
    data = stream.read(count)
    if len(data) != count:
        raise CheckpointError(f"{source}: the file ends inside {what}")
    return data


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
