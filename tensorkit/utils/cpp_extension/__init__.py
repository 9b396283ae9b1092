"""``tk.utils.cpp_extension``: compile C, C++ and CUDA sources into functions that take
tensors, as ``torch.utils.cpp_extension`` does, with cffi as the binding layer.

``load_inline(name, cpp_sources, functions=[...])`` and ``load(name, sources=[...])`` compile
the sources with the machine's compiler (``$CC``/``$CXX``) into a shared library, cached in a
per-user folder by a hash of the sources and flags (``build_root``), open it with cffi and
return a module whose functions take tensors where the C function takes pointers (zero-copy
on their NumPy buffers) and numbers elsewhere. Each call checks dtypes, device, contiguity
and the shapes an array parameter declares (``const float x[n]``) first; C++ functions must
be ``extern "C"``. ``cuda_sources`` hold ``extern "C" __global__`` kernels, compiled by
CuPy's ``RawModule`` and launched on CUDA tensors (``_cuda``). ``ffibuilder`` and
``load_module`` are the packaging recipe: a wheel built by setuptools with cffi's
``cffi_modules`` (see docs/guide/extensions.md).
"""

from __future__ import annotations

import os
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._binding import ExtensionFunction
from ._build import BuildError, CompilerNotFoundError, build_library, build_root, digest
from ._cuda import CudaKernel, build_module, cuda_unavailable_reason
from ._prototypes import Prototype, PrototypeError, find, from_json, to_json

__all__ = [
    "BuildError",
    "CompilerNotFoundError",
    "PrototypeError",
    "build_root",
    "ffibuilder",
    "load",
    "load_inline",
    "load_module",
]

_LOADED: dict[Path, dict[str, ExtensionFunction]] = {}  # library path -> its functions
_SPEC_SYMBOL = "tensorkit_prototypes"


def _cffi() -> Any:
    try:
        import cffi
    except ModuleNotFoundError as error:  # pragma: no cover - the extensions extra is missing
        raise ModuleNotFoundError(
            "tk.utils.cpp_extension binds compiled code with cffi: pip install "
            "'tensorkit[extensions]'"
        ) from error
    return cffi


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _function_names(functions: Any) -> list[str]:
    """``functions`` as names: a name, a list of names, or a dict name -> docstring."""
    if isinstance(functions, dict):
        return list(functions)
    names = _as_list(functions)
    if not names:
        raise ValueError("functions must name at least one function of the sources to bind")
    return names


def _prototypes(names: list[str], sources: Sequence[tuple[str, str]]) -> list[Prototype]:
    """The prototype of each named function, from whichever source defines it."""
    result = []
    for name in names:
        found = [p for label, text in sources if (p := find(text, name, label)) is not None]
        if not found:
            labels = ", ".join(label for label, _ in sources)
            raise PrototypeError(f"function {name!r} is not defined in the sources ({labels})")
        result.append(found[0])
    return result


def _module(name: str, path: Path, functions: dict[str, Any], docs: dict[str, str]) -> Any:
    module = types.ModuleType(name, f"tensorkit extension {name!r} ({path})")
    module.__file__ = str(path)
    for fname, fn in functions.items():
        if docs.get(fname):
            fn.__doc__ = docs[fname]
        setattr(module, fname, fn)
    return module


def _c_suffix(text: str) -> str:
    """A source with ``extern "C"`` is C++ (compiled by ``$CXX``), any other C."""
    return "cpp" if 'extern "C"' in text else "c"


