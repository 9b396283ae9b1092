"""The Tensor: an ndarray on a device plus what autograd needs to know about it.

Operations and most methods live in ``tensorkit.ops`` and are installed on the class by
``tensorkit.ops.install_methods``; this module holds the state and the few methods that are
about the tensor itself (grad flags, hooks, device moves, conversion, printing).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import _state
from ._backend import cpu, device, to_device_array
from ._dtype import dtype, from_numpy_dtype


class VersionCounter:
    """Counts in-place changes of a storage; views share their base's counter.

    ``last_op`` and ``last_site`` name the most recent in-place op, for error messages.
    """

    __slots__ = ("last_op", "last_site", "value")

    def __init__(self) -> None:
        self.value = 0
        self.last_op: str | None = None
        self.last_site: str | None = None


_ARRAY_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


class Tensor:
    """A multi-dimensional array on a device, with an optional gradient history.

    Build tensors with ``tk.tensor``, ``tk.zeros`` and friends rather than this constructor.
    """

    # Attributes every op touches live in slots (the version counter too: every recorded op
    # that saves its output makes one); the rarely set ones default at class level (and land
    # in the instance dict only when set), so making a tensor sets six fields.
    __slots__ = (
        "__dict__",
        "__weakref__",
        "_data",
        "_device",
        "_requires_grad",
        "_version_counter",
        "grad",
        "grad_fn",
    )

    _output_nr = 0
    _base: Tensor | None = None
    _view_fn: Any = None
    _grad_accumulator: Any = None
    _retains_grad = False
    _leaf_hooks: dict | None = None
    _post_accumulate_hooks: dict | None = None
    _is_inference = False
    _is_parameter = False  # True on nn.Parameter: the core tells one without importing nn
    # NumPy defers ``np.float64(2.0) * t`` to ``t.__rmul__`` (a Tensor, as in PyTorch).
    __array_priority__ = 1000

    _data: Any
    _device: device
    _requires_grad: bool
    _version_counter: VersionCounter | None
    grad: Tensor | None
    grad_fn: Any

    def __init__(self, data: Any, requires_grad: bool = False) -> None:
        from .ops.creation import tensor as make_tensor

        made = make_tensor(data, requires_grad=requires_grad)
        init_tensor(self, made._data, made._device)
        self._requires_grad = requires_grad

    # ----------------------------------------------------------------- basic properties
    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's storage, detached from the graph."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._device = value._device

    @property
    def dtype(self) -> dtype:
        return from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        return self._device

    @property
    def shape(self) -> tuple[int, ...]:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[normalize_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def nelement(self) -> int:
        return int(self._data.size)

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def is_nonzero(self) -> bool:
        n = self._data.size
        if n != 1:
            what = "no values" if n == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
        return bool(self._scalar() != 0)

    def is_same_size(self, other: Tensor) -> bool:
        return self.shape == other.shape

    def get_device(self) -> int:
        """The device index, -1 on the CPU."""
        return -1 if self._device.type == "cpu" else int(self._device.index or 0)

    def ndimension(self) -> int:
        return self._data.ndim

    def storage_offset(self) -> int:
        """Elements from the start of the base tensor's storage to this tensor's first one."""
        base = self
        while base._base is not None:
            base = base._base
        return (self.data_ptr() - base.data_ptr()) // self._data.itemsize

    def is_conj(self) -> bool:
        return False  # tensorkit conjugates eagerly: there is no lazy conjugate bit

    def is_neg(self) -> bool:
        return False

    def resolve_conj(self) -> Tensor:
        return self

    def resolve_neg(self) -> Tensor:
        return self

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """The legacy type name (``'tensorkit.FloatTensor'``) or a cast to ``dtype``."""
        from ._dtype import SCALAR_TYPE_NAMES

        names = {f"{scalar}Tensor": name for name, scalar in SCALAR_TYPE_NAMES.items()}
        if dtype is None:
            prefix = "tensorkit." if self._device.type == "cpu" else "tensorkit.cuda."
            return f"{prefix}{SCALAR_TYPE_NAMES[self.dtype.name]}Tensor"
        if isinstance(dtype, str):
            module, _, scalar = dtype.rpartition(".")
            if scalar not in names or module.split(".")[-1] == "cuda":
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = from_numpy_dtype(np.dtype(names[scalar]))
        return self if dtype == self.dtype else self.to(dtype)

    def is_contiguous(self) -> bool:
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim: int | None = None) -> Any:
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[normalize_dim(dim, self._data.ndim)]

    def data_ptr(self) -> int:
        if self._device.type == "cpu":
            return int(self._data.__array_interface__["data"][0])
        return int(self._data.data.ptr)

    def is_inference(self) -> bool:
        """Whether this tensor was made in ``inference_mode`` (or is a view of one)."""
        return self._is_inference

    # ------------------------------------------------------------------------ autograd
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether autograd records operations on this leaf tensor (in place)."""
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to "
                    "use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach()."
                )
            return self
        if requires_grad and self._data.dtype.kind not in "fc":
            raise RuntimeError(
                f"only Tensors of floating point and complex dtype can require gradients, "
                f"got a tensor of dtype {self.dtype} and shape {list(self._data.shape)}"
            )
        if requires_grad and self._is_inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed."
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded op (their .grad gets accumulated)."""
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def _version(self) -> int:
        counter = self._version_counter
        return 0 if counter is None else counter.value

    def version_counter(self) -> VersionCounter:
        """This tensor's (possibly shared) version counter, made on first use."""
        counter = self._version_counter
        if counter is None:
            counter = self._version_counter = VersionCounter()
        return counter

    def bump_version(self, op_name: str, site: str | None = None) -> None:
        counter = self.version_counter()
        counter.value += 1
        counter.last_op = op_name
        counter.last_site = site

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Compute the gradient of this tensor w.r.t. graph leaves, accumulating into .grad."""
        from .autograd.engine import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._leaf_hooks is None:
                self._leaf_hooks = {}
            return RemovableHandle(self._leaf_hooks, hook)
        return self.grad_fn.register_tensor_pre_hook(self._output_nr, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call ``hook(tensor)`` on this leaf once backward has accumulated its ``.grad`` (an
        optimizer step per parameter, as gradients arrive)."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = {}
        return RemovableHandle(self._post_accumulate_hooks, hook)

    def retain_grad(self) -> None:
        """Keep .grad for this non-leaf tensor after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self_ref = weakref.ref(self)

        def store_grad(grad: Tensor) -> None:
            tensor = self_ref()
            if tensor is None:
                return
            if tensor.grad is None:
                tensor.grad = grad.detach() if not grad.requires_grad else grad
            else:
                tensor.grad = tensor.grad + grad

        self.grad_fn.register_retain_grad_hook(self._output_nr, store_grad)

    def detach(self) -> Tensor:
        """A new tensor on the same storage (and version counter), outside the graph."""
        out = wrap(self._data, self._device)
        out._version_counter = self.version_counter()
        return out

    def detach_(self) -> Tensor:
        if self._base is not None and self._view_fn is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. This view was created by "
                "an op that returns a view of a tensor that requires grad."
            )
        self.grad_fn = None
        self._requires_grad = False
        return self

    # ------------------------------------------------------------------ devices, dtypes
    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(other_tensor)``."""
        from .ops.conversion import to

        return to(self, *args, **kwargs)

    def cpu(self) -> Tensor:
        return self.to(cpu)

    def cuda(self, device_index: int | str | device | None = None) -> Tensor:
        if device_index is None:
            target = device("cuda")
        elif isinstance(device_index, int):
            target = device("cuda", device_index)
        else:
            target = device(device_index)
        return self.to(target)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array; on the CPU it shares memory with this tensor."""
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self._device.type != "cpu":
            if not force:
                raise TypeError(
                    f"can't convert {self._device} device type tensor to numpy. Use "
                    "Tensor.cpu() to copy the tensor to host memory first."
                )
            return to_device_array(self._data, cpu)
        if _state.tracer is not None:
            _state.tracer.value_read(self, "numpy()")
        return self._data

    def item(self) -> Any:
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        value = self._data.reshape(()).item()
        if _state.tracer is not None:
            _state.tracer.value_read(self, "item()", value)
        return value

    def tolist(self) -> Any:
        value = to_device_array(self._data, cpu).tolist()
        if _state.tracer is not None:
            _state.tracer.value_read(self, "tolist()", value)
        return value

    # ---------------------------------------------------------------- Python protocols
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            amount = "more than one value" if self._data.size else "no values"
            raise RuntimeError(f"Boolean value of Tensor with {amount} is ambiguous")
        value = bool(self._data.reshape(()).item())
        if _state.tracer is not None:
            _state.tracer.value_read(self, "__bool__()", value)
        return value

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def _scalar(self) -> Any:
        """The one element, for the Python number protocols (PyTorch's ValueError otherwise)."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        value = self._data.reshape(()).item()
        if _state.tracer is not None:
            _state.tracer.value_read(self, "__float__() / __int__()", value)
        return value

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        array = to_device_array(self._data, cpu)
        if dtype is not None and array.dtype != dtype:
            return array.astype(dtype)
        if copy:
            return array.copy()
        return array

    def __dlpack__(
        self,
        /,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[Any, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of the data, with the array API's keywords (the array module
        raises BufferError for a device or a no-copy export it cannot give)."""
        if self._requires_grad:
            raise RuntimeError(
                "Can't export a Tensor that requires grad through DLPack; use "
                "tensor.detach().__dlpack__() instead."
            )
        keywords = {"stream": stream, "max_version": max_version, "dl_device": dl_device}
        keywords["copy"] = copy
        given = {name: value for name, value in keywords.items() if value is not None}
        return self._data.__dlpack__(**given)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._data.__dlpack_device__()

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        from . import array_api

        if api_version is not None and api_version not in _ARRAY_API_VERSIONS:
            raise ValueError(
                f"tensorkit implements array API version {array_api.__array_api_version__} "
                f"(and the earlier {', '.join(_ARRAY_API_VERSIONS[:-1])}), not {api_version!r}"
            )
        return array_api

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """The array API's spelling of ``to(device)``."""
        return self.to(device)

    def __repr__(self) -> str:
        from ._repr import tensor_repr

        return tensor_repr(self)

    def __reduce_ex__(self, protocol: Any) -> tuple:
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) can be pickled; "
                "call .detach() first."
            )
        host = to_device_array(self._data, cpu)
        return (_rebuild_tensor, (host, str(self._device), self._requires_grad))

    def __deepcopy__(self, memo: dict) -> Tensor:
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment."
            )
        copied = wrap(self._data.copy(), self._device)
        copied._requires_grad = self._requires_grad
        if self.grad is not None:
            copied.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = copied
        return copied


