"""Checks of optimizer hyper-parameters, raising PyTorch's ValueErrors (which name the value)."""

from __future__ import annotations

from collections.abc import Sequence


def non_negative(label: str, value: float) -> None:
    """``value >= 0``, else ``ValueError("Invalid <label>: <value>")``."""
    if not value >= 0.0:
        raise ValueError(f"Invalid {label}: {value}")


def in_unit_interval(label: str, value: float) -> None:
    """``0 <= value <= 1``, else ``ValueError("Invalid <label>: <value>")``."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"Invalid {label}: {value}")


def betas(values: Sequence[float]) -> None:
    """Each beta in ``[0, 1)``."""
    for index, beta in enumerate(values):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {beta}")


def common(lr: float, eps: float | None = None, weight_decay: float = 0.0) -> None:
    """The checks most optimizers share: learning rate, epsilon, weight decay."""
    non_negative("learning rate", lr)
    if eps is not None:
        non_negative("epsilon value", eps)
    non_negative("weight_decay value", weight_decay)


def etas(values: Sequence[float]) -> None:
    """Rprop's ``(etaminus, etaplus)`` with ``0 < etaminus < 1 < etaplus``."""
    if not 0.0 < values[0] < 1.0 < values[1]:
        raise ValueError(f"Invalid eta values: {values[0]}, {values[1]}")


def at_least(label: str, value: float, bound: float) -> None:
    """``value >= bound``, else ``ValueError("<label> should be >= <bound> but is: <value>")``
    (Adafactor's wording)."""
    if not value >= bound:
        raise ValueError(f"{label} should be >= {bound} but is: {value}")


def at_most(label: str, value: float, bound: float) -> None:
    """``value <= bound``, else ``ValueError("<label> should be <= <bound> but is: <value>")``."""
    if not value <= bound:
        raise ValueError(f"{label} should be <= {bound} but is: {value}")