def load_inline(
    name: str,
    cpp_sources: str | Sequence[str] = (),
    cuda_sources: str | Sequence[str] | None = None,
    functions: str | Sequence[str] | dict[str, str] | None = None,
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str] | None = None,
    build_directory: str | os.PathLike | None = None,
    verbose: bool = False,
    with_cuda: bool | None = None,
    is_python_module: bool = True,
) -> types.ModuleType:
    """Compile source strings and return a module of the listed ``functions``.

    ``cpp_sources`` are C by default (a source holding ``extern "C"`` is compiled as C++);
    ``cuda_sources`` need a CUDA device and CuPy. A function is looked up in both.
    """
    if not is_python_module:
        raise ValueError("load_inline: is_python_module=False is not supported by tensorkit")
    cpp = _as_list(cpp_sources)
    cuda = _as_list(cuda_sources)
    if with_cuda is False and cuda:
        raise ValueError("load_inline: with_cuda=False, but cuda_sources were given")
    names = _function_names(functions)
    c_files = [(f"main{i or ''}.{_c_suffix(text)}", text) for i, text in enumerate(cpp)]
    cuda_files = [(f"cuda{i or ''}.cu", text) for i, text in enumerate(cuda)]
    return _load(
        name,
        c_files,
        cuda_files,
        names,
        functions if isinstance(functions, dict) else {},
        extra_cflags=extra_cflags,
        extra_cuda_cflags=extra_cuda_cflags,
        extra_ldflags=extra_ldflags,
        extra_include_paths=extra_include_paths,
        build_directory=build_directory,
        verbose=verbose,
    )


def load(
    name: str,
    sources: str | os.PathLike | Sequence[str | os.PathLike],
    extra_cflags: Sequence[str] | None = None,
    extra_cuda_cflags: Sequence[str] | None = None,
    extra_ldflags: Sequence[str] | None = None,
    extra_include_paths: Sequence[str] | None = None,
    build_directory: str | os.PathLike | None = None,
    verbose: bool = False,
    with_cuda: bool | None = None,
    is_python_module: bool = True,
    *,
    functions: str | Sequence[str] | dict[str, str] | None = None,
) -> types.ModuleType:
    """Compile source files (``.c``, ``.cpp``/``.cc``, ``.cu``) and return a module of the
    listed ``functions`` (their names, or a dict of name -> docstring; keyword-only, where
    torch's ``load`` reads them from the pybind11 module the source defines)."""
    if not is_python_module:
        raise ValueError("load: is_python_module=False is not supported by tensorkit")
    paths = [Path(p) for p in ([sources] if isinstance(sources, str | os.PathLike) else sources)]
    if not paths:
        raise ValueError("load: sources must name at least one file")
    c_files, cuda_files = [], []
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"load({name!r}): source file {str(path)!r} does not exist")
        entry = (path.name, path.read_text())
        (cuda_files if path.suffix == ".cu" else c_files).append(entry)
    if with_cuda is False and cuda_files:
        raise ValueError("load: with_cuda=False, but .cu sources were given")
    return _load(
        name,
        c_files,
        cuda_files,
        _function_names(functions),
        functions if isinstance(functions, dict) else {},
        extra_cflags=extra_cflags,
        extra_cuda_cflags=extra_cuda_cflags,
        extra_ldflags=extra_ldflags,
        extra_include_paths=extra_include_paths,
        build_directory=build_directory,
        verbose=verbose,
    )


def _load(
    name: str,
    c_files: list[tuple[str, str]],
    cuda_files: list[tuple[str, str]],
    names: list[str],
    docs: dict[str, str],
    *,
    extra_cflags: Sequence[str] | None,
    extra_cuda_cflags: Sequence[str] | None,
    extra_ldflags: Sequence[str] | None,
    extra_include_paths: Sequence[str] | None,
    build_directory: str | os.PathLike | None,
    verbose: bool,
) -> types.ModuleType:
    if not name.isidentifier():
        raise ValueError(f"extension name must be an identifier, got {name!r}")
    in_cuda = [n for n in names if any(find(t, n, f) for f, t in cuda_files)]
    in_c = [n for n in names if n not in in_cuda]
    functions: dict[str, Any] = {}
    path = None
    if in_cuda:
        functions.update(
            _load_cuda(name, cuda_files, in_cuda, extra_cuda_cflags or (), build_directory)
        )
    if in_c or not in_cuda:
        prototypes = _prototypes(in_c, c_files)
        path = build_library(
            name,
            c_files,
            extra_cflags=extra_cflags or (),
            extra_ldflags=extra_ldflags or (),
            extra_include_paths=extra_include_paths or (),
            build_directory=build_directory,
            verbose=verbose,
        )
        functions.update(_open(path, prototypes))
    return _module(name, path or build_root(), functions, docs)