class Size(tuple):
    """A tensor's shape: a tuple of ints with a PyTorch-style repr."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"tensorkit.Size({list(self)})"

    def numel(self) -> int:
        total = 1
        for n in self:
            total *= n
        return total


class RemovableHandle:
    """Returned by hook registration; ``handle.remove()`` takes the hook out again."""

    _next_id = 0

    def __init__(self, hooks: dict, hook: Callable) -> None:
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id
        self._hooks_ref = weakref.ref(hooks) if _weakrefable(hooks) else (lambda: hooks)
        hooks[self.id] = hook

    def remove(self) -> None:
        hooks = self._hooks_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _rebuild_tensor(host: np.ndarray, device_name: str, requires_grad: bool) -> Tensor:
    target = device(device_name)
    tensor = wrap(to_device_array(host, target), target)
    tensor._requires_grad = requires_grad
    return tensor


def _weakrefable(obj: object) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


def normalize_dim(dim: int, ndim: int) -> int:
    """Turn a possibly negative dim into an index in [0, ndim), or raise IndexError."""
    low = -ndim if ndim else -1
    high = ndim - 1 if ndim else 0
    if not low <= dim <= high:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{low}, {high}], but got {dim})"
        )
    return dim + ndim if dim < 0 else dim


def init_tensor(tensor: Tensor, data: Any, dev: device) -> None:
    """Set the slots of a new tensor (the rest keep their class-level defaults)."""
    tensor._data = data
    tensor._device = dev
    tensor._requires_grad = False
    tensor._version_counter = None
    tensor.grad = None
    tensor.grad_fn = None
    if _state.inference_mode:
        tensor._is_inference = True
        _state.inference_tensors_made = True


INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `tk.no_grad()` instead of "
    "`tk.inference_mode()`."
)


def check_not_inference(tensors: Any) -> None:
    """Refuse to save an inference tensor for backward (as PyTorch does): its data may be
    changed in inference mode without a version bump, so a gradient could silently use
    stale values."""
    if _state.inference_tensors_made:
        for t in tensors:
            if isinstance(t, Tensor) and t._is_inference:
                raise RuntimeError(f"{INFERENCE_SAVED} (a tensor of shape {list(t.shape)})")


_new = object.__new__


def note_value_read(tensor: Tensor, how: str) -> None:
    """Tell a running ``tk.jit`` capture that library code reads ``tensor``'s values on the
    host (``how`` names it), as ``item()`` would: a graph break, not a baked constant."""
    if _state.tracer is not None:
        _state.tracer.value_read(tensor, how)


def wrap(data: Any, dev: device) -> Tensor:
    """A new tensor around ``data``, an ndarray that lives on ``dev``."""
    tensor = _new(Tensor)
    init_tensor(tensor, data, dev)
    return tensor
