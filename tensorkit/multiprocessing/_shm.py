"""Named shared-memory blocks: make, map, unlink, and find leftovers.

Two kinds. Tracked blocks (the DataLoader's) are ``multiprocessing.shared_memory.SharedMemory``
blocks, registered with multiprocessing's resource tracker, which removes them should the whole
process tree die before they are unlinked. Untracked blocks (shared tensors) are the same POSIX
shared memory, made and mapped with the calls ``SharedMemory`` itself uses but kept away from
the tracker: their lifetime is counted by tensorkit across processes, which the tracker (one
per process tree, registering every mapping before Python 3.13) would get wrong.

Either way the mapping handed back is a plain ``mmap.mmap`` that lives exactly as long as
something (a NumPy array made on it) refers to it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from _posixshmem import shm_open, shm_unlink
from multiprocessing.shared_memory import SharedMemory

SHM_DIR = "/dev/shm"


def _take_mapping(block: SharedMemory) -> mmap.mmap:
    # SharedMemory.close() would unmap the memory under arrays still using it, so the
    # mapping leaves the object here and is freed by reference counting instead.
    mapping = block._mmap
    block._buf.release()
    block._buf = None
    block._mmap = None
    return mapping


def create(name: str, size: int) -> tuple[SharedMemory, mmap.mmap]:
    """A new block of ``size`` bytes (> 0) and a mapping of it."""
    block = SharedMemory(name=name, create=True, size=size)
    return block, _take_mapping(block)


def attach(name: str) -> tuple[SharedMemory, mmap.mmap]:
    """Map the existing block ``name``."""
    block = SharedMemory(name=name)
    return block, _take_mapping(block)


def create_untracked(name: str, size: int) -> tuple[int, mmap.mmap]:
    """A new untracked block of ``size`` bytes: its open file descriptor and a mapping."""
    fd = shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    try:
        os.ftruncate(fd, size)
        return fd, mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        shm_unlink("/" + name)
        raise


def attach_untracked(name: str) -> tuple[int, mmap.mmap]:
    """Map the existing untracked block ``name``: its open file descriptor and a mapping."""
    fd = shm_open("/" + name, os.O_RDWR, mode=0o600)
    try:
        return fd, mmap.mmap(fd, os.fstat(fd).st_size)
    except BaseException:
        os.close(fd)
        raise


def unlink_untracked(name: str) -> None:
    """Remove an untracked block's name (memory goes when the last mapping does)."""
    shm_unlink("/" + name)


def unlink(name: str) -> None:
    """Remove the block's name if it still exists (memory goes when the last mapping does)."""
    try:
        block = SharedMemory(name=name)
    except FileNotFoundError:
        return
    except ValueError:
        # Empty: its creator died between shm_open and ftruncate, before the resource
        # tracker heard of it, so only the name is left to remove.
        with contextlib.suppress(FileNotFoundError):
            shm_unlink("/" + name)
        return
    block.close()
    with contextlib.suppress(FileNotFoundError):
        block.unlink()


def leftovers(prefix: str) -> list[str]:
    """Names of existing blocks that start with ``prefix`` (empty where there is no /dev/shm)."""
    try:
        return sorted(entry for entry in os.listdir(SHM_DIR) if entry.startswith(prefix))
    except FileNotFoundError:
        return []
