"""tk.save / tk.load: safetensors checkpoints, round trips, interop, hostile files, atomicity."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import stat
import struct
import tracemalloc
import warnings
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorkit as tk
from tensorkit import serialization
from tensorkit.serialization import CheckpointError, _format, load, save

try:  # the reference implementation, for the interop tests only
    import safetensors
    import safetensors.numpy as safetensors_numpy
except ImportError:
    safetensors = safetensors_numpy = None
needs_safetensors = pytest.mark.skipif(
    safetensors is None, reason="needs the safetensors library (pip install safetensors)"
)

STRUCTURE, TENSORS, CHECKSUMS = "tensorkit.structure", "tensorkit.tensors", "tensorkit.checksums"
FORMAT, HEADER = "tensorkit.format", "tensorkit.header"
DATA = Path(__file__).resolve().parent / "data"
ALL_DTYPES = [
    tk.bool,
    tk.uint8,
    tk.int8,
    tk.int16,
    tk.int32,
    tk.int64,
    tk.float16,
    tk.float32,
    tk.float64,
    tk.complex64,
    tk.complex128,
]
REAL_DTYPES = ALL_DTYPES[:-2]


# ------------------------------------------------------------------------------ helpers
def _checkpoint(obj: Any) -> bytes:
    stream = io.BytesIO()
    save(obj, stream)
    return stream.getvalue()


def _roundtrip(obj: Any, **kwargs: Any) -> Any:
    return load(io.BytesIO(_checkpoint(obj)), **kwargs)


def _raw(header: dict | bytes, data: bytes = b"", length: int | None = None) -> bytes:
    """A file built by hand: length, header (a dict is JSON-encoded), data."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _split(blob: bytes) -> tuple[dict, bytes]:
    (length,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8 : 8 + length]), blob[8 + length :]


def _meta(blob: bytes, key: str) -> Any:
    return json.loads(_split(blob)[0]["__metadata__"][key])


def _set_meta(blob: bytes, key: str, text: str | None, *, sign: bool = True) -> bytes:
    """``blob`` with one ``__metadata__`` entry replaced by raw text (None removes it), the
    header checksum recomputed (``sign``) so that the checks behind it are reached."""
    header, data = _split(blob)
    if text is None:
        del header["__metadata__"][key]
    else:
        header["__metadata__"][key] = text
    if sign and key != HEADER:
        header["__metadata__"][HEADER] = serialization.header_digest(header)
    return _raw(header, data)


