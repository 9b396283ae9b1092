"""The layers of docs/architecture.md: the core (tensor, ops, autograd, profiler, the private
modules beside them and the namespaces built only on them: linalg, fft, special, func,
array_api, random, memory, cuda) imports nothing from tensorkit.nn or tensorkit.notebook,
and nothing outside tensorkit.notebook imports it; the core reaches the notebook package
only through tensorkit._notebook_hooks."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tensorkit as tk
from tensorkit import _notebook_hooks

PACKAGE = Path(tk.__file__).parent
ROOT = PACKAGE.parent
# The core as the issue names it, and what rests only on it.
CORE = (
    "__init__.py",
    "tensor.py",
    "ops",
    "autograd",
    "profiler",
    "_backend",
    "linalg",
    "fft.py",
    "special.py",
    "func.py",
    "array_api",
    "random.py",
    "memory.py",
    "cuda",
)


def package_of(path: Path) -> str:
    """The package a module's relative imports start from (``tensorkit.ops`` for
    tensorkit/ops/reduction.py and for tensorkit/ops/__init__.py)."""
    parts = path.relative_to(ROOT).parts
    return ".".join(parts[:-1])


def imported_modules(source: str, package: str) -> set[str]:
    """Every module ``source`` imports, at its top or inside a function, relative imports
    resolved against ``package`` (``from .. import nn`` counts as ``tensorkit.nn``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def file_imports(path: Path) -> set[str]:
    return imported_modules(path.read_text(encoding="utf-8"), package_of(path))


def _reaches(modules: set[str], target: str) -> list[str]:
    return sorted(m for m in modules if m == target or m.startswith(target + "."))


def core_files() -> list[Path]:
    files = [p for p in PACKAGE.glob("_*.py") if p.name != "__init__.py"]  # the private modules
    for name in CORE:
        path = PACKAGE / name
        files.extend(path.rglob("*.py") if path.is_dir() else [path])
    return sorted(files)


def test_the_import_finder_sees_absolute_relative_and_lazy_imports() -> None:
    source = textwrap.dedent(
        """
        import tensorkit.notebook.widgets
        from .. import nn
        from .shape import reshape

        def late():
            from ..notebook.replay import PassRecorder
        """
    )
    found = imported_modules(source, "tensorkit.ops")
    assert "tensorkit.notebook.widgets" in found
    assert "tensorkit.nn" in found
    assert "tensorkit.ops.shape" in found
    assert "tensorkit.notebook.replay" in found
    assert _reaches(found, "tensorkit.notebook") == [
        "tensorkit.notebook.replay",
        "tensorkit.notebook.replay.PassRecorder",
        "tensorkit.notebook.widgets",
    ]


def test_relative_imports_resolve_against_the_module_package() -> None:
    found = file_imports(PACKAGE / "autograd" / "tape.py")
    assert "tensorkit._notebook_hooks" in found  # ``from .. import _notebook_hooks``
    assert "tensorkit.tensor" in found  # ``from ..tensor import Tensor``
    assert "tensorkit.ops" in file_imports(PACKAGE / "ops" / "__init__.py")  # ``from . import``


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_imports_neither_nn_nor_notebook(path: Path) -> None:
    modules = file_imports(path)
    assert _reaches(modules, "tensorkit.nn") == []
    assert _reaches(modules, "tensorkit.notebook") == []


def test_only_the_notebook_package_imports_it() -> None:
    offenders = {
        str(path.relative_to(PACKAGE)): _reaches(file_imports(path), "tensorkit.notebook")
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] != "notebook"
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_core_work_loads_neither_nn_nor_notebook() -> None:
    """``import tensorkit`` loads nn and notebook lazily: autograd, a Tape without step
    details, softmax, a profile and tk.save/tk.load run without them."""
    script = textwrap.dedent(
        """
        import io, sys
        import tensorkit as tk
        from tensorkit.autograd import Tape

        x = tk.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        with Tape(step_details=0) as tape:
            y = tk.softmax(x, 0).log_softmax(0).sum()
            y.backward()
        tape.to_text()
        with tk.profiler.profile() as prof:
            (x.exp() * 2).sum().backward()
        prof.key_averages().table()
        buffer = io.BytesIO()
        tk.save({"x": x}, buffer)
        buffer.seek(0)
        tk.load(buffer)
        loaded = ("tensorkit.nn", "tensorkit.notebook")
        print(sorted(m for m in sys.modules if m.startswith(loaded)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_hook_is_found_by_importing_the_notebook_package() -> None:
    import tensorkit.notebook as notebook

    assert _notebook_hooks.lookup("tape.show") is notebook.show


def test_an_unknown_hook_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown notebook hook 'tape\.plot'; the core looks up"):
        _notebook_hooks.register("tape.plot", print)


def test_a_missing_notebook_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_notebook_hooks, "_hooks", {})
    monkeypatch.setitem(sys.modules, "tensorkit.notebook", None)  # import raises ImportError
    with pytest.raises(
        ImportError,
        match=r"Tape\.show\(\) needs tensorkit\.notebook: import it or pip install "
        r"tensorkit\[notebook\]",
    ):
        tk.autograd.Tape().show()
