"""Tensors themselves: creation, dtypes and promotion, devices, conversion, printing, interop."""

from __future__ import annotations

import pickle
import re
import sys
import types

import numpy as np
import pytest

import tensorkit as tk
from tensorkit._backend import device as device_class

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


# ---------------------------------------------------------------------------- creation
def test_tensor_infers_pytorch_default_dtypes():
    assert tk.tensor([1.0, 2.0]).dtype is tk.float32
    assert tk.tensor([1, 2]).dtype is tk.int64
    assert tk.tensor([True]).dtype is tk.bool
    assert tk.tensor([1 + 2j]).dtype is tk.complex64
    assert tk.tensor(np.array([1.0])).dtype is tk.float64  # arrays keep their dtype
    tk.set_default_dtype(tk.float64)
    assert tk.tensor([1.0]).dtype is tk.float64
    assert tk.zeros(2).dtype is tk.float64


def test_tensor_copies_but_from_numpy_shares():
    array = np.array([1.0, 2.0])
    copied = tk.tensor(array)
    shared = tk.from_numpy(array)
    array[0] = 9.0
    assert copied[0].item() == 1.0
    assert shared[0].item() == 9.0
    assert shared.numpy() is array or np.shares_memory(shared.numpy(), array)


def test_as_tensor_avoids_copies():
    array = np.arange(3.0)
    assert np.shares_memory(tk.as_tensor(array).numpy(), array)
    t = tk.tensor([1.0])
    assert tk.as_tensor(t) is t


def test_filled_creation_functions():
    assert tk.zeros(2, 3).shape == (2, 3)
    assert tk.ones((2, 3)).tolist() == [[1, 1, 1], [1, 1, 1]]
    assert tk.full((2,), 7).dtype is tk.int64
    assert tk.full((2,), 7.0).tolist() == [7.0, 7.0]
    assert tk.empty(0).shape == (0,)
    assert tk.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    like = tk.zeros_like(tk.ones(2, dtype=tk.float64))
    assert like.dtype is tk.float64 and like.tolist() == [0, 0]
    assert tk.ones_like(tk.zeros(2)).tolist() == [1, 1]
    assert tk.full_like(tk.zeros(2), 3.5).tolist() == [3.5, 3.5]


def test_ranges_match_torch_semantics():
    assert tk.arange(5).dtype is tk.int64
    assert tk.arange(0, 1, 0.25).tolist() == [0, 0.25, 0.5, 0.75]
    assert tk.arange(0, 1, 0.25).dtype is tk.float32
    np.testing.assert_allclose(tk.linspace(0, 1, 5).numpy(), [0, 0.25, 0.5, 0.75, 1])
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tk.arange(0, 1, 0)


def test_random_is_reproducible_with_seeds():
    tk.manual_seed(3)
    a = tk.randn(4)
    tk.manual_seed(3)
    b = tk.randn(4)
    assert tk.equal(a, b)
    generator = tk.Generator().manual_seed(5)
    c = tk.rand(3, generator=generator)
    d = tk.rand(3, generator=tk.Generator().manual_seed(5))
    assert tk.equal(c, d)
    assert c.min().item() >= 0 and c.max().item() < 1
    perm = tk.randperm(10)
    assert sorted(perm.tolist()) == list(range(10)) and perm.dtype is tk.int64
    ints = tk.randint(3, 7, (100,))
    assert ints.min().item() >= 3 and ints.max().item() < 7
    state = tk.get_rng_state()
    first = tk.rand(2)
    tk.set_rng_state(state)
    assert tk.equal(first, tk.rand(2))


def test_normal_with_tensor_mean_broadcasts():
    out = tk.normal(tk.zeros(3, 1), tk.ones(1, 2))
    assert out.shape == (3, 2)


def test_negative_dimension_is_rejected():
    with pytest.raises(RuntimeError, match=r"negative dimension -1: \[2, -1\]"):
        tk.zeros(2, -1)


def test_size_overflow_is_rejected():
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        tk.zeros(2**40, 2**40)


def test_allocation_larger_than_memory_is_catchable():
    with pytest.raises(
        tk.OutOfMemoryError, match=r"tried to allocate \d+ bytes.*\[1099511627776\]"
    ):
        tk.ones(2**40)
    assert isinstance(tk.OutOfMemoryError("x"), RuntimeError)
    assert tk.ones(2).sum().item() == 2  # the process carries on


