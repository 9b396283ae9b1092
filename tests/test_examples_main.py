"""The main job (examples/digits.py) and the character language model (examples/charlm.py)
run, learn, and do what their output says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import tensorkit as tk

pytest.importorskip("sklearn", reason="the digits example needs scikit-learn")
pytest.importorskip("tqdm", reason="the digits example needs tqdm")

from tensorkit.examples import charlm, digits

# Two worker processes, as the example's default, unless this machine has a single CPU (the
# DataLoader then warns, and the suite turns tensorkit's warnings into errors).
WORKERS = str(min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2))


def test_digits_short_run_learns_and_the_checkpoint_reloads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run" / "digits.safetensors"
    result = digits.run(
        digits.parse_args(["--epochs", "3", "--workers", WORKERS, "--checkpoint", str(path)])
    )

    assert result.accuracy > 0.90
    assert result.reloaded_accuracy == result.accuracy
    assert result.epoch_losses[-1] < result.epoch_losses[0]
    *_, saved, summary = capsys.readouterr().out.strip().splitlines()
    assert saved == f"checkpoint (epoch 3) saved to {path}"
    assert re.fullmatch(
        r"test accuracy (\d+\.\d\d)% \(reloaded checkpoint: \1%\) in \d+\.\d s", summary
    ), summary

    checkpoint = tk.load(path)
    assert set(checkpoint) == {"model", "optimizer", "scheduler", "epoch"}
    assert checkpoint["epoch"] == 3
    model = digits.DigitsCNN()
    assert set(checkpoint["model"]) == set(model.state_dict())
    assert checkpoint["optimizer"]["state"]  # Adam's moments were saved
    assert checkpoint["scheduler"]["last_epoch"] == 3 * 45  # 1437 digits in batches of 32


def test_digits_is_deterministic_for_a_seed() -> None:
    args = ["--epochs", "1", "--seed", "3", "--workers", WORKERS]
    first = digits.run(digits.parse_args(args))
    second = digits.run(digits.parse_args(args))
    assert first.epoch_losses == second.epoch_losses
    assert first.accuracy == second.accuracy


def test_digits_split_is_stratified_and_disjoint() -> None:
    train_set, test_set = digits.make_datasets(seed=0)
    assert (len(train_set), len(test_set)) == (1437, 360)
    counts = Counter(test_set.labels.tolist())
    assert sorted(counts) == list(range(10))
    assert (
        min(counts.values()) >= 35 and max(counts.values()) <= 37
    )  # each digit is about a tenth of the test set
    train_rows = {tuple(row) for row in train_set.images.reshape(-1, 64).tolist()}
    test_rows = [tuple(row) for row in test_set.images.reshape(-1, 64).tolist()]
    overlap = sum(row in train_rows for row in test_rows)
    assert overlap <= 3  # load_digits has a few exact duplicates; a leaky split would have 360


DIGITS = [sys.executable, "-m", "tensorkit.examples.digits", "--epochs", "2", "--workers", "0"]


def test_digits_progress_in_a_log_is_one_line_per_epoch_on_stderr() -> None:
    result = subprocess.run(DIGITS, capture_output=True, text=True, timeout=300, check=True)
    assert result.stdout.strip().splitlines()[-1].startswith("test accuracy ")
    assert "epoch 1/2" not in result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    for epoch, line in enumerate(lines, 1):
        pattern = rf"epoch {epoch}/2: 45 batches in \d+\.\d s, loss=\d\.\d{{4}}, acc=\d+\.\d\d%"
        assert re.fullmatch(pattern, line), line
    assert "\r" not in result.stderr and len(result.stderr) < 200


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")
def test_digits_progress_on_a_terminal_is_a_tqdm_bar() -> None:
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # 120 columns
    chunks = []
    try:
        child = subprocess.Popen(DIGITS, stdout=subprocess.PIPE, stderr=follower)
        os.close(follower)
        while True:  # read as it comes: a full terminal buffer would block the child
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        stdout, _ = child.communicate(timeout=300)
    finally:
        os.close(leader)
    assert child.returncode == 0
    bar = b"".join(chunks).decode()
    assert "epoch 2/2: 100%" in bar and "45/45" in bar and "batch/s" in bar and "acc=" in bar
    assert "batches in" not in bar  # not the log's line
    assert b"test accuracy" in stdout


def test_charlm_loss_falls_well_below_the_unigram_entropy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = charlm.parse_args(["--steps", "300", "--print-every", "100", "--sample-length", "80"])
    result = charlm.train(args)

    steps = [step for step, _, _ in result.losses]
    assert steps == [100, 200, 300]
    first, last = result.losses[0], result.losses[-1]
    assert last[1] < first[1]
    assert last[1] < result.unigram_entropy - 0.5  # it uses the context, not just frequencies
    assert last[2] < result.unigram_entropy - 0.4  # on text it never trained on too
    assert len(result.sample) == 80
    assert set(result.sample) <= set(result.vocabulary.chars)
    out = capsys.readouterr().out
    assert "unigram entropy" in out and result.sample in out


def test_charlm_text_and_vocabulary_round_trip() -> None:
    text = charlm.load_text()
    assert "tensorkit" in text and len(text) > 10_000
    assert len(text) == charlm.TEXT_LIMIT == 150_000, "charlm's docstring says 150,000"
    vocabulary = charlm.Vocabulary(text)
    ids = vocabulary.encode(text[:500])
    assert ids.dtype == tk.int64
    assert vocabulary.decode(ids.tolist()) == text[:500]
    assert 2.5 < charlm.unigram_entropy(text) < 4.0
