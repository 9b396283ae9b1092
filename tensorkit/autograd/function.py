"""Custom differentiable ops: subclass ``Function`` with ``forward(ctx, ...)`` and
``backward(ctx, ...)`` static methods and call ``MyOp.apply(...)``, as in PyTorch."""

from __future__ import annotations

from typing import Any

from .. import _state
from ..tensor import Tensor, check_not_inference
from .grad_mode import no_grad
from .graph import Node, edge_of, node_class

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """What ``forward`` leaves for ``backward``: saved tensors and flags."""

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.to_save: tuple = ()
        self.non_differentiable: set[int] = set()
        self.materialize_grads = True
        self.dirty: set[int] = set()
        self.node: Node | None = None

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{type(t).__name__}"
                )
        self.to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        if self.node is None:
            return self.to_save
        return self.node.saved_tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        self.non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors: Tensor) -> None:
        self.dirty.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class _FunctionOp:
    """Adapts a Function subclass to the engine's op interface (name and backward rule)."""

    def __init__(self, function_class: type) -> None:
        self.name = function_class.__name__
        self.node_name = f"{function_class.__name__}Backward"
        self.node_class = node_class(self.node_name)
        self.function_class = function_class

    def backward(self, node: Node, *grads: Tensor) -> tuple:
        ctx = node.attrs["ctx"]
        result = self.function_class.backward(ctx, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        tensor_positions = node.attrs["tensor_positions"]
        expected = len(node.attrs["all_inputs"])
        if len(result) > expected and all(g is None for g in result[expected:]):
            result = result[:expected]  # trailing Nones beyond the inputs are allowed
        if len(result) != expected:
            raise RuntimeError(
                f"function {self.node_name} returned an incorrect number of gradients "
                f"(expected {len(node.attrs['all_inputs'])}, got {len(result)})"
            )
        return tuple(result[i] for i in tensor_positions)


class FunctionMeta(type):
    def __init__(cls, name: str, bases: tuple, namespace: dict) -> None:
        super().__init__(name, bases, namespace)
        cls._op = _FunctionOp(cls)


class Function(metaclass=FunctionMeta):
    """Base class for custom ops. Define ``forward(ctx, *args)`` and ``backward(ctx, *grads)``
    as static methods and call ``apply``; ``backward`` returns one gradient (or None) per
    forward argument."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> Any:
        """Optional: fill ``ctx`` from the inputs and output of a ``forward`` without ctx."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and record one node whose rule is ``backward``. Keyword arguments
        are bound to ``forward``'s parameters and passed by position (with ``setup_context``,
        defaults are filled in too), as in PyTorch."""
        if kwargs or _has_setup_context(cls):
            args = _bind(cls, args, kwargs)
        tensor_positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        tensors = tuple(args[i] for i in tensor_positions)
        needs = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx = FunctionCtx(needs)
        if _state.observing:
            return _observed(cls, ctx, args, tensors, tensor_positions)
        outputs = _forward(cls, ctx, args)
        return _connect(cls, ctx, args, tensors, tensor_positions, outputs)


def _has_setup_context(cls: type) -> bool:
    return cls.setup_context is not Function.setup_context


def _bind(cls: type, args: tuple, kwargs: dict) -> tuple:
    """``args`` and ``kwargs`` as ``forward``'s positional arguments."""
    import inspect

    signature = inspect.signature(cls.forward)
    setup_style = _has_setup_context(cls)
    bound = (
        signature.bind(*args, **kwargs) if setup_style else signature.bind(None, *args, **kwargs)
    )
    if setup_style:
        bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(
            f"forward() got an unexpected keyword argument '{next(iter(bound.kwargs))}'"
        )
    return tuple(bound.args) if setup_style else tuple(bound.args[1:])


def _forward(cls: type, ctx: FunctionCtx, args: tuple) -> Any:
    """Run the user's forward under no_grad (and ``setup_context``, when defined)."""
    with no_grad():
        if not _has_setup_context(cls):
            return cls.forward(ctx, *args)
        outputs = cls.forward(*args)
        cls.setup_context(ctx, args, outputs)
    return outputs


def _observed(cls: type, ctx: FunctionCtx, args: tuple, tensors: tuple, positions: tuple) -> Any:
    """Run under observers as one op event named after the Function class."""
    from ..ops._apply import OpEvent

    event = OpEvent(cls._op, tensors, {})
    event.arguments = args
    observers = _state.observers
    for observer in observers:
        observer.op_started(event)
    import time

    _state.observing = False
    try:
        event.start_ns = time.perf_counter_ns()
        outputs = _forward(cls, ctx, args)
        event.end_ns = time.perf_counter_ns()
        result = _connect(cls, ctx, args, tensors, positions, outputs)
    finally:
        _state.observing = bool(_state.observers)
    event.outputs = result if isinstance(result, tuple) else (result,)
    event.node = ctx.node
    for observer in observers:
        observer.op_finished(event)
    return result


def _connect(
    cls: type, ctx: FunctionCtx, args: tuple, tensors: tuple, positions: tuple, outputs: Any
) -> Any:
    """Wrap the forward's outputs and, if any input requires grad, link them to a new node."""
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    if not (_state.grad_enabled and any(t.requires_grad for t in tensors)):
        return outputs
    edges = tuple(edge_of(t) for t in tensors)
    meta = tuple(
        (t._data.shape, t._data.dtype) if e is not None else None
        for t, e in zip(tensors, edges, strict=True)
    )
    attrs = {
        "ctx": ctx,
        "tensor_positions": positions,
        "all_inputs": args,
        "materialize_grads": ctx.materialize_grads,
    }
    node = cls._op.node_class(cls._op, edges, attrs, meta)
    node.output_meta = tuple(
        (o._data.shape, o._data.dtype) if isinstance(o, Tensor) else ((), None) for o in outs
    )
    input_ids = {id(t) for t in tensors}
    for t in tensors:
        if id(t) in ctx.dirty and t.is_leaf and t.requires_grad:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation."
            )
    wrapped = []
    for nr, out in enumerate(outs):
        if not isinstance(out, Tensor):
            wrapped.append(out)
            continue
        if id(out) in input_ids and id(out) not in ctx.dirty:
            out = out.view_as(out)  # returning an input unchanged: give it its own identity
        if id(out) not in ctx.non_differentiable and out._data.dtype.kind in "fc":
            out.grad_fn = node
            out._output_nr = nr
            out._requires_grad = True
        wrapped.append(out)
    check_not_inference(ctx.to_save)
    node._saved_inputs = tuple((t, t._version) if isinstance(t, Tensor) else t for t in ctx.to_save)
    ctx.node = node
    if _state.anomaly:
        from .anomaly import remember_forward_trace

        remember_forward_trace(node)
    return wrapped[0] if single else tuple(wrapped)


def once_differentiable(backward: Any) -> Any:
    """Mark a ``backward`` as not itself differentiable: it runs under ``no_grad``."""
    import functools

    @functools.wraps(backward)
    def wrapper(ctx: Any, *grads: Any) -> Any:
        with no_grad():
            return backward(ctx, *grads)

    return wrapper