def test_bad_size_argument_type():
    with pytest.raises(TypeError, match=r"must be a tuple of ints.*float"):
        tk.zeros(2.5)


# ------------------------------------------------------------------- dtypes, promotion
@pytest.mark.parametrize("a", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("b", ALL_DTYPES, ids=str)
def test_promote_types_matches_torch(a, b):
    torch = pytest.importorskip("torch")
    expected = torch.promote_types(getattr(torch, a.name), getattr(torch, b.name))
    assert tk.promote_types(a, b).name == str(expected).removeprefix("torch.")


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (tk.tensor([1, 2]), 2.5, tk.float32),
        (tk.tensor([1, 2], dtype=tk.int32), tk.tensor(1.0, dtype=tk.float64), tk.float64),
        (tk.tensor([1.0], dtype=tk.float16), tk.tensor(1.0, dtype=tk.float64), tk.float16),
        (tk.tensor([1.0], dtype=tk.float16), 3, tk.float16),
        (tk.tensor([True]), 1, tk.int64),
        (tk.tensor([1.0]), tk.tensor([1.0], dtype=tk.float64), tk.float64),
        (tk.tensor([1.0]), 1j, tk.complex64),
        (tk.tensor([1], dtype=tk.uint8), tk.tensor([1], dtype=tk.int8), tk.int16),
    ],
)
def test_result_type_and_op_dtype(left, right, expected):
    assert tk.result_type(left, right) is expected
    assert (left + right).dtype is expected


def test_numpy_scalars_and_arrays_are_operands_as_in_torch():
    """A NumPy scalar is a (weak) Python number and an array is a tensor, on either side."""
    x = tk.tensor([1.0, 2.0])
    assert (x + np.float64(2.0)).dtype is tk.float32
    assert (tk.tensor([1, 2]) * np.int64(2)).tolist() == [2, 4]
    left = np.float64(2.0) * x
    assert isinstance(left, tk.Tensor) and left.dtype is tk.float32
    assert (x + np.ones(2)).dtype is tk.float64


def test_float_functions_of_integers_give_default_float():
    assert tk.tensor([1, 2]).exp().dtype is tk.float32
    assert (tk.tensor([1, 2]) / 2).dtype is tk.float32
    assert (tk.tensor([1, 2]) // 2).dtype is tk.int64


def test_can_cast_follows_torch():
    assert tk.can_cast(tk.int64, tk.float32)
    assert not tk.can_cast(tk.float32, tk.int64)
    assert not tk.can_cast(tk.complex64, tk.float64)
    assert not tk.can_cast(tk.int8, tk.bool)


def test_set_default_dtype_rejects_non_float():
    with pytest.raises(TypeError, match="floating-point types"):
        tk.set_default_dtype(tk.int64)


# ------------------------------------------------------------------------- devices
def test_devices_parse_and_intern():
    assert tk.device("cpu") is tk.device("cpu")
    assert str(tk.device("cpu")) == "cpu"
    assert repr(tk.device("cpu")) == "device(type='cpu')"
    assert tk.zeros(1).device == "cpu"
    with pytest.raises(RuntimeError, match=r"Expected one of cpu, cuda device type.*tpu"):
        tk.device("tpu")


def _stand_in_cuda_device():
    """A test-only stand-in: a device named cuda:7 whose arrays are NumPy arrays."""
    stand_in = object.__new__(device_class)
    stand_in.type, stand_in.index = "cuda", 7
    stand_in.xp, stand_in.array_type = np, np.ndarray
    return stand_in


def test_mixing_devices_names_both():
    from tensorkit.tensor import wrap

    other = wrap(np.ones(2, np.float32), _stand_in_cuda_device())
    with pytest.raises(RuntimeError, match=r"same device.*cpu and cuda:7.*add"):
        tk.ones(2) + other
    with pytest.raises(RuntimeError, match=r"same device.*cuda:7 and cpu.*mul"):
        other * tk.ones(2)


def test_cuda_is_unavailable_without_gpu_and_never_crashes(monkeypatch):
    broken = types.ModuleType("cupy")

    class CUDARuntimeError(RuntimeError):
        pass

    def failing_count():
        raise CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")

    broken.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=failing_count))
    monkeypatch.setitem(sys.modules, "cupy", broken)
    assert tk.cuda.is_available() is False
    assert tk.cuda.device_count() == 0


