"""The workbench's number format in Python (tensorkit._numbers, which
tensorkit.notebook.numbers re-exports), on the cases that the JavaScript formatter
(widgets/src/format.js) is tested on too, so both read the same."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tensorkit._numbers import (
    bytes_text,
    bytes_unit,
    measure_text,
    number_text,
    time_text,
    time_unit,
)

CASES = json.loads(
    (Path(__file__).resolve().parents[2] / "widgets" / "test" / "number_cases.json").read_text(
        encoding="utf-8"
    )
)
NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
FORMATTERS = {"number": number_text, "time": time_text, "bytes": bytes_text}


@pytest.mark.parametrize(
    ("kind", "value", "text"),
    [(kind, value, text) for kind in FORMATTERS for value, text in CASES[kind]],
)
def test_shared_cases(kind: str, value: float | str, text: str) -> None:
    number = NON_FINITE[value] if isinstance(value, str) else value
    assert FORMATTERS[kind](number) == text


def test_unknown_values_are_empty_and_labels_pass_through() -> None:
    assert number_text(None) == time_text(None) == bytes_text(None) == ""
    assert number_text("nan") == "nan"
    assert number_text(True) == "True"


def test_integral_floats_stay_whole_and_halves_round_away_from_zero() -> None:
    assert number_text(12345.0) == "12345"
    assert number_text(1.125) == "1.13"  # an exact half: up, where round() would go even
    assert number_text(-998.5) == "-999"
    assert time_text(999.5) == "1 µs"
    assert bytes_text(-999.5 * 1024) == "-0.976 MiB"


def test_measure_text_picks_the_formatter_by_unit() -> None:
    assert measure_text(1_500_000, "s") == "1.5 ms"
    assert measure_text(2048, "B") == "2 KiB"
    assert measure_text(0.123456, "") == "0.123"
    with pytest.raises(ValueError, match=r"unit must be 's' \(nanoseconds\), 'B' .* got 'ms'"):
        measure_text(1.0, "ms")


def test_units_for_axes_follow_the_text() -> None:
    assert time_unit(0) == (1, "ns")
    assert time_unit(999.5) == (1e3, "µs")
    assert time_unit(2.5e9) == (1e9, "s")
    assert bytes_unit(144 * 1024) == (1024, "KiB")
    assert bytes_unit(1023488) == (1 << 20, "MiB")
    assert bytes_unit(float("nan")) == (1, "B")


def test_the_notebook_package_reexports_the_core_format() -> None:
    from tensorkit import _numbers
    from tensorkit.notebook import numbers

    assert numbers.number_text is _numbers.number_text
    assert numbers.__all__ == _numbers.__all__
