"""The compiled core (hatch_build.py, tensorkit/_compiled.py): a build runs its compiled
modules, TENSORKIT_PURE_PYTHON=1 runs their sources, and a module edited since the build runs
from its source with a warning naming it."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tensorkit import _compiled

ROOT = Path(__file__).resolve().parents[1]
ENGINE = "tensorkit.autograd.engine"


def _package(tmp_path: Path, modules: dict[str, str]) -> Path:
    """A package ``fakecore`` with the given module sources and a manifest of their digests."""
    package = tmp_path / "fakecore"
    package.mkdir()
    (package / "__init__.py").write_text("")
    digests = {}
    for name, text in modules.items():
        (package / f"{name}.py").write_text(text)
        digests[f"fakecore.{name}"] = hashlib.sha256(text.encode()).hexdigest()
    (package / "_compiled.json").write_text(json.dumps({"modules": digests}))
    return package


def test_unchanged_sources_stay_compiled_and_edited_ones_are_named(tmp_path):
    package = _package(tmp_path, {"engine": "A = 1\n", "tensor": "B = 2\n"})
    manifest = package / "_compiled.json"
    assert _compiled.sources_to_import(manifest, package, pure=False) == ({}, [])
    (package / "tensor.py").write_text("B = 3\n")
    sources, changed = _compiled.sources_to_import(manifest, package, pure=False)
    assert sources == {"fakecore.tensor": package / "tensor.py"}
    assert changed == ["fakecore.tensor"]
    sources, changed = _compiled.sources_to_import(manifest, package, pure=True)
    assert set(sources) == {"fakecore.engine", "fakecore.tensor"} and changed == []
    assert _compiled.sources_to_import(tmp_path / "none.json", package, False) == ({}, [])


def test_an_edited_module_is_imported_from_its_source_with_a_warning(tmp_path, monkeypatch):
    package = _package(tmp_path, {"engine": "WHERE = 'source'\n"})
    (package / "engine.py").write_text("WHERE = 'edited source'\n")
    monkeypatch.setattr(_compiled, "MANIFEST", package / "_compiled.json")
    monkeypatch.setattr(_compiled, "_PACKAGE", package)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("TENSORKIT_PURE_PYTHON", raising=False)
    before = list(sys.meta_path)
    try:
        with pytest.warns(RuntimeWarning, match=r"fakecore\.engine changed since it was compiled"):
            _compiled.install()
        import fakecore.engine  # type: ignore[import-not-found]

        assert fakecore.engine.WHERE == "edited source"
        assert fakecore.engine.__file__ == str(package / "engine.py")
    finally:
        sys.meta_path[:] = before
        for name in ("fakecore", "fakecore.engine"):
            sys.modules.pop(name, None)


def _engine_file(pure: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TENSORKIT_PURE_PYTHON"}
    if pure:
        env["TENSORKIT_PURE_PYTHON"] = "1"
    code = (
        "import warnings; warnings.simplefilter('error');"
        "import tensorkit, tensorkit._compiled as c;"
        f"import {ENGINE} as e; print(e.__file__); print(len(c.compiled_modules()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout


def test_a_build_runs_compiled_and_the_switch_runs_the_sources():
    built = (ROOT / "tensorkit" / "_compiled.json").exists()
    if not built:
        if os.environ.get("TENSORKIT_REQUIRE_COMPILED") == "1":
            pytest.fail("TENSORKIT_REQUIRE_COMPILED=1 but this tree has no compiled core")
        pytest.skip("a pure-Python tree (no tensorkit/_compiled.json)")
    manifest = json.loads((ROOT / "tensorkit" / "_compiled.json").read_text())
    compiled_file, count = _engine_file(pure=False).split()
    assert compiled_file.endswith(".so") and int(count) == len(manifest["modules"])
    source_file, count = _engine_file(pure=True).split()
    assert source_file.endswith("engine.py") and int(count) == 0


def _hook_modules() -> tuple[str, ...]:
    """hatch_build.COMPILED, read without importing hatchling."""
    tree = ast.parse((ROOT / "hatch_build.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "COMPILED":
            return ast.literal_eval(node.value)
    raise AssertionError("hatch_build.py defines no COMPILED")


def test_the_build_hook_and_the_manifest_name_the_same_modules():
    paths = _hook_modules()
    assert "tensorkit/autograd/engine.py" in paths
    for path in paths:
        assert (ROOT / path).exists(), path
    manifest = ROOT / "tensorkit" / "_compiled.json"
    if manifest.exists():
        names = set(json.loads(manifest.read_text())["modules"])
        assert names == {path.removesuffix(".py").replace("/", ".") for path in paths}


def test_a_new_build_removes_every_compiled_twin_an_earlier_one_left(tmp_path, monkeypatch):
    pytest.importorskip("hatchling")
    monkeypatch.syspath_prepend(str(ROOT))
    import hatch_build  # type: ignore[import-not-found]

    package = tmp_path / "tensorkit" / "ops"
    package.mkdir(parents=True)
    for name in ("binary.py", "binary.cpython-311-x86_64-linux-gnu.so", "_cffi_thing.abi3.so"):
        (package / name).write_text("")
    (tmp_path / hatch_build.MANIFEST).write_text("{}")
    hatch_build._remove_builds(tmp_path)
    assert sorted(p.name for p in package.iterdir()) == ["_cffi_thing.abi3.so", "binary.py"]
    assert not (tmp_path / hatch_build.MANIFEST).exists()
