"""Anomaly detection: ``detect_anomaly()`` remembers where each forward op was called and makes
a NaN or inf produced in backward raise an error that shows that place.

It is an op observer like any other (``_state.add_observer``): each recorded op's event gives
it the new node, whose forward stack it keeps, and each backward step its gradients, which it
checks. Being an op-level observer, it makes the engine run every node on Tensors.
"""

from __future__ import annotations

import traceback
from typing import Any

from .. import _state
from .._callsite import is_package_file

__all__ = [
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
]


def is_anomaly_enabled() -> bool:
    return _state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return _state.anomaly_check_nan


class detect_anomaly:  # noqa: N801
    """Context manager (and decorator): check every backward result for NaN and inf."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self._saved = (_state.anomaly, _state.anomaly_check_nan)
        _set_mode(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        _set_mode(*self._saved)

    def __call__(self, func: Any) -> Any:
        import functools

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return func(*args, **kwargs)

        return wrapper


class set_detect_anomaly(detect_anomaly):  # noqa: N801
    """Turn anomaly detection on or off, for the duration of a ``with`` block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__(check_nan)
        self.mode = mode

    def __enter__(self) -> None:
        self._saved = (_state.anomaly, _state.anomaly_check_nan)
        _set_mode(self.mode, self.check_nan)


class AnomalyObserver:
    """The observer anomaly mode adds while it is on (one for the process)."""

    def op_started(self, event: Any) -> None:
        pass

    def op_finished(self, event: Any) -> None:
        if event.node is not None:
            remember_forward_trace(event.node)

    def backward_step(self, step: Any) -> None:
        check_gradients(step.node, step.grads_out)


_OBSERVER = AnomalyObserver()


def _set_mode(enabled: bool, check_nan: bool) -> None:
    """Turn anomaly mode on or off: the flags ``is_anomaly_enabled`` reads, and the observer."""
    _state.anomaly, _state.anomaly_check_nan = enabled, check_nan
    active = _OBSERVER in _state.observers
    if enabled and not active:
        _state.add_observer(_OBSERVER)
    elif not enabled and active:
        _state.remove_observer(_OBSERVER)


def remember_forward_trace(node: Any) -> None:
    """Store the user's stack at the time the forward op ran (tensorkit's own frames dropped)."""
    frames = [f for f in traceback.extract_stack()[:-1] if not is_package_file(f.filename)]
    node.metadata["traceback_"] = "".join(traceback.format_list(frames))


def check_gradients(node: Any, grads: tuple) -> None:
    if not _state.anomaly_check_nan:
        return
    for index, g in enumerate(grads):
        if g is None or g._data.dtype.kind not in "fc":
            continue
        xp = g.device.xp
        if not bool(xp.isfinite(g._data).all()):
            what = "nan" if bool(xp.isnan(g._data).any()) else "inf"
            trace = node.metadata.get("traceback_")
            where = (
                f"\nThe forward call that created this node was:\n{trace}"
                if trace
                else "\n(No forward trace: the op was recorded before detect_anomaly was on.)"
            )
            raise RuntimeError(
                f"Function '{node.name()}' returned {what} values in its {index}th output." + where
            )
