"""A failing rank ends every rank fast, with its traceback; DETAIL mode names mismatched
calls; a timeout raises instead of hanging; the launcher's exit codes."""

from __future__ import annotations

import io
import os

import pytest
from dist_launch import launch

import tensorkit.distributed.run as launcher

pytestmark = pytest.mark.xdist_group("distributed")


def test_a_raising_rank_ends_every_rank_within_seconds_with_its_traceback() -> None:
    run = launch(["tests/distributed/programs/failures.py", "raise"], 3, timeout=30)
    assert run.returncode == 1
    assert run.seconds < 10, run.seconds
    assert "[rank 1] uncaught exception; ending every rank:" in run.stderr
    assert 'raise ValueError("boom on rank 1")' in run.stderr
    assert "ValueError: boom on rank 1" in run.stderr
    assert "finished" not in run.stdout  # rank 0 and 2 never got past their all_reduce
    assert "failed on at least one of 3 ranks" in run.stderr


def test_a_rank_exiting_with_an_error_code_ends_the_others() -> None:
    run = launch(["tests/distributed/programs/failures.py", "exit"], 2, timeout=30)
    assert run.returncode == 1 and run.seconds < 10
    assert "mpiexec exit code 3" in run.stderr


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "shapes",
            [
                "rank 0 runs all_reduce(op=SUM) float32[2, 3]",
                "rank 1 runs all_reduce(op=SUM) float32[3, 3]",
            ],
        ),
        (
            "dtypes",
            ["rank 0 runs broadcast(src=0) float32[4]", "rank 1 runs broadcast(src=0) int64[4]"],
        ),
    ],
)
def test_detail_mode_names_each_ranks_call_when_they_differ(mode: str, expected: list[str]) -> None:
    env = {"TENSORKIT_DISTRIBUTED_DEBUG": "DETAIL"}
    run = launch(["tests/distributed/programs/failures.py", mode], 2, timeout=30, env=env)
    assert run.returncode == 1
    assert "RuntimeError: Detected mismatch between collectives on ranks of group 0" in run.stderr
    for text in expected:
        assert text in run.stderr, run.stderr


def test_a_collective_past_its_timeout_raises() -> None:
    run = launch(["tests/distributed/programs/failures.py", "timeout"], 2, timeout=30)
    assert run.returncode == 1
    assert run.seconds < 4, run.seconds  # rank 1 sleeps 5 s: rank 0 gave up after 0.5 s
    assert (
        "DistBackendError: Watchdog caught collective operation timeout: all_reduce" in run.stderr
    )
    assert "(rank 0 of 2, group 0, mpi) ran for" in run.stderr


def test_launcher_exit_codes_and_environment() -> None:
    run = launch(["tests/distributed/programs/failures.py", "ok"], 2, timeout=30)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("finished") == 2
    for rank in (0, 1):
        assert f"env RANK={rank} WORLD_SIZE=2 LOCAL_RANK={rank} LOCAL_WORLD_SIZE=2" in run.stdout
    usage = launch(["script.py"], 0, timeout=30)
    assert usage.returncode == 2 and "--nproc-per-node must be at least 1" in usage.stderr
    missing = launch(["tests/distributed/programs/no_such_file.py"], 1, timeout=30)
    assert missing.returncode == 1 and "No such file or directory" in missing.stderr
    module = launch(["-m", "tensorkit.distributed._env_probe"], 2, timeout=30)
    assert (
        module.returncode == 1
        and "No module named tensorkit.distributed._env_probe" in module.stderr
    )


def test_launcher_without_mpiexec_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(launcher, "find_mpiexec", lambda: None)
    assert launcher.main(["--nproc-per-node", "2", "script.py"]) == 2
    assert "pip install 'tensorkit[distributed]'" in capsys.readouterr().err


def test_launcher_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    args = launcher.parse_args(["--nproc-per-node", "2", "-m", "pkg.mod", "--lr", "1"])
    cmd = launcher.command(args, "/bin/mpiexec")
    assert cmd[:3] == ["/bin/mpiexec", "-n", "2"]
    assert cmd[-5:] == ["tensorkit.distributed._rank", "-m", "pkg.mod", "--lr", "1"]
    assert launcher.environment(2)["OMP_NUM_THREADS"] == str(
        max(1, len(os.sched_getaffinity(0)) // 2)
    )


def test_a_ranks_report_goes_to_its_error_file_under_the_launcher(tmp_path, monkeypatch) -> None:
    """Under the launcher a rank's traceback is written to its error file (fsynced before the
    abort), which the launcher prints once mpiexec returns; without it, to stderr."""
    from tensorkit.distributed import _rank

    monkeypatch.setenv(_rank.ERROR_DIR, str(tmp_path))
    monkeypatch.setenv("RANK", "1")
    _rank.report("[rank 1] uncaught exception; ending every rank:\nValueError: boom\n")
    assert (tmp_path / "rank_1.txt").read_text().endswith("ValueError: boom\n")
    monkeypatch.delenv(_rank.ERROR_DIR)
    captured = io.StringIO()
    monkeypatch.setattr("sys.stderr", captured)
    _rank.report("to stderr\n")
    assert captured.getvalue() == "to stderr\n"
