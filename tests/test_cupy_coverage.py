"""CuPy covers every array function tensorkit calls through a device's array module ``xp``.

The calls are collected from tensorkit's source (every ``xp.name(...)``, ``dev.xp.name``,
``xp.linalg.name``...), with the keywords and the number of positional arguments of each call
site; each must resolve in CuPy and accept those arguments. ``getattr(xp, name)`` sites are
listed by hand in ``DYNAMIC`` and the list is checked against the source. Needs CuPy to import
(``pip install cupy-cuda12x``), not a GPU.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import tensorkit as tk

cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install cupy-cuda12x)")

PACKAGE = Path(tk.__file__).resolve().parent
UFUNC_KEYWORDS = {"out", "dtype", "casting"}  # what cupy.ufunc.__call__ takes

# getattr(xp, name) sites: file -> the names they can look up.
DYNAMIC = {
    "ops/binary.py": {"mod", "fmod"},
    "ops/shape.py": {"tril", "triu"},
    "ops/reduction.py": {"all", "any"},
    "ops/unary.py": {"floor", "ceil", "trunc", "round"},
}
# Functions tensorkit imports from cupyx when it runs on CuPy.
CUPYX = (
    "scatter_add",
    "empty_pinned",
    "scipy.special.erf",
    "scipy.special.erfc",
    "scipy.special.gammaln",
    "scipy.special.psi",
    "scipy.special.zeta",
    "scipy.special.erfinv",
    "scipy.special.i0",
    "scipy.special.i0e",
    "scipy.special.i1",
    "scipy.special.i1e",
    "scipy.special.erfcx",
    "scipy.special.ndtr",
    "scipy.special.ndtri",
    "scipy.special.log_ndtr",
    "scipy.special.entr",
    "scipy.special.xlog1py",
    "scipy.special.gammainc",
    "scipy.special.gammaincc",
    "scipy.special.j0",
    "scipy.special.j1",
    "scipy.special.y0",
    "scipy.special.y1",
    "scipy.special.k0",
    "scipy.special.k1",
    "scipy.special.k0e",
    "scipy.special.k1e",
)


@dataclass(frozen=True)
class CallSite:
    name: str  # dotted, after xp: "sum", "linalg.svd"
    where: str  # "ops/reduction.py:12"
    positional: int | None  # None when the call unpacks *args
    keywords: frozenset[str]  # None-named (**kwargs) entries left out


def xp_name(node: ast.AST) -> str | None:
    """``name`` for an attribute chain ``xp.name`` or ``<anything>.xp.name``, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "xp" and parts:
        return ".".join(reversed(parts))
    if len(parts) > 1 and parts[-1] == "xp":
        return ".".join(reversed(parts[:-1]))
    return None


def sources() -> Iterator[tuple[str, ast.AST]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def collect() -> tuple[list[CallSite], set[str], dict[str, int]]:
    """(call sites, every name read off xp, getattr(xp, ...) sites per file)."""
    calls, names, dynamic = [], set(), {}
    for rel, tree in sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = xp_name(func) if isinstance(func, ast.Attribute) else None
                if name is not None:
                    starred = any(isinstance(a, ast.Starred) for a in node.args)
                    calls.append(
                        CallSite(
                            name,
                            f"{rel}:{node.lineno}",
                            None if starred else len(node.args),
                            frozenset(k.arg for k in node.keywords if k.arg is not None),
                        )
                    )
                if (
                    isinstance(func, ast.Name)
                    and func.id == "getattr"
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id == "xp"
                ):
                    dynamic[rel] = dynamic.get(rel, 0) + 1
            elif isinstance(node, ast.Attribute):
                name = xp_name(node)
                if name is not None:
                    names.add(name)
    return calls, names, dynamic


CALLS, NAMES, DYNAMIC_SITES = collect()


def resolve(module: Any, dotted: str) -> Any:
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_the_scan_finds_the_ops_calls() -> None:
    found = {c.name for c in CALLS}
    assert {"where", "matmul", "linalg.svd", "linalg.qr", "lib.stride_tricks.as_strided"} <= found
    assert len(found) > 80  # the ops use far more; a broken scan finds few


@pytest.mark.parametrize("name", sorted(NAMES - {"__name__"}))
def test_cupy_has_every_name_tensorkit_reads_off_xp(name: str) -> None:
    try:
        resolve(cupy, name)
    except AttributeError:
        users = sorted({c.where for c in CALLS if c.name == name})
        pytest.fail(f"cupy has no {name!r} (used at {users or 'attribute reads'})")


def accepts(function: Any, site: CallSite) -> str | None:
    """Why ``function`` cannot take ``site``'s arguments, or None."""
    if isinstance(function, cupy.ufunc):
        extra = site.keywords - UFUNC_KEYWORDS
        if extra:
            return f"cupy ufunc {function.__name__} takes no {sorted(extra)}"
        if site.positional is not None and site.positional > function.nin + function.nout:
            return f"cupy ufunc {function.__name__} takes {function.nin} inputs"
        return None
    if isinstance(function, type):  # dtypes and classes (float32, random.Generator, ...)
        return None
    signature = inspect.signature(function)
    positional = [object()] * (site.positional or 0)
    try:
        signature.bind_partial(*positional, **dict.fromkeys(site.keywords))
    except TypeError as error:
        return f"cupy.{site.name}{signature}: {error}"
    return None


@pytest.mark.parametrize("site", CALLS, ids=lambda c: f"{c.name}@{c.where}")
def test_cupy_takes_the_arguments_of_every_call_site(site: CallSite) -> None:
    problem = accepts(resolve(cupy, site.name), site)
    assert problem is None, f"{site.where}: {problem}"


def test_dynamic_lookups_are_all_listed() -> None:
    listed = dict.fromkeys(DYNAMIC, 1)
    assert listed == DYNAMIC_SITES, "getattr(xp, ...) sites changed: list their names in DYNAMIC"
    missing = [n for names in DYNAMIC.values() for n in sorted(names) if not hasattr(cupy, n)]
    assert missing == []


@pytest.mark.parametrize("name", CUPYX)
def test_cupyx_functions_exist(name: str) -> None:
    import cupyx.scipy.special  # noqa: F401 (a submodule CuPy does not import by itself)

    assert callable(resolve(sys.modules["cupyx"], name))


def test_is_available_is_false_when_every_device_call_raises() -> None:
    """The real CuPy imports here but its runtime cannot reach a GPU (no driver)."""
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        count = None
    if count:
        pytest.skip(f"a GPU answers here ({count} devices)")
    assert tk.cuda.is_available() is False
    assert tk.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        tk.cuda.current_device()
