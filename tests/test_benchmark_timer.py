"""tensorkit.utils.benchmark.Timer and Measurement."""

from __future__ import annotations

import pytest

import tensorkit as tk
from tensorkit.utils.benchmark import Measurement, Timer


def test_timeit_counts_and_repr() -> None:
    timer = Timer("y = x * 2", setup="x = tk.ones(8)", globals={"tk": tk}, label="mul")
    m = timer.timeit(200)
    assert isinstance(m, Measurement)
    assert m.number_per_run == 200 and len(m.times) == 1
    assert m.times[0] == pytest.approx(m.raw_times[0] / 200)
    assert m.median == m.times[0] > 0  # one measurement: its per-run time
    text = repr(m)
    assert "mul" in text and "y = x * 2" in text and "Time:" in text
    assert "1 measurement, 200 runs per measurement, 1 thread" in text


def test_blocked_autorange_statistics() -> None:
    m = Timer("sum(range(100))", description="builtin").blocked_autorange(min_run_time=0.05)
    assert sum(m.raw_times) >= 0.05 and len(m.times) >= 2
    assert min(m.times) <= m.median <= max(m.times)
    assert min(m.times) <= m.mean <= max(m.times)
    assert 0 <= m.iqr <= max(m.times) - min(m.times)
    text = repr(m)
    assert "Median:" in text and "IQR:" in text and "builtin" in text


def test_blocked_autorange_sizes_blocks_by_powers_of_ten_to_reach_10_ms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a fake clock where every execution takes 0.3 ms: 1 and 10 executions stay under
    10 ms, 100 reach it, so every block runs 100 times until 50 ms are measured."""
    calls: list[int] = []

    def fake_block(self: Timer, number: int) -> float:
        calls.append(number)
        return number * 3e-4

    monkeypatch.setattr(Timer, "_block", fake_block)
    m = Timer("pass").blocked_autorange(min_run_time=0.05)
    assert calls == [1, 10, 100, 100, 100]
    assert m.number_per_run == 100 and m.raw_times == [pytest.approx(0.03)] * 2
    assert m.median == pytest.approx(3e-4)


def test_adaptive_autorange_stops() -> None:
    m = Timer("pass").adaptive_autorange(threshold=0.5, max_run_time=1.0)
    assert len(m.times) >= 3
    assert m.iqr <= 0.5 * m.median or sum(m.raw_times) >= 1.0


def test_statement_uses_globals_and_setup() -> None:
    seen: list[int] = []
    Timer("seen.append(n)", setup="n = 3", globals={"seen": seen}).timeit(5)
    assert seen and set(seen) == {3}


def test_quantile_formatting_units() -> None:
    m = Measurement(1, [1e-3, 2e-3, 3e-3, 4e-3], "stmt")
    assert m.median == pytest.approx(2.5e-3)
    assert m.iqr == pytest.approx(1.5e-3)
    assert "Median: 2.50 ms" in repr(m)
    assert "IQR:    1.50 ms (1.75 to 3.25)" in repr(m)
