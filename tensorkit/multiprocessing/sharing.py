"""Tensors in shared memory: ``share_memory_()``, ``is_shared()``, and the pickling rule that
sends a shared tensor through multiprocessing queues and pipes as a reference.

Each shared tensor's data lives in a named block whose first bytes count its references
(``_refs``): one per process that maps the block, plus one per pickled reference not yet
unpickled. When a process's last array on a block is freed (or the process exits), it drops
its reference; the one that finds no live reference left removes the block's name. So
``queue.put(tensor)`` followed by ``del tensor`` is safe: the message holds the block until the
receiver has mapped it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from dataclasses import dataclass
from itertools import count
from multiprocessing import util
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from .._backend import cpu
from ..tensor import Tensor, wrap
from . import _shm
from ._refs import HEADER_BYTES, Refs

__all__ = [
    "install",
    "share_memory_",
    "is_shared",
    "reduce_tensor",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "set_sharing_strategy",
]

_STRATEGY = "file_system"  # tensors travel as names of shared-memory files

_names = count()
_lock = threading.Lock()  # guards the two tables below (the queue feeder thread pickles too)


@dataclass(eq=False)
class _Mapped:
    """This process's mapping of one block."""

    name: str
    fd: int  # kept open for the reference counts' file lock
    root: weakref.ref  # the uint8 array over the whole block; every tensor on it is a view
    refs: Refs
    pid: int


_by_root: dict[int, _Mapped] = {}
_by_name: dict[str, _Mapped] = {}


