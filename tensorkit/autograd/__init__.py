"""Reverse-mode automatic differentiation: the graph, the engine, grad modes, custom
Functions, the Tape, anomaly detection and gradient checks."""

from .anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import BackwardStep, backward, backward_steps, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import AccumulateGrad, Node
from .tape import Tape, TapeEntry, TensorInfo, module_scope

__all__ = [
    "AccumulateGrad",
    "BackwardStep",
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Node",
    "Tape",
    "TapeEntry",
    "TensorInfo",
    "backward",
    "backward_steps",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "module_scope",
    "no_grad",
    "once_differentiable",
    "set_detect_anomaly",
    "set_grad_enabled",
]
