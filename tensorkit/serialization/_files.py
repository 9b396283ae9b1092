"""Where checkpoints go and come from: atomic writes to paths, and sources to read from."""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

__all__ = ["atomic_write", "is_path", "open_source"]


def is_path(target: Any) -> bool:
    return isinstance(target, str | bytes | os.PathLike)


def atomic_write(path: str | bytes | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write`` on a new file beside ``path``, sync it, then rename it over ``path``.

    If anything fails (or is interrupted) first, ``path`` is untouched and the temporary file is
    removed. A symlink at ``path`` is followed, so the file it points to is replaced.
    """
    target = os.path.realpath(os.fsdecode(path))
    directory, base = os.path.split(target)
    temporary = os.path.join(directory, f".{base}.{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    descriptor = os.open(temporary, flags, 0o666)
    try:
        with open(descriptor, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        with contextlib.suppress(OSError):  # keep the permissions of the file replaced
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make the rename durable where the platform can sync a directory (POSIX)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


@contextlib.contextmanager
def open_source(source: Any) -> Iterator[tuple[BinaryIO, int, int, str]]:
    """``(stream, start, size, label)`` for a path or a binary file-like object.

    A file-like object is read from its current position; one that cannot seek or read into a
    buffer is read whole first (holding no more memory than the bytes it really has).
    """
    if is_path(source):
        label = os.fsdecode(source)
        with open(label, "rb") as stream:
            yield stream, 0, os.fstat(stream.fileno()).st_size, label
        return
    if not callable(getattr(source, "read", None)):
        raise TypeError(
            f"load() expects a path or a binary file-like object, got {type(source).__name__}"
        )
    label = str(getattr(source, "name", None) or f"<{type(source).__name__}>")
    seekable = getattr(source, "seekable", None)
    if callable(seekable) and seekable() and callable(getattr(source, "readinto", None)):
        start = source.tell()
        end = source.seek(0, io.SEEK_END)
        source.seek(start)
        yield source, start, end - start, label
        return
    data = source.read()
    if not isinstance(data, bytes | bytearray):
        raise TypeError(f"{label}: read() returned {type(data).__name__}; open it in binary mode")
    yield io.BytesIO(data), 0, len(data), label
