"""Smoke test of the custom-op benchmark: a quick tensorkit-only run prints every workload
(the C op built in a temporary extensions folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_extensions.py"


def test_quick_run_prints_every_workload(tmp_path: Path) -> None:
    env = {**os.environ, "TENSORKIT_EXTENSIONS_DIR": str(tmp_path / "extensions")}
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--only", "tensorkit", "--markdown"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    for label in ("SiLU forward, 4k float32", "SiLU forward+backward, 1M float32"):
        assert label in out, f"{label!r} missing from:\n{out}"
    assert "| workload (us) | torch F.silu | numpy floor | tk ops x*sigmoid(x) |" in out
    assert "ERROR" not in out
    assert list((tmp_path / "extensions").glob("fused_silu_*/*.so"))
