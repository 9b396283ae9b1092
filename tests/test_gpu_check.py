"""scripts/gpu_check.sh picks the project's .venv when there is one (else python3 from the
path) and says what it needs when a package is missing. Run here on a copy of the script with
stand-in ``python`` and ``nvidia-smi`` programs that log how they were called."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.sh"
pytestmark = pytest.mark.skipif(
    os.name != "posix" or shutil.which("bash") is None, reason="a bash script"
)


def _stand_in_python(path: Path, missing: str, log: Path) -> None:
    """A ``python`` that logs each call (one line each), reports ``missing`` modules to the
    script's check and succeeds at everything else."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "#!/bin/sh\n"
        f'echo "$0 $*" | tr "\\n" " " >> "{log}"; echo >> "{log}"\n'
        'case "$*" in *find_spec*) echo "' + missing + '";; esac\n'
        "exit 0\n"
    )
    path.chmod(0o755)


def _repository(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A folder with the script in scripts/, a bin/ with a stand-in nvidia-smi first on the
    PATH, and the environment to run it in."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "scripts" / "gpu_check.sh")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'Stand-in GPU, 1 MiB, 0.0'\n")
    smi.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    return root, bin_dir, env


def _run(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(root / "scripts" / "gpu_check.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_uses_the_projects_venv_for_every_step(tmp_path: Path) -> None:
    root, bin_dir, env = _repository(tmp_path)
    log = tmp_path / "calls.log"
    _stand_in_python(root / ".venv" / "bin" / "python", "", log)
    _stand_in_python(bin_dir / "python3", "", tmp_path / "python3.log")
    result = _run(root, env)
    assert result.returncode == 0, result.stderr
    assert "python: .venv/bin/python" in result.stdout and "Stand-in GPU" in result.stdout
    calls = log.read_text().splitlines()
    assert sum(" -m pytest " in call for call in calls) == 5
    assert any("tests/extensions/test_cuda_extension_gpu.py" in call for call in calls)
    assert any("bench/bench_jit.py --gelu-gpu" in call for call in calls)
    assert any("bench/bench_gpu.py --markdown" in call for call in calls)
    values = [i for i, call in enumerate(calls) if call.endswith("bench/cudnn_values.py ")]
    bench = [i for i, call in enumerate(calls) if "bench/bench_gpu.py" in call]
    assert len(values) == 1 and values[0] < bench[0]  # the values check, before the benchmark
    assert "cudnn_values.py exit 0; " in result.stdout.splitlines()[-1]  # the table row
    assert all(call.startswith(".venv/bin/python ") for call in calls)
    assert not (tmp_path / "python3.log").exists()


def test_says_what_the_venv_lacks(tmp_path: Path) -> None:
    root, _, env = _repository(tmp_path)
    _stand_in_python(root / ".venv" / "bin" / "python", "cupy", tmp_path / "calls.log")
    result = _run(root, env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "gpu_check.sh: .venv/bin/python lacks: cupy",
        "It needs NumPy, CuPy (the cuda extra, CUDA 12) and pytest (the test extra). Install "
        "them with",
        "  .venv/bin/python -m pip install -e '.[cuda,test]'",
    ]
    assert "Stand-in GPU" not in result.stdout  # it stopped before running anything


def test_without_a_venv_uses_python3_with_the_source_tree_on_the_path(tmp_path: Path) -> None:
    root, bin_dir, env = _repository(tmp_path)
    log = tmp_path / "calls.log"
    _stand_in_python(bin_dir / "python3", "", log)
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    result = _run(root, env)
    assert result.returncode == 0, result.stderr
    assert "python: python3" in result.stdout
    assert all(call.startswith(f"{bin_dir}/python3 ") for call in log.read_text().splitlines())

    _stand_in_python(bin_dir / "python3", "cupy pytest", log)
    result = _run(root, env)
    assert result.returncode == 2
    assert "gpu_check.sh: python3 lacks: cupy pytest" in result.stderr
    assert "python3 -m pip install -e '.[cuda,test]'" in result.stderr
    assert "make test TEST_EXTRAS=test,cuda" in result.stderr


def test_the_source_tree_is_on_the_path(tmp_path: Path) -> None:
    root, _, env = _repository(tmp_path)
    probe = root / ".venv" / "bin" / "python"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        f'#!/bin/sh\necho "$PYTHONPATH" >> "{tmp_path / "paths.log"}"\n'
        'case "$*" in *find_spec*) echo "";; esac\n'
    )
    probe.chmod(0o755)
    assert _run(root, {**env, "PYTHONPATH": "/extra"}).returncode == 0
    assert set((tmp_path / "paths.log").read_text().split()) == {".:/extra"}