def _register(name: str, fd: int, mapping: Any) -> tuple[np.ndarray, _Mapped]:
    root = np.frombuffer(mapping, dtype=np.uint8)
    refs = Refs(np.frombuffer(mapping, dtype=np.int64, count=HEADER_BYTES // 8), fd)
    mapped = _Mapped(name, fd, weakref.ref(root), refs, os.getpid())
    with _lock:
        _by_root[id(root)] = mapped
        _by_name[name] = mapped
    # multiprocessing's Finalize runs at exit in child processes too, and never in a process
    # that merely inherited the mapping through fork. Priority -10: after queues' feeder
    # threads are joined (-5), since messages they still have to pickle may use the block.
    util.Finalize(root, _release, args=(id(root), mapped), exitpriority=-10)
    return root, mapped


def _release(key: int, mapped: _Mapped) -> None:
    with _lock:
        if _by_root.get(key) is mapped:
            del _by_root[key]
        if _by_name.get(mapped.name) is mapped:
            del _by_name[mapped.name]
    if mapped.refs.release():
        with contextlib.suppress(FileNotFoundError):
            _shm.unlink_untracked(mapped.name)
    os.close(mapped.fd)


def _mapped_of(array: np.ndarray) -> tuple[np.ndarray, _Mapped] | None:
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    mapped = _by_root.get(id(root))
    if mapped is None or mapped.root() is not root:
        return None
    return root, mapped


def is_shared(self: Tensor) -> bool:
    """True when the tensor's data lives in shared memory (always for CUDA tensors)."""
    if self.device.type != "cpu":
        return True
    return _mapped_of(self._data) is not None


def _move_to_block(data: np.ndarray) -> np.ndarray:
    name = f"tkmp{os.getpid()}_{next(_names)}_{os.urandom(3).hex()}"
    fd, mapping = _shm.create_untracked(name, HEADER_BYTES + max(data.nbytes, 1))
    root, mapped = _register(name, fd, mapping)
    mapped.refs.hold()
    moved = root[HEADER_BYTES : HEADER_BYTES + data.nbytes].view(data.dtype).reshape(data.shape)
    np.copyto(moved, data)
    return moved


def share_memory_(self: Tensor) -> Tensor:
    """Move this tensor's data into shared memory, in place; a no-op if already shared or on CUDA.

    The tensor keeps its identity, values, dtype and shape. For a view, its base tensor moves
    too and the view stays a view of it. Other views of that base made before the move keep
    using the old memory until they are themselves shared or sent to another process.
    """
    if self.device.type != "cpu" or is_shared(self):
        return self
    base = self._base
    if base is None:
        _move_tensor(self)
        return self
    if not is_shared(base):
        _move_tensor(base)
    view = self._data
    offset = _offset_in_old_memory(base, view)
    if offset is None:  # not (or no longer) within the memory its base moved from
        self._data = _move_to_block(view)
    else:
        self._data = np.ndarray(
            view.shape, view.dtype, buffer=base._data, offset=offset, strides=view.strides
        )
    return self


def _move_tensor(tensor: Tensor) -> None:
    old = tensor._data
    tensor._data = _move_to_block(old)
    if old.flags.c_contiguous:  # byte offsets into the old memory still hold in the new one
        tensor._moved_from = (_address(old), old.nbytes)


def _offset_in_old_memory(base: Tensor, view: np.ndarray) -> int | None:
    # A view alive now keeps the old memory alive, so its address can't have been reused.
    moved_from = base.__dict__.get("_moved_from")
    if moved_from is None:
        return None
    start, nbytes = moved_from
    offset = _address(view) - start
    return offset if 0 <= offset < max(nbytes, 1) else None


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def reduce_tensor(tensor: Tensor) -> tuple:
    """Pickle a CPU tensor as a reference to its shared block (moving it there first, as
    ``share_memory_()`` does). CUDA tensors and non-leaf tensors use ordinary pickling."""
    if tensor.device.type != "cpu" or not tensor.is_leaf:
        return tensor.__reduce_ex__(2)
    share_memory_(tensor)
    data = tensor._data
    root, mapped = _mapped_of(data)
    mapped.refs.send()  # the message holds the block until the receiver has mapped it
    offset = _address(data) - _address(root)
    args = (mapped.name, offset, data.shape, data.strides, data.dtype.str, tensor.requires_grad)
    return (_rebuild_tensor, args)


def _rebuild_tensor(
    name: str,
    offset: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    dtype: str,
    requires_grad: bool,
) -> Tensor:
    with _lock:
        mapped = _by_name.get(name)
        root = mapped.root() if mapped is not None and mapped.pid == os.getpid() else None
    if root is not None:
        mapped.refs.receive(hold=False)  # already mapped here by this process
    else:
        try:
            fd, mapping = _shm.attach_untracked(name)
        except FileNotFoundError:
            raise RuntimeError(
                f"shared memory block {name!r} of a received tensor no longer exists: the "
                "processes holding it exited or dropped it before this one received it"
            ) from None
        root, mapped = _register(name, fd, mapping)
        mapped.refs.receive(hold=True)
    data = np.ndarray(shape, np.dtype(dtype), buffer=root, offset=offset, strides=strides)
    out = wrap(data, cpu)
    out._requires_grad = requires_grad
    return out


def _reset_lock_in_child() -> None:
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_lock_in_child)


def install() -> None:
    """Add ``share_memory_``/``is_shared`` to Tensor and the shared-memory pickling rule to
    multiprocessing's pickler. Safe to call more than once."""
    if Tensor.__dict__.get("share_memory_") is share_memory_:
        return
    Tensor.share_memory_ = share_memory_
    Tensor.is_shared = is_shared
    ForkingPickler.register(Tensor, reduce_tensor)


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies tensorkit has: ``{"file_system"}`` (named shared-memory blocks)."""
    return {_STRATEGY}


def get_sharing_strategy() -> str:
    """The current sharing strategy: always ``"file_system"``."""
    return _STRATEGY


def set_sharing_strategy(new_strategy: str) -> None:
    """Accepts ``"file_system"`` (the only strategy, so nothing changes), as PyTorch's."""
    if new_strategy not in get_all_sharing_strategies():
        raise AssertionError(
            f"sharing strategy {new_strategy!r} is not available; tensorkit shares tensors "
            "through named shared-memory blocks ('file_system')"
        )