def test_cuda_tensor_request_without_gpu_is_a_clear_error(monkeypatch):
    if tk.cuda.is_available():
        pytest.skip("a GPU is present")
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    with pytest.raises(RuntimeError, match=r"CUDA tensors need CuPy.*pip install"):
        tk.zeros(2, device="cuda")


# ----------------------------------------------------------------------- conversion
def test_to_casts_and_keeps_identity_when_nothing_changes():
    x = tk.tensor([1.5, 2.5])
    assert x.to(tk.float32) is x
    assert x.to("cpu") is x
    assert x.to(tk.int64).tolist() == [1, 2]
    assert x.double().dtype is tk.float64
    assert x.to(tk.zeros(1, dtype=tk.float16)).dtype is tk.float16


def test_cast_is_differentiable():
    x = tk.tensor([1.5], requires_grad=True)
    x.double().sum().backward()
    assert x.grad.dtype is tk.float32 and x.grad.item() == 1


def test_numpy_refuses_tensors_that_require_grad():
    x = tk.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"requires grad.*detach\(\)\.numpy\(\)"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0]


def test_item_and_scalar_conversions():
    assert tk.tensor([3.5]).item() == 3.5
    assert int(tk.tensor(7)) == 7
    assert float(tk.tensor(2)) == 2.0
    assert [10, 20, 30][tk.tensor(1)] == 20
    with pytest.raises(
        RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"
    ):
        tk.tensor([1.0, 2.0]).item()
    for convert in (int, float, complex):  # PyTorch's Python number protocols: ValueError
        with pytest.raises(ValueError, match="only one element tensors can be converted"):
            convert(tk.tensor([1, 2]))
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        int(tk.tensor([]))


def test_bool_len_iter():
    assert bool(tk.tensor([1.0]))
    with pytest.raises(
        RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"
    ):
        bool(tk.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(tk.tensor([]))
    assert len(tk.zeros(4, 2)) == 4
    rows = list(tk.arange(6).reshape(3, 2))
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(tk.tensor(1.0))


def test_array_protocol_and_dlpack_with_numpy():
    x = tk.arange(4.0)
    assert np.asarray(x).tolist() == [0, 1, 2, 3]
    back = np.from_dlpack(x)
    assert np.shares_memory(back, x.numpy())
    y = tk.from_dlpack(np.arange(3.0))
    assert y.tolist() == [0, 1, 2]


def test_dlpack_with_torch_is_zero_copy():
    torch = pytest.importorskip("torch")
    x = tk.arange(4.0)
    t = torch.from_dlpack(x)
    t[0] = 42
    assert x[0].item() == 42
    y = tk.from_dlpack(torch.ones(2, 3))
    assert y.shape == (2, 3) and y.dtype is tk.float32


def test_pickle_round_trip():
    x = tk.tensor([[1.0, 2.0]], requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == [[1.0, 2.0]] and y.requires_grad


# ---------------------------------------------------------------------------- printing
@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: tk.tensor([1.0, 2.0]), "tensor([1., 2.])"),
        (lambda: tk.tensor([1.5, 2.25]), "tensor([1.5000, 2.2500])"),
        (lambda: tk.tensor([1, 2]), "tensor([1, 2])"),
        (lambda: tk.tensor([True, False]), "tensor([ True, False])"),
        (lambda: tk.tensor(3.0, dtype=tk.float64), "tensor(3., dtype=tensorkit.float64)"),
        (lambda: tk.tensor([1.0], requires_grad=True), "tensor([1.], requires_grad=True)"),
        (lambda: tk.zeros(0, 2), "tensor([], size=(0, 2))"),
    ],
)
def test_repr_like_pytorch(make, expected):
    assert repr(make()) == expected


def test_repr_of_graph_tensor_and_large_tensor():
    x = tk.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    big = repr(tk.arange(5000.0))
    assert "..." in big and len(big) < 200


