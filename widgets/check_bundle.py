"""Check that the committed widget bundles in tensorkit/notebook/static match widgets/src.

With node and the pinned esbuild installed (``npm --prefix widgets ci``), the bundles are
rebuilt into a temporary directory and compared byte for byte. Otherwise (as in CI without
node) the SHA-256 of widgets/src recorded in each bundle's header is compared with the
sources' current hash, computed as ``widgets/build.mjs`` does, and the header's esbuild
version with the one pinned in ``widgets/package.json``.

Run: python widgets/check_bundle.py [--hash-only]   (exit status 1 when stale)
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
STATIC = HERE.parent / "tensorkit" / "notebook" / "static"
BUNDLES = (
    "graph.js",
    "stepper.js",
    "profile.js",
    "replay.js",
    "widgets.css",
    "recording_view.js",
)
HEADER = re.compile(
    r"^/\* tensorkit widgets bundle: esbuild (\S+), widgets/src sha256=([0-9a-f]{64}) \*/"
)


def source_hash(src: Path = SRC) -> str:
    """SHA-256 over the files under ``src`` sorted by relative path: path, NUL, content, NUL."""
    digest = hashlib.sha256()
    for path in sorted(p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()):
        digest.update(path.encode())
        digest.update(b"\0")
        digest.update((src / path).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def pinned_esbuild() -> str:
    """The exact esbuild version in widgets/package.json."""
    return json.loads((HERE / "package.json").read_text())["devDependencies"]["esbuild"]


def check_hashes(static: Path = STATIC) -> list[str]:
    """Problems found by comparing each bundle's header with the sources and the pin."""
    problems = []
    expected = source_hash()
    for name in BUNDLES:
        path = static / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        match = HEADER.match(path.read_text(encoding="utf-8"))
        if match is None:
            problems.append(f"{name}: no bundle header")
        elif match[1] != pinned_esbuild():
            problems.append(f"{name}: built with esbuild {match[1]}, pinned {pinned_esbuild()}")
        elif match[2] != expected:
            problems.append(
                f"{name}: built from other sources (rebuild: npm --prefix widgets run build)"
            )
    return problems


def can_rebuild() -> bool:
    """Whether node and the pinned esbuild (widgets/node_modules) are available."""
    package = HERE / "node_modules" / "esbuild" / "package.json"
    if shutil.which("node") is None or not package.is_file():
        return False
    return json.loads(package.read_text())["version"] == pinned_esbuild()


def check_rebuild(static: Path = STATIC) -> list[str]:
    """Problems found by rebuilding into a temporary directory and comparing the bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["node", str(HERE / "build.mjs"), tmp], check=True)
        problems = []
        for name in BUNDLES:
            fresh = (Path(tmp) / name).read_bytes()
            committed = static / name
            if not committed.is_file() or committed.read_bytes() != fresh:
                problems.append(f"{name}: differs from a fresh build")
        return problems


def main(argv: list[str]) -> int:
    rebuild = "--hash-only" not in argv and can_rebuild()
    problems = check_rebuild() if rebuild else check_hashes()
    how = "rebuilt and compared" if rebuild else "source hash compared"
    for problem in problems:
        print(f"stale bundle: {problem}", file=sys.stderr)
    print(f"widget bundles ({how}): {'STALE' if problems else 'current'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
