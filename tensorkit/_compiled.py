"""Which core modules run compiled: the one rule for the modules hatch_build.py compiles.

A build compiles a few modules with Cython and writes ``_compiled.json``, the SHA-256 of each
compiled source. A compiled module runs only while its source is the one that was compiled:
one whose source has changed since (an edit in an editable install) is imported from its
``.py`` instead, with one warning, so an edit is never silently ignored. With
``TENSORKIT_PURE_PYTHON=1`` every one is imported from its source (a debugger then steps
through the engine). Without the manifest (a source tree run with ``PYTHONPATH=.``, a
pure-Python build) there is nothing to decide.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType

__all__ = ["compiled_modules", "install", "sources_to_import"]

_PACKAGE = Path(__file__).resolve().parent
MANIFEST = _PACKAGE / "_compiled.json"


def _source(package: Path, module: str) -> Path:
    return package.joinpath(*module.split(".")[1:]).with_suffix(".py")


def sources_to_import(
    manifest: Path, package: Path, pure: bool
) -> tuple[dict[str, Path], list[str]]:
    """The compiled modules to import from source instead (name -> .py), and the names of
    those whose source changed since the build."""
    if not manifest.exists():
        return {}, []
    digests = json.loads(manifest.read_text())["modules"]
    sources, changed = {}, []
    for module, digest in digests.items():
        source = _source(package, module)
        if (
            not pure
            and source.exists()
            and hashlib.sha256(source.read_bytes()).hexdigest() == digest
        ):
            continue
        if not pure:
            changed.append(module)
        if source.exists():
            sources[module] = source
    return sources, changed


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Finds the listed modules as their .py files, ahead of the compiled ones."""

    def __init__(self, sources: dict[str, Path]) -> None:
        self.sources = sources

    def find_spec(self, name: str, path: object = None, target: ModuleType | None = None):  # type: ignore[no-untyped-def]
        source = self.sources.get(name)
        if source is None:
            return None
        return importlib.util.spec_from_file_location(
            name, source, loader=importlib.machinery.SourceFileLoader(name, str(source))
        )


def install() -> None:
    """Route stale (or, with TENSORKIT_PURE_PYTHON, all) compiled modules to their sources;
    called first thing by tensorkit/__init__.py."""
    pure = os.environ.get("TENSORKIT_PURE_PYTHON", "") not in ("", "0")
    sources, changed = sources_to_import(MANIFEST, _PACKAGE, pure)
    if sources:
        sys.meta_path.insert(0, _SourceFinder(sources))
    if changed:
        warnings.warn(
            f"tensorkit: {', '.join(changed)} changed since it was compiled, so it runs from its "
            "source (uncompiled); reinstall (pip install -e .) to compile it again",
            RuntimeWarning,
            stacklevel=3,
        )


def compiled_modules() -> list[str]:
    """The core modules running compiled in this process (imported ones only)."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if name.startswith("tensorkit.") and str(getattr(module, "__file__", "")).endswith(suffixes)
    )