def _random_array(dtype: tk.dtype, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is tk.bool:
        return np.asarray(rng.random(shape) > 0.5)
    if dtype.is_complex:
        return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape), dtype.np)
    if dtype.is_floating_point:
        return np.asarray(rng.standard_normal(shape), dtype.np)
    info = np.iinfo(dtype.np)
    return np.asarray(rng.integers(info.min, info.max, shape, dtype=dtype.np, endpoint=True))


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes (so nan payloads and -0.0 count)."""
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    )


def _assert_same_tensor(loaded: Any, original: tk.Tensor) -> None:
    assert isinstance(loaded, tk.Tensor)
    assert loaded.dtype is original.dtype
    assert loaded.device == original.device
    assert loaded.requires_grad == original.requires_grad
    assert _same_bits(loaded.detach().numpy(force=True), original.detach().numpy(force=True))


# --------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (5,), (2, 3, 4)], ids=str)
def test_roundtrip_every_dtype_and_shape(dtype: tk.dtype, shape: tuple[int, ...]) -> None:
    original = tk.from_numpy(_random_array(dtype, shape))
    _assert_same_tensor(_roundtrip(original), original)


def test_roundtrip_float_special_values() -> None:
    values = [math.nan, math.inf, -math.inf, -0.0, 5e-324, 1e308, 0.1]
    for dtype in (tk.float16, tk.float32, tk.float64, tk.complex64, tk.complex128):
        original = tk.tensor(values, dtype=dtype)
        _assert_same_tensor(_roundtrip({"x": original})["x"], original)


def test_roundtrip_non_contiguous_tensors() -> None:
    base = tk.arange(24, dtype=tk.float64).reshape(4, 6)
    views = {
        "transposed": base.T,
        "strided": base[:, ::2],
        "permuted": tk.arange(24).reshape(2, 3, 4).permute(2, 0, 1),
        "complex": tk.from_numpy(_random_array(tk.complex64, (4, 6))).T,
    }
    assert not any(view.is_contiguous() for view in views.values())
    loaded = _roundtrip(views)
    for name, view in views.items():
        assert loaded[name].is_contiguous()
        assert np.array_equal(loaded[name].numpy(), view.numpy())


def test_roundtrip_nested_structure_keeps_types() -> None:
    weight = tk.randn(2, 3)
    obj = {
        "model": OrderedDict([("fc.weight", weight), ("fc.bias", tk.zeros(3))]),
        "numbers": [1, -(2**100), 0.1, math.inf, -0.0, True, False, None],
        "pair": (tk.tensor([1, 2]), "two"),
        "keys": {1: "int", 1.5: "float", None: "none", False: "bool", "s": "str"},
        "strings": ["", "héllo ☃", 'quo"te\n\\', "__metadata__"],
        "empty": [[], (), {}, OrderedDict()],
        "nested": [[(1, [2, (3,)])]],
    }
    loaded = _roundtrip(obj)
    assert list(loaded) == list(obj)
    assert type(loaded["model"]) is OrderedDict and type(loaded["keys"]) is dict
    assert list(loaded["model"]) == ["fc.weight", "fc.bias"]
    _assert_same_tensor(loaded["model"]["fc.weight"], weight)
    numbers = loaded["numbers"]
    assert numbers[:4] == obj["numbers"][:4] and numbers[5:] == [True, False, None]
    assert [type(n) for n in numbers] == [type(n) for n in obj["numbers"]]
    assert math.copysign(1.0, numbers[4]) == -1.0
    assert type(loaded["pair"]) is tuple and loaded["pair"][1] == "two"
    assert [(k, type(k)) for k in loaded["keys"]] == [(k, type(k)) for k in obj["keys"]]
    assert loaded["strings"] == obj["strings"]
    assert loaded["empty"] == [[], (), {}, OrderedDict()]
    assert [type(x) for x in loaded["empty"]] == [list, tuple, dict, OrderedDict]
    assert loaded["nested"] == [[(1, [2, (3,)])]]


@pytest.mark.parametrize("value", [None, 7, 2.5, math.nan, "text", True, [], ()], ids=repr)
def test_roundtrip_plain_top_level_values(value: Any) -> None:
    loaded = _roundtrip(value)
    assert type(loaded) is type(value)
    assert loaded == value or (isinstance(value, float) and math.isnan(loaded))


def test_roundtrip_values_torch_weights_only_allows() -> None:
    obj = {
        "set": {1, "a", (2, b"x"), None},
        "bytes": b"\x00\xffraw",
        "complex": [1 + 2j, complex(math.inf, -0.0)],
        "size": tk.Size([2, 3]),
        "dtype": [tk.float16, tk.bool, tk.complex128],
        "device": tk.device("cpu"),
        "keys": {(1, "a"): 1, b"k": 2, 1j: 3, ((1,), None): 4},
        "empty": [set(), b""],
    }
    loaded = _roundtrip(obj)
    assert loaded == obj
    assert type(loaded["size"]) is tk.Size and loaded["dtype"][0] is tk.float16
    assert [type(key) for key in loaded["keys"]] == [tuple, bytes, complex, tuple]
    assert math.copysign(1.0, loaded["complex"][1].imag) == -1.0


def test_roundtrip_parameters_stay_parameters() -> None:
    layer = tk.nn.Linear(3, 2)
    frozen = tk.nn.Parameter(tk.ones(2), requires_grad=False)
    loaded = _roundtrip({"params": list(layer.parameters()), "frozen": frozen, "again": frozen})
    assert all(type(p) is tk.nn.Parameter and p.requires_grad for p in loaded["params"])
    assert type(loaded["frozen"]) is tk.nn.Parameter and not loaded["frozen"].requires_grad
    assert loaded["frozen"] is loaded["again"]
    _assert_same_tensor(loaded["params"][0], layer.weight)


def test_load_and_save_accept_pytorch_keywords(tmp_path: Path) -> None:
    blob = _checkpoint(tk.ones(1))
    for kwargs in ({"weights_only": None}, {"weights_only": True}, {"mmap": False}):
        assert load(io.BytesIO(blob), **kwargs).tolist() == [1.0]
    path = tmp_path / "x.pt"
    save({"a": tk.ones(1)}, path, pickle_protocol=2)
    assert load(str(path))["a"].tolist() == [1.0]


def test_save_into_a_missing_folder_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    with pytest.raises(RuntimeError, match=f"^Parent directory {re.escape(str(missing))} does"):
        save({}, missing / "x.pt")


def test_shared_tensor_is_stored_once_and_loads_as_one() -> None:
    shared = tk.randn(4)
    blob = _checkpoint({"encoder": shared, "decoder": [shared]})
    assert [name for name in _split(blob)[0] if name != "__metadata__"] == ["encoder"]
    loaded = load(io.BytesIO(blob))
    assert loaded["encoder"] is loaded["decoder"][0]


def test_requires_grad_is_kept_and_the_loaded_tensor_is_a_leaf() -> None:
    leaf = tk.randn(3, requires_grad=True)
    loaded = _roundtrip({"leaf": leaf, "computed": leaf * 2, "plain": tk.ones(2)})
    assert loaded["leaf"].requires_grad and loaded["leaf"].is_leaf
    assert loaded["computed"].requires_grad and loaded["computed"].is_leaf
    assert not loaded["plain"].requires_grad
    loaded["leaf"].sum().backward()
    assert np.array_equal(loaded["leaf"].grad.numpy(), np.ones(3, np.float32))


def test_optimizer_state_dict_roundtrip_and_resume() -> None:
    params = [tk.randn(3, 2, requires_grad=True), tk.randn(2, requires_grad=True)]
    optimizer = tk.optim.Adam(params, lr=0.1, betas=(0.8, 0.99))
    (params[0].sum() + (params[1] ** 2).sum()).backward()
    optimizer.step()
    state = optimizer.state_dict()
    loaded = _roundtrip(state)
    assert list(loaded["state"]) == [0, 1] and all(type(k) is int for k in loaded["state"])
    group, saved_group = loaded["param_groups"][0], state["param_groups"][0]
    assert group == saved_group and group["betas"] == (0.8, 0.99) and group["foreach"] is None
    for index, slots in state["state"].items():
        for key, value in slots.items():
            _assert_same_tensor(loaded["state"][index][key], value)

    clones = [p.detach().clone().requires_grad_(True) for p in params]
    resumed = tk.optim.Adam(clones, lr=0.1, betas=(0.8, 0.99))
    resumed.load_state_dict(loaded)
    for opt, ps in ((optimizer, params), (resumed, clones)):
        opt.zero_grad()
        (ps[0].sum() + (ps[1] ** 2).sum()).backward()
        opt.step()
    for original, copy in zip(params, clones, strict=True):
        assert np.array_equal(original.detach().numpy(), copy.detach().numpy())


def test_tensor_names_are_paths() -> None:
    obj = {
        "a.b": tk.ones(1),
        "a": {"b": tk.zeros(1)},
        "__metadata__": tk.ones(2),
        "l": [tk.ones(3)],
    }
    blob = _checkpoint(obj)
    names = {name for name in _split(blob)[0] if name != "__metadata__"}
    assert names == {"a.b", "a.b#2", "__metadata__#2", "l.0"}
    loaded = load(io.BytesIO(blob))
    assert np.array_equal(loaded["a"]["b"].numpy(), [0.0])
    assert np.array_equal(loaded["__metadata__"].numpy(), [1.0, 1.0])


def test_file_layout_is_aligned_and_padded() -> None:
    blob = _checkpoint({"b": tk.ones(3, dtype=tk.uint8), "f": tk.ones(3, dtype=tk.float64)})
    (length,) = struct.unpack("<Q", blob[:8])
    assert length % 8 == 0
    header, _ = _split(blob)
    assert header["f"]["data_offsets"] == [0, 24] and header["b"]["data_offsets"] == [24, 27]


# ------------------------------------------------------------------------------- interop
@needs_safetensors
def test_safetensors_reads_what_tensorkit_writes(tmp_path: Path) -> None:
    tensors = {f"t.{d.name}": tk.from_numpy(_random_array(d, (2, 3))) for d in ALL_DTYPES}
    tensors["scalar"] = tk.tensor(3.5)
    tensors["empty"] = tk.zeros(0, 4)
    path = tmp_path / "model.safetensors"
    save(tensors, path)
    arrays = safetensors_numpy.load_file(path)
    assert set(arrays) == set(tensors)
    for name, tensor in tensors.items():
        expected = tensor.numpy()
        if tensor.is_complex():  # stored as its real view with a trailing 2
            expected = np.stack([expected.real, expected.imag], axis=-1)
        assert _same_bits(arrays[name], expected), name
    with safetensors.safe_open(path, "np") as opened:
        assert opened.metadata()["tensorkit.format"] == "2"


@needs_safetensors
def test_safetensors_reads_nested_checkpoints() -> None:
    arrays = safetensors_numpy.load(_checkpoint({"state": {0: {"m": tk.ones(2)}}, "x": [1]}))
    assert list(arrays) == ["state.0.m"]


@needs_safetensors
def test_tensorkit_reads_what_safetensors_writes(tmp_path: Path) -> None:
    arrays = {f"layer.{d.name}": _random_array(d, (3, 2)) for d in REAL_DTYPES}
    arrays["complex64"] = _random_array(tk.complex64, (4,))
    arrays["scalar"] = np.array(2.5, np.float32)
    arrays["empty"] = np.zeros((0, 3), np.int16)
    path = tmp_path / "foreign.safetensors"
    safetensors_numpy.save_file(arrays, path, metadata={"format": "np"})
    loaded = load(path)
    assert type(loaded) is dict and set(loaded) == set(arrays)
    for name, array in arrays.items():
        assert loaded[name].device == tk.device("cpu")
        assert _same_bits(loaded[name].numpy(), array), name
    assert load(io.BytesIO(safetensors_numpy.save({}))) == {}


# ---------------------------------------------------------------------- file-like objects
def test_file_like_objects() -> None:
    stream = io.BytesIO(b"prefix")
    stream.seek(0, io.SEEK_END)
    save({"x": tk.arange(3)}, stream)
    stream.seek(len(b"prefix"))
    assert np.array_equal(load(stream)["x"].numpy(), [0, 1, 2])

    class ReadOnly:  # no seek, no readinto
        def __init__(self, data: bytes) -> None:
            self.data = data

        def read(self, size: int = -1) -> bytes:
            data, self.data = self.data, b""
            return data

    assert np.array_equal(load(ReadOnly(_checkpoint(tk.ones(2)))).numpy(), [1.0, 1.0])


def test_bad_targets_and_sources(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="path or a binary file-like"):
        save({}, 42)
    with pytest.raises(TypeError, match="path or a binary file-like"):
        load(42)
    path = tmp_path / "x.safetensors"
    save({}, path)
    with open(path, encoding="latin-1") as text, pytest.raises(TypeError, match="binary mode"):
        load(text)


# ---------------------------------------------------------------------- what save refuses
class Foo:
    pass


@pytest.mark.parametrize(
    ("obj", "error", "message"),
    [
        (
            {"model": {"layers": [1, 2, Foo()]}},
            TypeError,
            r"obj\['model'\]\['layers'\]\[2\]: cannot save an object of type .*Foo",
        ),
        ([np.zeros(2)], TypeError, r"obj\[0\]: cannot save an object of type numpy.ndarray"),
        ({"s": frozenset({1})}, TypeError, r"obj\['s'\]: cannot save an object of type frozenset"),
        ({"d": defaultdict(int)}, TypeError, r"obj\['d'\]: .*defaultdict"),
        (
            {(1, frozenset()): 3},
            TypeError,
            r"obj: cannot save a dict key or set item of type frozenset \(frozenset\(\)\); keys "
            "must be str, bytes, int, float, complex, bool, None or tuples of those",
        ),
        ({"s": {1, Foo()}}, TypeError, r"obj\['s'\]: cannot save a dict key or set item of type"),
        ({"x": np.float32(1)}, TypeError, r"obj\['x'\]: .*numpy.float32"),
        ([slice(1, 2)], TypeError, r"obj\[0\]: cannot save an object of type slice; a checkpoint"),
    ],
    ids=["class", "ndarray", "frozenset", "defaultdict", "key", "set-item", "numpy", "slice"],
)
def test_save_refuses_other_objects(
    obj: Any, error: type[Exception], message: str, tmp_path: Path
) -> None:
    with pytest.raises(error, match=message):
        save(obj, tmp_path / "never.safetensors")
    assert os.listdir(tmp_path) == []


def test_save_refuses_cycles_and_too_deep_nesting() -> None:
    cycle: list = [1]
    cycle.append({"again": cycle})
    with pytest.raises(ValueError, match=r"obj\[1\]\['again'\]: the object contains itself"):
        save(cycle, io.BytesIO())
    deep: list = []
    for _ in range(300):
        deep = [deep]
    with pytest.raises(ValueError, match="nested deeper than 200 levels"):
        save(deep, io.BytesIO())


# ------------------------------------------------------------------------ hostile files
_F32x2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
_BASE = _checkpoint({"a": tk.arange(4), "b": tk.ones(2)})
_VALID = _checkpoint({"a": tk.arange(4)})


def _nested_list(depth: int) -> str:
    return '{"list":[' * depth + "]}" * depth


HOSTILE = {
    "empty file": (b"", "too short"),
    "cut in the length": (b"\x10\x00\x00", "too short"),
    "header past the end": (_raw({}, length=1000), "claims 1000 bytes but only 2 follow"),
    "header over the limit": (_raw({}, length=2**62), "more than the limit"),
    "truncated data": (_VALID[:-5], "out of range"),
    "truncated header": (_VALID[:40], "claims .* bytes but only 32 follow"),
    "invalid utf-8": (_raw(b'{"\xff\xfe": 1}'), "not valid UTF-8"),
    "invalid json": (_raw(b'{"a": '), "not valid JSON"),
    "NaN in json": (_raw(b'{"a": NaN}'), "NaN is not a JSON value"),
    "json nested too deep": (_raw(b"[" * 100_000), "not valid JSON"),
    "header not an object": (_raw(b"[1, 2]"), "must be a JSON object, got list"),
    "metadata not strings": (_raw({"__metadata__": {"k": 1}}), "__metadata__ must be"),
    "entry not an object": (_raw({"a": 5}), "tensor 'a': expected an object, got int"),
    "entry missing a key": (
        _raw({"a": {"dtype": "F32", "shape": [2]}}),
        r"missing keys \['data_offsets'\]",
    ),
    "entry extra key": (
        _raw({"a": {**_F32x2, "strides": [1]}}, bytes(8)),
        r"unexpected keys \['strides'\]",
    ),
    "unknown dtype": (
        _raw({"a": {**_F32x2, "dtype": "BF16", "data_offsets": [0, 4]}}, bytes(4)),
        "tensor 'a': unsupported dtype 'BF16'",
    ),
    "dtype not a string": (_raw({"a": {**_F32x2, "dtype": 7}}, bytes(8)), "dtype 7"),
    "shape not a list": (_raw({"a": {**_F32x2, "shape": "2"}}, bytes(8)), "shape must be"),
    "negative dimension": (_raw({"a": {**_F32x2, "shape": [-2]}}, bytes(8)), "shape must"),
    "bool dimension": (_raw({"a": {**_F32x2, "shape": [True]}}, bytes(8)), "shape must"),
    "float offsets": (
        _raw({"a": {**_F32x2, "data_offsets": [0.0, 8.0]}}, bytes(8)),
        "data_offsets must be",
    ),
    "three offsets": (
        _raw({"a": {**_F32x2, "data_offsets": [0, 4, 8]}}, bytes(8)),
        "data_offsets must be",
    ),
    "2**60-byte tensor": (
        _raw({"a": {"dtype": "F64", "shape": [2**57], "data_offsets": [0, 2**60]}}, bytes(8)),
        r"data_offsets \[0, 1152921504606846976\] are out of range: the data section holds 8",
    ),
    "huge shape, small offsets": (
        _raw({"a": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 8]}}, b"0" * 8),
        r"shape \[1099511627776, 1099511627776\] of F32 is too large for any array",
    ),
    "reversed offsets": (
        _raw({"a": {**_F32x2, "data_offsets": [8, 0]}}, bytes(8)),
        "out of range",
    ),
    "shape and size disagree": (
        _raw({"a": {**_F32x2, "shape": [3]}}, bytes(8)),
        r"shape \[3\] of F32 needs 12 bytes but data_offsets \[0, 8\] hold 8",
    ),
    "overlapping offsets": (
        _raw({"a": _F32x2, "b": {**_F32x2, "data_offsets": [4, 12]}}, bytes(12)),
        "tensor 'b' .* overlaps tensor 'a'",
    ),
    "gap between tensors": (
        _raw({"a": _F32x2, "b": {**_F32x2, "data_offsets": [12, 20]}}, bytes(20)),
        "bytes 8..12 of the data section, before tensor 'b', belong to no tensor",
    ),
    "trailing bytes": (_raw({"a": _F32x2}, bytes(12)), "bytes 8..12 .* belong to no tensor"),
    "duplicated names": (
        _raw(b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "a": {}}', b"x"),
        "duplicated key 'a'",
    ),
    "bool byte not 0 or 1": (
        _raw({"a": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x02"),
        "bool tensor 'a' holds bytes other than 0, 1",
    ),
    "unknown format version": (_set_meta(_BASE, FORMAT, "3"), "format '3' is not one"),
    "format key damaged": (
        _set_meta(_BASE, FORMAT, None),
        "has tensorkit metadata .* but no 'tensorkit.format': the file is corrupt",
    ),
    "header checksum missing": (_set_meta(_BASE, HEADER, None), "has no 'tensorkit.header'"),
    "header checksum wrong": (
        _set_meta(_BASE, HEADER, "0" * 64),
        r"the header does not match its SHA-256 checksum \(tensorkit.header\)",
    ),
    "format 1 with a header checksum": (
        _set_meta(_BASE, FORMAT, "1"),
        "a format 1 checkpoint has no 'tensorkit.header'",
    ),
    "zero-size tensor of huge dimensions": (
        _raw({"a": {"dtype": "F32", "shape": [0, 2**40, 2**40], "data_offsets": [0, 0]}}),
        r"tensor 'a': shape \[0, 1099511627776, 1099511627776\] of F32 is too large for any",
    ),
    "structure missing": (_set_meta(_BASE, STRUCTURE, None), "has no 'tensorkit.structure'"),
    "structure not json": (_set_meta(_BASE, STRUCTURE, "{"), "tensorkit.structure is not valid"),
    "structure refers to an absent tensor": (
        _set_meta(_BASE, STRUCTURE, '{"list":[{"tensor":"a"},{"tensor":"b"},{"tensor":"zz"}]}'),
        r"tensorkit.structure at obj\[2\]: tensor 'zz' is not in the file",
    ),
    "structure leaves a tensor out": (
        _set_meta(_BASE, STRUCTURE, '{"list":[{"tensor":"a"}]}'),
        r"does not use tensors \['b'\]",
    ),
    "structure unknown node": (
        _set_meta(_BASE, STRUCTURE, '{"dict":[["k",{"frozenset":[]}]]}'),
        r"at obj\['k'\]: expected a value or a one-key object",
    ),
    "structure bad float": (_set_meta(_BASE, STRUCTURE, '{"float":"abc"}'), "bad float 'abc'"),
    "structure bad pair": (_set_meta(_BASE, STRUCTURE, '{"dict":[[1]]}'), "key, value] pairs"),
    "structure repeated key": (
        _set_meta(_BASE, STRUCTURE, '{"dict":[["a",{"tensor":"a"}],["a",{"tensor":"b"}]]}'),
        "duplicated dict key 'a'",
    ),
    "structure list as key": (
        _set_meta(_BASE, STRUCTURE, '{"dict":[[[1],2]]}'),
        r"bad dict key or set item \[1\]: keys must be str, bytes, int, float, complex",
    ),
    "structure list in a set": (
        _set_meta(_BASE, STRUCTURE, '{"set":[[1]]}'),
        r"at obj: bad dict key or set item \[1\]",
    ),
    "structure bad bytes": (_set_meta(_BASE, STRUCTURE, '{"bytes":"zz"}'), "bad bytes 'zz'"),
    "structure bad complex": (
        _set_meta(_BASE, STRUCTURE, '{"complex":["1.0","x"]}'),
        "bad float 'x'",
    ),
    "structure unknown dtype": (
        _set_meta(_BASE, STRUCTURE, '{"dtype":"float128"}'),
        "expected a value or a one-key object",
    ),
    "structure bad device": (
        _set_meta(_BASE, STRUCTURE, '{"device":"tpu:0"}'),
        "expected a value or a one-key object",
    ),
    "structure bad size": (
        _set_meta(_BASE, STRUCTURE, '{"size":[1.5]}'),
        "expected a value or a one-key object",
    ),
    "structure too deep": (_set_meta(_BASE, STRUCTURE, _nested_list(300)), "nested deeper"),
    "checksum missing": (
        _set_meta(_BASE, CHECKSUMS, json.dumps({"a": _meta(_BASE, CHECKSUMS)["a"]})),
        r"tensorkit.checksums must list exactly the tensors in the file: missing \['b'\]",
    ),
    "checksum not hex": (
        _set_meta(_BASE, CHECKSUMS, json.dumps({**_meta(_BASE, CHECKSUMS), "b": "xyz"})),
        r"tensorkit.checksums\['b'\] must be a SHA-256",
    ),
    "infos not an object": (_set_meta(_BASE, TENSORS, "[]"), "tensorkit.tensors must be a JSON"),
    "bad device": (
        _set_meta(
            _BASE,
            TENSORS,
            json.dumps(
                {**_meta(_BASE, TENSORS), "b": {**_meta(_BASE, TENSORS)["b"], "device": "tpu:0"}}
            ),
        ),
        r"tensorkit.tensors\['b'\]: bad device 'tpu:0'",
    ),
    "integer requires grad": (
        _set_meta(
            _BASE,
            TENSORS,
            json.dumps(
                {
                    **_meta(_BASE, TENSORS),
                    "a": {**_meta(_BASE, TENSORS)["a"], "requires_grad": True},
                }
            ),
        ),
        "int64 tensors cannot require grad",
    ),
    "complex flag on integers": (
        _set_meta(
            _BASE,
            TENSORS,
            json.dumps(
                {**_meta(_BASE, TENSORS), "a": {**_meta(_BASE, TENSORS)["a"], "complex": True}}
            ),
        ),
        "a complex tensor is stored as floats with a last dimension of 2",
    ),
}


@pytest.mark.parametrize(("blob", "message"), HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_files_raise_checkpoint_error_and_stay_small(blob: bytes, message: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match=message) as caught:
            load(io.BytesIO(blob))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(caught.value, ValueError)
    assert "<BytesIO>" in str(caught.value)
    assert peak < 4 * 2**20, f"loading a {len(blob)}-byte hostile file took {peak} bytes"


def test_a_bad_structure_is_caught_before_any_data_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_reading(*args: Any) -> None:
        raise AssertionError("tensor data was read")

    monkeypatch.setattr(serialization, "read_data", no_reading)
    cases = [blob for name, (blob, _) in HOSTILE.items() if name.startswith("structure")]
    assert len(cases) >= 8
    for blob in cases:
        with pytest.raises(CheckpointError):
            load(io.BytesIO(blob))


def test_hostile_file_on_disk_claiming_a_huge_tensor(tmp_path: Path) -> None:
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(HOSTILE["2**60-byte tensor"][0])
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match=re.escape(str(path)) + ": tensor 'a'"):
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


@pytest.mark.parametrize("position", [0.0, 0.5, 1.0 - 1e-9])
def test_flipped_bit_fails_the_checksum(position: float) -> None:
    blob = bytearray(_checkpoint({"weight": tk.randn(16, 16), "bias": tk.zeros(16)}))
    header, data = _split(bytes(blob))
    weight_begin, weight_end = header["weight"]["data_offsets"]
    data_start = len(blob) - len(data)
    index = data_start + weight_begin + int(position * (weight_end - weight_begin))
    blob[index] ^= 0x10
    with pytest.raises(CheckpointError, match="tensor 'weight' does not match its SHA-256"):
        load(io.BytesIO(bytes(blob)))


def _training_checkpoint() -> tuple[dict, bytes]:
    """A small model + optimizer + epoch checkpoint, after one Adam step."""
    tk.manual_seed(0)
    model = tk.nn.Linear(3, 2)
    optimizer = tk.optim.Adam(model.parameters(), lr=0.01)
    model(tk.randn(4, 3)).sum().backward()
    optimizer.step()
    obj = {"model": model.state_dict(), "optim": optimizer.state_dict(), "epoch": 7}
    return obj, _checkpoint(obj)


def _assert_same_content(loaded: Any, original: Any, path: str = "obj") -> None:
    """Equal types, keys in order, values, and tensors bit for bit (dtype, device, flags)."""
    assert type(loaded) is type(original), path
    if isinstance(original, tk.Tensor):
        _assert_same_tensor(loaded, original)
    elif isinstance(original, dict):
        assert list(loaded) == list(original), path
        assert [type(k) for k in loaded] == [type(k) for k in original], path
        for key in original:
            _assert_same_content(loaded[key], original[key], f"{path}[{key!r}]")
    elif isinstance(original, list | tuple):
        assert len(loaded) == len(original), path
        for index, (a, b) in enumerate(zip(loaded, original, strict=True)):
            _assert_same_content(a, b, f"{path}[{index}]")
    else:
        assert loaded == original, path


def test_every_bit_flip_is_caught_or_changes_nothing() -> None:
    original, blob = _training_checkpoint()
    assert _meta(blob, STRUCTURE) and json.loads(_split(blob)[0]["__metadata__"][FORMAT]) == 2
    _assert_same_content(load(io.BytesIO(blob)), original)
    flipped = bytearray(blob)
    outcomes: dict[str, int] = defaultdict(int)
    for index in range(len(blob)):
        for bit in range(8):
            flipped[index] ^= 1 << bit
            try:
                loaded = load(io.BytesIO(flipped))
            except CheckpointError as error:
                assert str(error).startswith("<BytesIO>: "), error  # names the file
                outcomes["refused"] += 1
            else:
                _assert_same_content(loaded, original, f"bit {bit} of byte {index}: obj")
                outcomes["identical"] += 1
            flipped[index] ^= 1 << bit
    assert outcomes["refused"] + outcomes["identical"] == 8 * len(blob)
    assert outcomes["refused"] > 0.99 * 8 * len(blob), dict(outcomes)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"tensorkit.format":"2"', '"tensorkit.formaT":"2"'),  # was taken for a foreign file
        ('{\\"float\\":\\"0.01\\"}', '{\\"float\\":\\"0.02\\"}'),  # the learning rate
        ('[\\"epoch\\",7]', '[\\"epoch\\",8]'),
        ('[\\"exp_avg\\",', '[\\"exp_avh\\",'),  # a key name
        ('"shape":[2,3]', '"shape":[3,2]'),  # a tensor's shape, same bytes
    ],
    ids=["format key", "learning rate", "epoch", "key name", "shape"],
)
def test_edited_metadata_fails_the_header_checksum(old: str, new: str) -> None:
    _, blob = _training_checkpoint()
    assert blob.count(old.encode()) >= 1, old
    edited = blob.replace(old.encode(), new.encode(), 1)
    message = "the header does not match its SHA-256 checksum|the header has tensorkit metadata"
    with pytest.raises(CheckpointError, match=f"^<BytesIO>: ({message})"):
        load(io.BytesIO(edited))


def test_header_checksum_is_sha256_of_the_sorted_header_without_it() -> None:
    _, blob = _training_checkpoint()
    header, _ = _split(blob)
    stored = header["__metadata__"].pop(HEADER)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert stored == hashlib.sha256(text.encode()).hexdigest()


def test_format_1_checkpoints_still_load() -> None:
    """Written by tensorkit before the header checksum (commit a54ab61), by this code:
    ``tk.manual_seed(0)``, Linear(3, 2), one Adam step, ``{"model", "optim", "epoch": 7}``."""
    path = DATA / "checkpoint_format1.safetensors"
    assert _meta(path.read_bytes(), FORMAT) == 1 and HEADER not in _split(path.read_bytes())[0]
    original, _ = _training_checkpoint()
    _assert_same_content(load(path), original)


def test_foreign_safetensors_with_other_metadata_loads_as_a_dict() -> None:
    blob = _raw({"__metadata__": {"format": "pt"}, "w": _F32x2}, np.ones(2, "<f4").tobytes())
    loaded = load(io.BytesIO(blob))
    assert list(loaded) == ["w"] and loaded["w"].tolist() == [1.0, 1.0]


def test_checksums_are_sha256_of_the_stored_bytes() -> None:
    blob = _checkpoint({"x": tk.arange(5, dtype=tk.int32)})
    expected = hashlib.sha256(np.arange(5, dtype="<i4").tobytes()).hexdigest()
    assert _meta(blob, CHECKSUMS) == {"x": expected}


# --------------------------------------------------------------------------- atomicity
@pytest.mark.parametrize("crash", [RuntimeError("simulated crash"), KeyboardInterrupt()])
def test_crash_mid_save_keeps_the_previous_checkpoint(
    crash: BaseException, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ckpt.safetensors"
    save({"w": tk.ones(3)}, path)
    real_write = _format.write_array
    written: list[int] = []

    def crash_on_second(stream: Any, array: np.ndarray) -> None:
        if written:
            raise crash
        written.append(array.nbytes)
        real_write(stream, array)

    monkeypatch.setattr(_format, "write_array", crash_on_second)
    with pytest.raises(type(crash)):
        save({"w": tk.zeros(3), "v": tk.zeros(1000)}, path)
    assert written, "the crash must come halfway through"
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    assert np.array_equal(load(path)["w"].numpy(), np.ones(3, np.float32))


def test_save_syncs_and_replaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(descriptor: int) -> None:
        synced.append(descriptor)
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    path = tmp_path / "ckpt.safetensors"
    save({"w": tk.ones(3)}, str(path))
    assert len(synced) == (2 if hasattr(os, "O_DIRECTORY") else 1)  # the file, the directory
    save({"w": tk.zeros(3)}, path)
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    assert np.array_equal(load(path)["w"].numpy(), np.zeros(3, np.float32))


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_a_new_checkpoint_gets_the_mode_of_the_users_other_files(
    tmp_path: Path, umask: int
) -> None:
    previous = os.umask(umask)
    try:
        save({"w": tk.ones(1)}, tmp_path / "ckpt.safetensors")
        (tmp_path / "other.txt").write_text("a file the user makes")
    finally:
        os.umask(previous)
    mode = stat.S_IMODE((tmp_path / "ckpt.safetensors").stat().st_mode)
    assert mode == stat.S_IMODE((tmp_path / "other.txt").stat().st_mode) == 0o666 & ~umask


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")
def test_save_keeps_permissions_and_follows_symlinks(tmp_path: Path) -> None:
    target = tmp_path / "real.safetensors"
    save({"w": tk.ones(1)}, target)
    target.chmod(0o640)
    link = tmp_path / "link.safetensors"
    link.symlink_to(target)
    save({"w": tk.zeros(1)}, link)
    assert link.is_symlink()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert np.array_equal(load(target)["w"].numpy(), [0.0])


# ------------------------------------------------------------------------- map_location
def _on_device(blob: bytes, saved: str) -> bytes:
    infos = _meta(blob, TENSORS)
    for info in infos.values():
        info["device"] = saved
    return _set_meta(blob, TENSORS, json.dumps(infos))


@pytest.mark.parametrize(
    "map_location",
    ["cpu", tk.device("cpu"), {"cpu": "cpu"}, lambda tensor, saved: None],
    ids=["str", "device", "dict", "callable-none"],
)
def test_map_location_to_cpu(map_location: Any) -> None:
    loaded = _roundtrip({"x": tk.ones(2)}, map_location=map_location)
    assert loaded["x"].device == tk.device("cpu")


def test_map_location_callable_sees_saved_device_and_may_return_a_tensor() -> None:
    calls: list[tuple[list, str]] = []

    def relocate(tensor: tk.Tensor, saved: str) -> tk.Tensor:
        calls.append((tensor.tolist(), saved))
        return tensor * 10

    loaded = _roundtrip({"x": tk.ones(2)}, map_location=relocate)
    assert calls == [([1.0, 1.0], "cpu")]
    assert loaded["x"].tolist() == [10.0, 10.0]


def test_unavailable_device_falls_back_to_cpu_with_a_warning() -> None:
    blob = _on_device(_checkpoint({"x": tk.ones(2), "y": tk.zeros(1)}), "cuda:99")
    with pytest.warns(UserWarning, match="saved on cuda:99, which is not available") as caught:
        loaded = load(io.BytesIO(blob))
    assert len(caught) == 1
    assert loaded["x"].device == tk.device("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load(io.BytesIO(blob), map_location={"cuda:99": "cpu"})
        assert loaded["y"].device == tk.device("cpu")


def test_bad_map_location_and_weights_only() -> None:
    blob = _checkpoint(tk.ones(1))
    with pytest.raises(TypeError):
        load(io.BytesIO(blob), map_location=3.5)
    with pytest.raises(TypeError, match="weights_only must be a bool"):
        load(io.BytesIO(blob), weights_only="yes")
    assert load(io.BytesIO(blob), weights_only=False).tolist() == [1.0]


@pytest.mark.cuda
def test_cuda_tensors_come_back_on_their_device() -> None:
    original = {"w": tk.randn(3, 4, device="cuda"), "c": tk.ones(2, dtype=tk.complex64).cuda()}
    blob = _checkpoint(original)
    loaded = load(io.BytesIO(blob))
    for name, tensor in original.items():
        _assert_same_tensor(loaded[name], tensor)
    on_cpu = load(io.BytesIO(blob), map_location="cpu")
    assert on_cpu["w"].device == tk.device("cpu")
    assert np.array_equal(on_cpu["w"].numpy(), original["w"].cpu().numpy())
    moved = load(io.BytesIO(_checkpoint({"x": tk.ones(2)})), map_location="cuda")
    assert moved["x"].device == tk.device("cuda:0")


# ---------------------------------------------------------------------------- hygiene
def test_the_module_never_names_code_loading_machinery() -> None:
    forbidden = re.compile(r"\b(pickle|cPickle|marshal|shelve|dill|eval|exec|__import__)\b")
    files = sorted(Path(serialization.__file__).parent.glob("*.py"))
    assert len(files) >= 4
    for file in files:
        match = forbidden.search(file.read_text(encoding="utf-8"))
        assert match is None, f"{file.name} mentions {match.group()}"


def test_checkpoint_error_is_exported() -> None:
    assert issubclass(CheckpointError, ValueError)
    assert serialization.CheckpointError is CheckpointError
