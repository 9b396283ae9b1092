"""Cheap checks of the documentation site and the Binder setup (the Sphinx build itself, with
warnings as errors, is ``make docs``): every page and notebook is in a toctree, every public
module is in the API reference, every ``tk.`` name the guide mentions exists, and Binder
installs the notebook extra and opens an existing notebook."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import pkgutil
import posixpath
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import tensorkit

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# Implementation modules whose public names are the top-level namespace's (``tk.zeros``, ...).
NOT_PUBLIC = {"tensorkit.ops", "tensorkit.random"}

TOCTREE = re.compile(r"```\{toctree\}\n(.*?)```", re.S)
AUTOMODULE = re.compile(r"^\.\. automodule:: ([\w.]+)", re.M)
TK_NAME = re.compile(r"(?<![\w.])(tk|tkn)\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
BINDER_URL = re.compile(r"https://mybinder\.org/v2/gh/\S+\?urlpath=lab/tree/([\w./-]+)")


def toctree_entries(page: Path) -> set[str]:
    """The documents a page's toctrees list, as docnames relative to docs/."""
    entries = set()
    for block in TOCTREE.findall(page.read_text(encoding="utf-8")):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith(":"):
                entries.add(posixpath.normpath((page.parent.relative_to(DOCS) / line).as_posix()))
    return entries


def all_toctree_entries() -> set[str]:
    return set().union(*(toctree_entries(page) for page in DOCS.rglob("*.md") if in_source(page)))


def in_source(path: Path) -> bool:
    return "_build" not in path.relative_to(DOCS).parts


def docname(path: Path) -> str:
    return path.relative_to(DOCS).with_suffix("").as_posix()


_TOP_MODULES = (
    "import types, tensorkit; "
    "print(*[n for n, v in vars(tensorkit).items() if isinstance(v, types.ModuleType)])"
)


def public_modules() -> set[str]:
    """``tensorkit``, its public submodules (lazy ones included) and, recursively, modules
    named in their ``__all__``, plus the notebook widget modules."""
    # Read in a fresh interpreter: in this one, earlier tests may have imported submodules
    # (tensorkit.examples, say) that ``import tensorkit`` alone does not.
    fresh = subprocess.run(
        [sys.executable, "-c", _TOP_MODULES], capture_output=True, text=True, check=True
    )
    top = fresh.stdout.split()
    names = [f"tensorkit.{name}" for name in (*top, *tensorkit._LAZY_SUBMODULES)]
    found, queue = {"tensorkit"}, [n for n in names if not n.split(".")[-1].startswith("_")]
    while queue:
        name = queue.pop()
        if name in found or name in NOT_PUBLIC:
            continue
        found.add(name)
        module = importlib.import_module(name)
        for member in getattr(module, "__all__", ()):
            value = getattr(module, member)
            if isinstance(value, ModuleType) and value.__name__.startswith("tensorkit."):
                queue.append(value.__name__)
    notebook = importlib.import_module("tensorkit.notebook")
    for info in pkgutil.iter_modules(notebook.__path__):
        if info.name.endswith(("widget", "widgets")) or info.name == "magics":
            found.add(f"tensorkit.notebook.{info.name}")
    return found


def test_every_page_is_in_a_toctree() -> None:
    pages = [p for ext in ("*.md", "*.rst") for p in DOCS.rglob(ext) if in_source(p)]
    pages += list((DOCS / "notebooks").glob("*.ipynb"))
    listed = all_toctree_entries()
    missing = sorted(
        docname(p) for p in pages if docname(p) != "index" and docname(p) not in listed
    )
    assert not missing, f"pages in no toctree: {missing}"
    dangling = sorted(
        e
        for e in listed
        if not any((DOCS / e).with_suffix(s).exists() for s in (".md", ".rst", ".ipynb"))
    )
    assert not dangling, f"toctree entries without a page: {dangling}"


def test_every_notebook_is_linked_into_the_docs_and_listed() -> None:
    assert NOTEBOOKS, "no notebooks found"
    listed = all_toctree_entries()
    for notebook in NOTEBOOKS:
        link = DOCS / "notebooks" / notebook.name
        assert link.is_symlink(), f"{link} should be a symlink to {notebook}"
        assert link.resolve() == notebook.resolve(), f"{link} points at {link.resolve()}"
        assert f"notebooks/{notebook.stem}" in listed, f"{notebook.name} is in no toctree"
    extra = {p.name for p in (DOCS / "notebooks").iterdir()} - {n.name for n in NOTEBOOKS}
    assert not extra, f"docs/notebooks has entries with no notebook behind them: {extra}"


def test_every_public_module_is_in_the_api_reference() -> None:
    documented = set()
    for page in (DOCS / "api").glob("*.rst"):
        documented.update(AUTOMODULE.findall(page.read_text(encoding="utf-8")))
    expected = public_modules()
    assert {"tensorkit.nn.functional", "tensorkit.optim.lr_scheduler"} <= expected
    missing = sorted(expected - documented)
    assert not missing, f"public modules missing from docs/api: {missing}"
    unknown = sorted(name for name in documented if importlib.util.find_spec(name) is None)
    assert not unknown, f"docs/api documents modules that do not exist: {unknown}"


@pytest.mark.parametrize("page", sorted((DOCS / "guide").glob("*.md")), ids=lambda p: p.stem)
def test_every_name_the_guide_mentions_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    names = {(m.group(1), m.group(2)) for m in TK_NAME.finditer(text)}
    assert names or page.stem == "installation"
    for alias, dotted in sorted(names):
        obj: object = tensorkit if alias == "tk" else importlib.import_module("tensorkit.notebook")
        for part in dotted.split("."):
            assert hasattr(obj, part), f"{page.name}: {alias}.{dotted} does not exist ({part})"
            obj = getattr(obj, part)


def test_binder_installs_the_notebook_extra_from_the_repository() -> None:
    lines = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    requirements = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert requirements == ["-e .[notebook]"]
    requires = importlib.metadata.requires("tensorkit") or []  # markers quoted either way
    notebook = " ".join(r for r in requires if 'extra == "notebook"' in r.replace("'", '"'))
    for package in ("jupyterlab", "anywidget", "ipywidgets", "ipykernel"):
        assert package in notebook, f"the notebook extra lacks {package}"


def test_binder_url_opens_the_tour() -> None:
    sources = [ROOT / "binder" / "requirements.txt", DOCS / "guide" / "installation.md"]
    targets = [t for s in sources for t in BINDER_URL.findall(s.read_text(encoding="utf-8"))]
    assert targets, "no Binder launch URL with urlpath=lab/tree/... found"
    for target in targets:
        assert target == "notebooks/01_tour.ipynb"
        assert (ROOT / target).is_file()


def test_conf_executes_notebooks_and_fails_on_errors() -> None:
    sys.path.insert(0, str(DOCS))
    try:
        conf = importlib.import_module("conf")
    finally:
        sys.path.remove(str(DOCS))
        sys.modules.pop("conf", None)
    assert conf.nb_execution_mode in ("force", "cache")
    assert conf.nb_execution_raise_on_error is True
    assert "myst_nb" in conf.extensions and "sphinx.ext.autodoc" in conf.extensions