def test_size_and_shape_helpers():
    x = tk.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and repr(x.shape) == "tensorkit.Size([2, 3, 4])"
    assert x.size(-1) == 4 and x.dim() == 3 and x.numel() == 24
    assert x.stride() == (12, 4, 1)
    assert x.transpose(0, 2).is_contiguous() is False
    with pytest.raises(
        IndexError,
        match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)",
    ):
        x.size(3)


def test_array_namespace_versions_and_to_device():
    x = tk.ones(2)
    assert x.__array_namespace__() is tk.array_api
    assert x.__array_namespace__(api_version="2023.12") is tk.array_api
    with pytest.raises(ValueError, match=r"2024\.12.*not '2019\.01'"):
        x.__array_namespace__(api_version="2019.01")
    assert x.to_device("cpu") is x


def test_python_floats_convert_once_to_the_requested_dtype():
    assert tk.tensor([0.1], dtype=tk.float64).item() == 0.1
    assert tk.as_tensor([0.1], dtype=tk.float64).item() == 0.1


def test_multinomial_samples():
    weights = tk.tensor([[0.0, 1.0, 3.0, 0.0], [2.0, 0.0, 0.0, 2.0]])
    draws = tk.multinomial(weights, 50, replacement=True, generator=tk.Generator().manual_seed(1))
    assert draws.shape == (2, 50) and draws.dtype is tk.int64
    assert set(draws[0].tolist()) <= {1, 2} and set(draws[1].tolist()) <= {0, 3}
    unique = tk.multinomial(tk.ones(6), 6)
    assert sorted(unique.tolist()) == list(range(6))
    again = tk.multinomial(weights, 50, True, generator=tk.Generator().manual_seed(1))
    assert tk.equal(again, draws)


MULTINOMIAL_MISUSES = [
    ([1.0, float("nan")], 1, "contains either `inf`, `nan` or element < 0"),
    ([1.0, -1.0], 1, "contains either `inf`, `nan` or element < 0"),
    ([[[1.0]]], 1, "prob_dist must be 1 or 2 dim"),
    ([1.0, 1.0], 0, "cannot sample n_sample <= 0 samples"),
    ([1, 2], 1, "multinomial only supports floating-point dtypes"),
    ([0.0, 0.0], 1, r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
    ([1.0, 1.0], 3, "cannot sample n_sample > prob_dist.size\\(-1\\) samples without replacement"),
]


@pytest.mark.parametrize(("values", "count", "message"), MULTINOMIAL_MISUSES)
def test_multinomial_misuse_raises_as_torch(values, count, message):
    with pytest.raises(RuntimeError, match=message):
        tk.multinomial(tk.tensor(values), count)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=message):
        torch.multinomial(torch.tensor(values), count)


def test_random_fills_the_dtype_range():
    tk.manual_seed(0)
    assert tk.zeros(64, dtype=tk.int64).random_().max().item() > 2**53
    floats = tk.zeros(64).random_()
    assert floats.max().item() < 2**24 and bool((floats == floats.round()).all())
    assert set(tk.zeros(64, dtype=tk.bool).random_().tolist()) == {True, False}
    assert tk.zeros(100, dtype=tk.int64).random_(3).max().item() <= 2


def test_matmul_shape_errors_use_pytorchs_words():
    with pytest.raises(
        RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(14x3 and 4x5\)"
    ):
        tk.randn(2, 7, 3) @ tk.randn(4, 5)
    with pytest.raises(RuntimeError, match=r"batch2 tensor to be: \[2, 3\] but got: \[2, 4\]"):
        tk.randn(7, 3) @ tk.randn(2, 4, 5)
    with pytest.raises(RuntimeError, match=r"inconsistent tensor size, expected tensor \[3\]"):
        tk.randn(3) @ tk.randn(4)
    assert (tk.ones(3) @ tk.ones(3)).item() == 3


def test_to_accepts_none_for_the_device():
    assert tk.randn(2).to(None, tk.float64).dtype is tk.float64


