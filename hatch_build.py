"""Build hook: compile the modules every op and every backward node runs through with Cython.

The modules stay plain Python source (no Cython syntax); compiled, they take about a fifth
less time per op (docs/benchmarks.md). The build writes ``tensorkit/_compiled.json``, the
SHA-256 of each compiled source, which ``tensorkit/_compiled.py`` checks at import: a module
whose source has changed since is imported from its source. ``TENSORKIT_PURE_PYTHON=1`` at
build time, or a machine without a C compiler (a warning says so), gives a pure-Python build.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# The engine, the dispatch of every op, the elementwise ops and the Tensor: where eager mode
# spends its Python.
COMPILED = (
    "tensorkit/autograd/engine.py",
    "tensorkit/autograd/runners.py",
    "tensorkit/autograd/node_work.py",
    "tensorkit/autograd/graph.py",
    "tensorkit/ops/_apply.py",
    "tensorkit/ops/_rule_space.py",
    "tensorkit/ops/binary.py",
    "tensorkit/ops/unary.py",
    "tensorkit/tensor.py",
    "tensorkit/_state.py",
)
MANIFEST = "tensorkit/_compiled.json"
# Annotations are documentation here, not C types: a list passed where a tuple is annotated
# must keep working as in CPython.
DIRECTIVES = {"language_level": 3, "binding": True, "annotation_typing": False}


def _module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def _remove_builds(root: Path) -> None:
    """Delete the manifest and every compiled twin of a module source (``x.*.so`` beside
    ``x.py``) an earlier build left, whatever :data:`COMPILED` was then: none may shadow its
    source unchecked."""
    (root / MANIFEST).unlink(missing_ok=True)
    for library in (root / "tensorkit").rglob("*.so"):
        if library.with_name(library.name.split(".")[0] + ".py").exists():
            library.unlink()


def _compile(root: Path) -> list[str]:
    """Compile :data:`COMPILED` next to their sources; their paths, relative to ``root``."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    extensions = [Extension(_module_name(path), [path]) for path in COMPILED]
    command = build_ext(
        Distribution(
            {
                "ext_modules": cythonize(
                    extensions, build_dir="build/cython", compiler_directives=DIRECTIVES, quiet=True
                )
            }
        )
    )
    command.inplace = True
    command.build_temp = "build/cython-temp"
    command.ensure_finalized()
    command.run()
    return [
        Path(command.get_ext_fullpath(extension.name)).resolve().relative_to(root).as_posix()
        for extension in extensions
    ]


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root).resolve()
        _remove_builds(root)
        if os.environ.get("TENSORKIT_PURE_PYTHON", "") not in ("", "0"):
            return
        here = Path.cwd()
        os.chdir(root)  # setuptools builds in place relative to the working directory
        try:
            libraries = _compile(root)
        except Exception as error:  # no compiler or no Cython: the same code, uncompiled
            _remove_builds(root)
            warnings.warn(
                f"tensorkit: the core was not compiled ({type(error).__name__}: {error}); "
                "installing it as pure Python",
                stacklevel=1,
            )
            return
        finally:
            os.chdir(here)
        digests = {
            _module_name(path): hashlib.sha256((root / path).read_bytes()).hexdigest()
            for path in COMPILED
        }
        (root / MANIFEST).write_text(json.dumps({"modules": digests}, indent=1) + "\n")
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        build_data["artifacts"].extend([*libraries, MANIFEST])
