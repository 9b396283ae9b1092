"""Numbers as the workbench views show them: 3 significant digits, times in ns/µs/ms/s and
bytes in B/KiB/MiB/GiB. The Python twin of ``widgets/src/format.js`` (``numberText``,
``timeText``, ``bytesText``, ``measureText``), so that the static HTML fallbacks read exactly
as the widgets do; both round half away from zero, as JavaScript's ``toPrecision`` does.
In the core, as the profiler's plots use it; ``tensorkit.notebook.numbers`` re-exports it.

The profiler's ``key_averages().table()`` keeps PyTorch's own format on purpose and does not
use this module.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = [
    "DIGITS",
    "bytes_text",
    "bytes_unit",
    "measure_text",
    "number_text",
    "time_text",
    "time_unit",
]

#: Significant digits of every number the workbench shows.
DIGITS = 3
_TIME_UNITS = ((1, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s"))
_BYTE_UNITS = ((1, "B"), (1 << 10, "KiB"), (1 << 20, "MiB"), (1 << 30, "GiB"))


def number_text(value: Any) -> str:
    """``value`` in 3 significant digits, trailing zeros dropped ("0.123", "1.5", "12300");
    integers stay whole ("12345"); "nan", "inf", "-inf" for non-finite numbers; anything that
    is not a number as ``str``; "" for None."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if float(value).is_integer() and abs(value) < 1e21:
        return str(int(value))
    rounded = _round(value)
    if rounded == 0:
        return "0"
    if abs(rounded) >= 1e21 or abs(rounded) < 1e-4:
        mantissa, exponent = f"{rounded:.{DIGITS - 1}e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        power = int(exponent)
        return f"{mantissa}e{'+' if power >= 0 else '-'}{abs(power)}"
    return str(int(rounded)) if rounded.is_integer() else repr(rounded)


def time_text(ns: float | None) -> str:
    """A duration given in nanoseconds: "0 ns", "850 ns", "194 µs", "1.5 ms", "12.3 s"."""
    return _unit_text(ns, _TIME_UNITS)


def bytes_text(n: float | None) -> str:
    """A byte count in 1024-based units: "0 B", "144 KiB", "-1.5 MiB" (freed), "2 GiB"."""
    return _unit_text(n, _BYTE_UNITS)


def measure_text(value: float | None, unit: str) -> str:
    """``value`` by its unit: "s" (given in ns) as :func:`time_text`, "B" as
    :func:`bytes_text`, "" as :func:`number_text`."""
    if unit == "s":
        return time_text(value)
    if unit == "B":
        return bytes_text(value)
    if unit == "":
        return number_text(value)
    raise ValueError(f"unit must be 's' (nanoseconds), 'B' (bytes) or '', got {unit!r}")


def time_unit(ns: float) -> tuple[float, str]:
    """The unit that :func:`time_text` would write ``ns`` in: (nanoseconds per unit, name),
    for an axis whose largest value is ``ns``."""
    return _unit(ns, _TIME_UNITS)


def bytes_unit(n: float) -> tuple[float, str]:
    """The unit that :func:`bytes_text` would write ``n`` in: (bytes per unit, name)."""
    return _unit(n, _BYTE_UNITS)


def _unit(value: float, units: tuple[tuple[float, str], ...]) -> tuple[float, str]:
    text = _unit_text(value if math.isfinite(value) else 0, units)
    name = text.rsplit(" ", 1)[1]
    return next(unit for unit in units if unit[1] == name)


def _round(value: float) -> float:
    """``value`` rounded to ``DIGITS`` significant digits, halves away from zero."""
    if value == 0:
        return 0.0
    exact = Decimal(value)
    step = Decimal(1).scaleb(exact.adjusted() - (DIGITS - 1))
    return float(exact.quantize(step, rounding=ROUND_HALF_UP))


def _unit_text(value: float | None, units: tuple[tuple[float, str], ...]) -> str:
    """``value`` in the largest unit that keeps it at 1 or more, in ``DIGITS`` digits; a value
    that rounds to 1000 moves up a unit (999.5 ns is "1 µs"); the largest unit takes any size,
    in whole units from 1000 on."""
    if value is None:
        return ""
    if not math.isfinite(value):
        return number_text(value)
    n = 0
    while n + 1 < len(units) and abs(value) >= units[n + 1][0]:
        n += 1
    scaled = _round(value / units[n][0])
    if abs(scaled) >= 1000 and n + 1 < len(units):
        n += 1
        scaled = _round(value / units[n][0])
    if abs(scaled) >= 1000:
        text = str(math.floor(value / units[n][0] + 0.5))  # as JavaScript's Math.round
    else:
        text = number_text(scaled)
    return f"{text} {units[n][1]}"