@pytest.mark.torch
@pytest.mark.parametrize(
    ("source", "target"),
    [("float32", "int32"), ("float32", "float16"), ("float32", "uint8"), ("int16", "float64")],
)
def test_view_dtype_reinterprets_the_bytes_as_torch_does(source, target):
    torch = pytest.importorskip("torch")
    data = np.arange(1, 9, dtype=source).reshape(2, 4)
    ours = tk.tensor(data).view(getattr(tk, target))
    theirs = torch.tensor(data).view(getattr(torch, target))
    assert ours.dtype == getattr(tk, target)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_view_dtype_shares_storage_and_is_not_differentiable():
    x = tk.tensor([1.0, 2.0], requires_grad=True)
    bits = x.view(tk.int32)
    assert not bits.requires_grad and bits.grad_fn is None
    base = tk.tensor([1.0, 2.0])
    base.view(tk.int32)[0] = 0
    assert base.tolist() == [0.0, 2.0] and base._version == 1


@pytest.mark.parametrize(
    ("make", "target", "message"),
    [
        (lambda: tk.tensor(1.0), tk.float64, "self.dim() cannot be 0 to view Float as Double"),
        (lambda: tk.ones(3), tk.float64, "self.size(-1) must be divisible by 2 to view Float as"),
        (
            lambda: tk.ones(2, 4)[:, ::2],
            tk.int16,
            "self.stride(-1) must be 1 to view Float as Short (different element sizes), but got 2",
        ),
    ],
)
def test_view_dtype_errors_name_the_rule(make, target, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        make().view(target)


def test_comparing_with_none_is_a_bool_as_in_torch():
    x = tk.ones(2)
    assert (x == None) is False and (x != None) is True  # noqa: E711
    assert x in [None, x] and x not in [None]


def test_broadcast_shapes_is_a_size():
    shape = tk.broadcast_shapes((2, 1), (3,))
    assert isinstance(shape, tk.Size) and shape == (2, 3)


def test_unsigned_bounds_wrap_negative_ints_as_pytorch():
    """-1 beside a uint8 tensor is 255 (PyTorch accepts negatives down to -255 there)."""
    x = tk.tensor([1, 2], dtype=tk.uint8)
    assert tk.clamp(x, min=-1).tolist() == [255, 255]
    assert tk.where(tk.tensor([True, False]), x, -56).tolist() == [1, 200]
    assert tk.clamp(tk.tensor([1], dtype=tk.int8), -128, 127).tolist() == [1]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_is_signed_and_legacy_type_names_match_torch(dtype):
    torch = pytest.importorskip("torch")
    x = tk.zeros(2, dtype=dtype)
    reference = torch.zeros(2, dtype=getattr(torch, dtype.name))
    assert x.is_signed() == reference.is_signed()
    assert x.type() == reference.type().replace("torch.", "tensorkit.")
    assert x.type(reference.type()).dtype == dtype


def test_type_casts_to_a_dtype_or_returns_self():
    x = tk.ones(2)
    assert x.type(tk.float32) is x
    assert x.type(tk.int64).dtype == tk.int64
    assert x.type("tensorkit.DoubleTensor").dtype == tk.float64
    with pytest.raises(ValueError, match=r"invalid type: 'torch.NotATensor'"):
        x.type("torch.NotATensor")


def test_tensor_queries():
    x = tk.arange(12.0).reshape(3, 4)
    assert x.ndimension() == 2 and x.get_device() == -1
    assert x.is_same_size(tk.zeros(3, 4)) and not x.is_same_size(tk.zeros(4, 3))
    assert x.storage_offset() == 0 and x[1].storage_offset() == 4
    assert x[:, 1:][2].storage_offset() == 9 and x.narrow(1, 2, 2).storage_offset() == 2
    assert not x.is_conj() and not x.is_neg()
    assert x.resolve_conj() is x and x.resolve_neg() is x


def test_is_nonzero_needs_one_element():
    assert tk.tensor([2.0]).is_nonzero() and not tk.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value"):
        tk.ones(2).is_nonzero()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        tk.ones(0).is_nonzero()


def test_in_place_ops_on_empty_tensors():
    # NumPy may give an empty array zero strides; there is nothing to write, so no overlap.
    x = tk.ones(0, 3).clone()
    x.neg_().floor_()
    assert x.shape == (0, 3)
    with pytest.raises(RuntimeError, match="refers to a single memory location"):
        tk.ones(3, 1).expand(3, 2).neg_()
