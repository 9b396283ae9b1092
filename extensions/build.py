"""Build tensorkit's JupyterLab extension into tensorkit/labextension, or check that the
committed build matches its sources.

The sources are extensions/ (package.json and its lock, src/, style/) and the widget front
ends it bundles from widgets/src (with widgets/package-lock.json: run ``npm --prefix widgets ci``
too before building). ``build`` runs JupyterLab's own builder from npm (``build-labextension``
of @jupyterlab/builder, in extensions/node_modules after ``npm --prefix extensions ci``)
against the installed JupyterLab's shared packages, then records a SHA-256 of the sources in
``tensorkit/labextension/sources.sha256``. ``check`` rebuilds and compares the files byte for
byte when node and the builder are installed; otherwise (``--hash-only``, or no node, as in
CI) it compares the recorded hash with the sources' current one.

Run: python extensions/build.py build | check [--hash-only]   (check exits 1 when stale)
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUTPUT = REPO / "tensorkit" / "labextension"
HASH_FILE = "sources.sha256"
BUILDER = HERE / "node_modules" / ".bin" / "build-labextension"
SOURCES = (
    HERE / "package.json",
    HERE / "package-lock.json",
    HERE / "install.json",
    HERE / "src",
    HERE / "style",
    REPO / "widgets" / "src",
    REPO / "widgets" / "package-lock.json",  # the widgets' own npm dependencies, bundled too
)


def source_hash() -> str:
    """SHA-256 over the source files, sorted by path from the repository root: path, NUL,
    content, NUL."""
    files = []
    for source in SOURCES:
        files += [source] if source.is_file() else [p for p in source.rglob("*") if p.is_file()]
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(REPO).as_posix()):
        digest.update(path.relative_to(REPO).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def can_build() -> bool:
    """Whether node and @jupyterlab/builder (extensions/node_modules) are installed."""
    return shutil.which("node") is not None and BUILDER.is_file()


def build() -> None:
    """Build the extension into tensorkit/labextension (replacing what was there)."""
    import jupyterlab

    if not can_build():
        raise RuntimeError("building the extension needs node and `npm --prefix extensions ci`")
    core = Path(jupyterlab.__file__).parent / "staging"
    shutil.rmtree(OUTPUT, ignore_errors=True)
    subprocess.run(
        [str(BUILDER), "--core-path", str(core), str(HERE)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    shutil.copy(HERE / "install.json", OUTPUT / "install.json")
    (OUTPUT / HASH_FILE).write_text(source_hash() + "\n")


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def check_hash() -> list[str]:
    """Problems found by comparing the recorded source hash with the sources'."""
    recorded = OUTPUT / HASH_FILE
    if not recorded.is_file():
        return [f"{recorded.relative_to(REPO)} is missing (build: python extensions/build.py)"]
    if recorded.read_text().strip() != source_hash():
        return ["built from other sources (rebuild: python extensions/build.py build)"]
    return []


def check_rebuild() -> list[str]:
    """Problems found by rebuilding and comparing every file; the committed build is put back
    afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        committed = Path(tmp) / "committed"
        shutil.copytree(OUTPUT, committed)
        try:
            build()
            fresh, old = _files(OUTPUT), _files(committed)
        finally:
            shutil.rmtree(OUTPUT, ignore_errors=True)
            shutil.copytree(committed, OUTPUT)
    problems = [f"{name}: not in the committed build" for name in sorted(fresh.keys() - old)]
    problems += [f"{name}: not produced by a fresh build" for name in sorted(old.keys() - fresh)]
    problems += [
        f"{name}: differs from a fresh build"
        for name in sorted(fresh.keys() & old.keys())
        if fresh[name] != old[name]
    ]
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["build"]:
        build()
        print(f"extension built into {OUTPUT.relative_to(REPO)}")
        return 0
    if argv[:1] != ["check"]:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    rebuild = "--hash-only" not in argv and can_build()
    problems = check_rebuild() if rebuild else check_hash()
    how = "rebuilt and compared" if rebuild else "source hash compared"
    for problem in problems:
        print(f"stale extension build: {problem}", file=sys.stderr)
    print(f"JupyterLab extension ({how}): {'STALE' if problems else 'current'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
