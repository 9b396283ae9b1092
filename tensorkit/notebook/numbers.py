"""The workbench's number format (3 significant digits, ns/µs/ms/s, B/KiB/MiB/GiB): defined
in :mod:`tensorkit._numbers`, which the core's profiler plots also use."""

from .._numbers import (
    DIGITS,
    bytes_text,
    bytes_unit,
    measure_text,
    number_text,
    time_text,
    time_unit,
)

__all__ = [
    "DIGITS",
    "bytes_text",
    "bytes_unit",
    "measure_text",
    "number_text",
    "time_text",
    "time_unit",
]
