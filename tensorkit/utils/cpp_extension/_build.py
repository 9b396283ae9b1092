"""Compiling C/C++ sources into a shared library, cached by a hash of what went in.

The cache root is ``$TENSORKIT_EXTENSIONS_DIR``, else ``$XDG_CACHE_HOME/tensorkit_extensions``
(``~/.cache/tensorkit_extensions``). A build lives in ``<root>/<name>_<hash>/``, the hash
covering the sources' names and text, the compilers and every flag, so a changed source or
flag builds anew and an unchanged one loads the library already there. Objects are compiled
in a private temporary folder and the library is renamed into place, so processes building
the same extension at once do not see half a library.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

# Changes to how builds are made invalidate older cached builds.
_BUILD_FORMAT = "1"
_CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".C")
# The C math library (and, through it, glibc's vector math that -ffast-math loops call).
_LIBM = ("-lm",) if platform.system() == "Linux" else ()
_INSTALL_HINT = (
    "install a C/C++ compiler (Debian/Ubuntu: sudo apt-get install build-essential; "
    "Fedora: sudo dnf install gcc gcc-c++; macOS: xcode-select --install; conda: conda "
    "install -c conda-forge c-compiler cxx-compiler) or set {var} to the compiler's path"
)


class BuildError(RuntimeError):
    """A source did not compile or link: the message holds the compiler's own output."""


class CompilerNotFoundError(RuntimeError):
    """The compiler an extension needs is not installed (or not on PATH)."""


def build_root() -> Path:
    """Where extensions are built and cached (see the module docstring)."""
    configured = os.environ.get("TENSORKIT_EXTENSIONS_DIR")
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(cache).expanduser() / "tensorkit_extensions"


def compiler(cpp: bool) -> list[str]:
    """The C (``$CC``, default ``cc``) or C++ (``$CXX``, default ``c++``) compiler command;
    raises :class:`CompilerNotFoundError` saying which one is missing and how to get one."""
    var, default = ("CXX", "c++") if cpp else ("CC", "cc")
    command = shlex.split(os.environ.get(var) or default)
    if not command or shutil.which(command[0]) is None:
        source = f"${var}" if os.environ.get(var) else f"the default (${var} is not set)"
        raise CompilerNotFoundError(
            f"tk.utils.cpp_extension: the {'C++' if cpp else 'C'} compiler "
            f"{command[0] if command else ''!r} ({source}) was not found: "
            + _INSTALL_HINT.format(var=var)
        )
    return command


@functools.cache
def _cpu() -> str:
    """The CPU's model name (builds with -march=native differ by CPU, in a shared home)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("model name")), "")
    except OSError:
        return platform.processor()


def digest(name: str, sources: Sequence[tuple[str, str]], flags: Sequence[str]) -> str:
    """The cache key: a hash of the machine (OS, architecture, CPU model), the name, each
    (file name, text) and every flag."""
    h = hashlib.sha256()
    for part in (_BUILD_FORMAT, platform.machine(), platform.system(), _cpu(), name, *flags):
        h.update(part.encode() + b"\0")
    for filename, text in sources:
        h.update(filename.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()[:16]


def build_library(
    name: str,
    sources: Sequence[tuple[str, str]],
    *,
    extra_cflags: Sequence[str] = (),
    extra_ldflags: Sequence[str] = (),
    extra_include_paths: Sequence[str] = (),
    build_directory: str | os.PathLike | None = None,
    verbose: bool = False,
) -> Path:
    """The shared library built from ``sources`` ((file name, text) pairs), from the cache
    when it is there; raises :class:`BuildError` with the compiler's messages."""
    cpp = any(filename.endswith(_CPP_SUFFIXES) for filename, _ in sources)
    cc = compiler(False) if any(not f.endswith(_CPP_SUFFIXES) for f, _ in sources) else []
    cxx = compiler(True) if cpp else []
    includes = [f"-I{os.fspath(p)}" for p in extra_include_paths]
    cflags = ["-O3", "-fPIC", *includes, *extra_cflags]
    flags = [*cc, "|", *cxx, "|", *cflags, "|", *extra_ldflags]
    key = digest(name, sources, flags)
    directory = Path(build_directory) if build_directory else build_root() / f"{name}_{key}"
    library = directory / f"lib{name}_{key}.so"
    if library.exists():
        return library
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for filename, text in sources:
        path = directory / filename
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        paths.append(path)
    with tempfile.TemporaryDirectory(dir=directory, prefix="build-") as scratch:
        objects = []
        for path in paths:
            obj = Path(scratch) / (path.name + ".o")
            command = cxx if path.name.endswith(_CPP_SUFFIXES) else cc
            _run(name, [*command, *cflags, "-c", str(path), "-o", str(obj)], verbose)
            objects.append(str(obj))
        partial = Path(scratch) / library.name
        _run(
            name,
            [*(cxx or cc), "-shared", *objects, "-o", str(partial), *extra_ldflags, *_LIBM],
            verbose,
        )
        os.replace(partial, library)
    return library


def _run(name: str, command: list[str], verbose: bool) -> None:
    if verbose:
        print(shlex.join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if verbose and (done.stdout or done.stderr):
        print(done.stdout + done.stderr, flush=True)
    if done.returncode != 0:
        raise BuildError(
            f"Error building extension '{name}': {shlex.join(command)} exited with status "
            f"{done.returncode}:\n{(done.stdout + done.stderr).strip()}"
        )
