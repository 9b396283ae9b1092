"""DistributedDataParallel on real ranks (programs/ddp.py checks inside the ranks), and the
digits example under the launcher."""

from __future__ import annotations

import re

import pytest
from dist_launch import assert_passed, launch

pytestmark = pytest.mark.xdist_group("distributed")


@pytest.mark.parametrize("nproc", [2, 3])
def test_ddp_gradients_match_one_process_over_the_whole_batch(nproc: int) -> None:
    run = launch("ddp.py", nproc)
    assert_passed(run, nproc)
    for part in (
        "matches single process",
        "no_sync",
        "grad ownership",
        "unused parameters",
        "state and buffers",
    ):
        assert run.stdout.count(f"ok {part}") == nproc, run.stdout


def test_digits_ddp_example_learns_and_rank_0_saves_the_checkpoint(tmp_path) -> None:
    pytest.importorskip("sklearn", reason="the digits example needs scikit-learn")
    pytest.importorskip("tqdm", reason="the digits example needs tqdm")
    from tensorkit.examples import digits

    path = tmp_path / "digits_ddp.safetensors"
    args = ["-m", "tensorkit.examples.digits_ddp", "--epochs", "3", "--checkpoint", str(path)]
    run = launch(args, 2, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    accuracy = float(re.search(r"test accuracy ([\d.]+)%", run.stdout).group(1))
    assert accuracy > 90, run.stdout
    assert run.stdout.count("test accuracy") == 1  # rank 0 only
    assert "rank 1 epoch 3/3" in run.stderr and "rank 0 epoch 3/3" in run.stderr
    model, checkpoint = digits.load_model(path)
    assert checkpoint["epoch"] == 3
    assert next(iter(model.state_dict())) == "features.0.weight"  # the inner module's keys


@pytest.mark.torch
def test_ddp_gradients_match_torch_gloo_ddp() -> None:
    pytest.importorskip("torch", reason="compares against torch's DDP")
    run = launch("torch_ddp.py", 2, timeout=120)
    assert_passed(run, 2)