def _open(path: Path, prototypes: list[Prototype]) -> dict[str, ExtensionFunction]:
    """The functions of the library at ``path`` (opened once per process)."""
    opened = _LOADED.get(path)
    if opened is None or any(opened.get(p.name) is None for p in prototypes):
        ffi = _cffi().FFI()
        ffi.cdef("\n".join(p.c_text() for p in prototypes))
        lib = ffi.dlopen(str(path))
        opened = _LOADED[path] = {
            p.name: ExtensionFunction(p, getattr(lib, p.name), ffi, lib) for p in prototypes
        }
    return {p.name: opened[p.name] for p in prototypes}


def _load_cuda(
    name: str,
    cuda_files: list[tuple[str, str]],
    names: list[str],
    options: Sequence[str],
    build_directory: str | os.PathLike | None,
) -> dict[str, CudaKernel]:
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(
            f"extension {name!r}: cuda_sources need a CUDA GPU and CuPy, but {reason}; "
            "build its C sources only (cpp_sources) on this machine"
        )
    prototypes = _prototypes(names, cuda_files)
    for prototype in prototypes:
        if not prototype.extern_c:
            raise PrototypeError(
                f'CUDA kernel {prototype.name!r} must be declared extern "C" __global__ (a '
                "C++ name is mangled and cannot be found)"
            )
    source = "\n".join(text for _, text in cuda_files)
    key = digest(name, cuda_files, ["cuda", *options])
    directory = Path(build_directory) if build_directory else build_root() / f"{name}_{key}"
    directory.mkdir(parents=True, exist_ok=True)
    copy = directory / "kernels.cu"
    copy.write_text(source)
    module = build_module(name, key, source, options, str(copy))
    return {p.name: CudaKernel(p, module) for p in prototypes}


# ---------------------------------------------------------------------- packaging
def ffibuilder(
    module_name: str,
    sources: Sequence[str | os.PathLike],
    functions: Sequence[str],
    *,
    extra_compile_args: Sequence[str] = ("-O3",),
    include_dirs: Sequence[str] = (),
) -> Any:
    """A ``cffi.FFI`` that builds the C ``sources`` into the extension module
    ``module_name`` ("mypkg._kernels") binding ``functions``: what a setuptools build's
    ``cffi_modules=["build_kernels.py:ffibuilder"]`` compiles into a wheel. The module
    carries the prototypes, so :func:`load_module` binds it without the sources."""
    files = [(Path(s).name, Path(s).read_text()) for s in sources]
    prototypes = _prototypes(list(functions), files)
    declarations = "\n".join(p.c_text() for p in prototypes)
    spec = to_json(prototypes).replace("\\", "\\\\").replace('"', '\\"')
    builder = _cffi().FFI()
    builder.cdef(f"{declarations}\nstatic const char *const {_SPEC_SYMBOL};")
    builder.set_source(
        module_name,
        f"#include <stdbool.h>\n#include <stdint.h>\n{declarations}\n"
        f'static const char *const {_SPEC_SYMBOL} = "{spec}";',
        sources=[os.fspath(s) for s in sources],
        extra_compile_args=list(extra_compile_args),
        include_dirs=list(include_dirs),
    )
    return builder


def load_module(module: str | types.ModuleType) -> types.ModuleType:
    """The tensor-taking functions of an extension module built by :func:`ffibuilder`
    (installed from a wheel), by its name or the imported module."""
    import importlib

    compiled = importlib.import_module(module) if isinstance(module, str) else module
    ffi, lib = getattr(compiled, "ffi", None), getattr(compiled, "lib", None)
    if ffi is None or not hasattr(lib, _SPEC_SYMBOL):
        raise TypeError(
            f"{compiled.__name__} is not an extension built by "
            "tk.utils.cpp_extension.ffibuilder (it has no tensorkit prototypes)"
        )
    prototypes = from_json(ffi.string(getattr(lib, _SPEC_SYMBOL)).decode())
    functions = {p.name: ExtensionFunction(p, getattr(lib, p.name), ffi, lib) for p in prototypes}
    return _module(compiled.__name__, Path(compiled.__file__), functions, {})
