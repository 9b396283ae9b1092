"""The runnable examples run and do what they say."""

from __future__ import annotations

import subprocess
import sys

from tensorkit.examples import sine


def test_sine_training_reduces_the_loss():
    x, y = sine.make_data()
    params = sine.init_params()
    before = ((sine.predict(params, x) - y) ** 2).mean().item()
    trained = sine.train(steps=200)
    after = ((sine.predict(trained, x) - y) ** 2).mean().item()
    assert after < before / 10


def test_sine_main_prints_tape_and_backward_steps():
    result = subprocess.run(
        [sys.executable, "-m", "tensorkit.examples.sine"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "fwd matmul(8x1, 1x32) -> 8x32" in result.stdout
    assert "examples/sine.py:" in result.stdout  # call sites point at the example, not tensorkit
    assert "MeanBackward0" in result.stdout and "AccumulateGrad" in result.stdout
