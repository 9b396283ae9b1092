"""``custom_op``: a typed Python function declared as an op of the ``OPS`` table.

A :class:`CustomOpDef` holds an :class:`~tensorkit.ops._apply.OpDef` keyed by its qualified
name ("mylib::name"), so the op takes the path every built-in op takes (``apply``): the Tape
and the profiler see it by that name, the autograd engine (and the stepper) runs its node,
tk.jit captures, replays and saves it as a named node and tk.onnx writes it in the domain
"mylib". The OpDef's inputs are the op's tensor parameters (in order); its other parameters
are the node's attributes, by name.

The OpDef's array forward wraps the arrays as tensors and calls the user's function with no
observer and no tk.jit tracer active (its inner ops are the op's own business), under
``no_grad``. ``register_autograd`` sets the gradient rule; ``setup_context`` runs when the
backward runs, on the saved inputs and outputs (so every input and output is kept, and
checked against in-place changes, while the graph lives).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import _state
from .._backend import device as make_device
from ..autograd.function import FunctionCtx
from ..autograd.grad_mode import no_grad
from ..ops._apply import OPS, SAVE_BOTH, SAVE_NONE, OpDef, apply
from ..tensor import Tensor, wrap
from ._schema import Schema, infer_schema, parse_qualname

__all__ = ["CustomOpDef", "custom_op", "get_op"]

# Every custom op by qualified name (their OpDefs are in OPS under the same key).
_REGISTRY: dict[str, CustomOpDef] = {}


class CustomOpDef:
    """A custom op made by :func:`custom_op`: call it like the function it wraps."""

    def __init__(self, qualname: str, fn: Callable, schema: Schema) -> None:
        self.namespace, self.name = parse_qualname(qualname)
        self.qualname = qualname
        self.fn = fn
        self.schema = schema
        self.fake_fn: Callable | None = None
        self.backward_fn: Callable | None = None
        self.setup_context_fn: Callable | None = None
        self._tensor_names = tuple(p.name for p in schema.tensor_params)
        self._attr_names = tuple(p.name for p in schema.params if p.kind == "attr")
        self._mutated = tuple(p.name for p in schema.params if p.mutated)
        # a call giving every parameter by position needs no binding (none is keyword-only)
        self._positional = (
            len(schema.params) if not any(p.keyword_only for p in schema.params) else -1
        )
        self._names = tuple(p.name for p in schema.params)
        node_name = f"GeneratedBackwardFor_{self.namespace}_{self.name}_defaultBackward"  # torch's
        self.opdef = OpDef(
            qualname,
            self._forward,
            self._no_autograd,
            outputs=-1 if schema.returns_tuple else 1,
            node_name=node_name,
        )
        self.__doc__ = fn.__doc__
        self.__name__ = self.name

    def __repr__(self) -> str:
        return f"<CustomOpDef({self.qualname}) {self.schema.text()}>"

    # ------------------------------------------------------------------ calling
    def bind(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """The call's arguments by parameter name, defaults filled in."""
        try:
            bound = self.schema.signature.bind(*args, **kwargs)
        except TypeError as error:
            raise TypeError(f"{self.qualname}(): {error}") from None
        bound.apply_defaults()
        return bound.arguments

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) != self._positional:
            arguments = self.bind(args, kwargs)
        else:  # every argument given by position: nothing to bind
            arguments = dict(zip(self._names, args, strict=True))
        tensors = []
        for name in self._tensor_names:
            value = arguments[name]
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"{self.qualname}(): argument '{name}' must be a Tensor, got "
                    f"{type(value).__name__}"
                )
            tensors.append(value)
        attrs = {name: arguments[name] for name in self._attr_names}
        if self._mutated:
            return self._call_mutating(tensors, attrs, arguments)
        return apply(self.opdef, *tensors, **attrs)

    def _call_mutating(self, tensors: list, attrs: dict, arguments: dict) -> Any:
        mutated = [(n, arguments[n]) for n in self._mutated if arguments[n] is not None]
        for name, tensor in mutated:
            if tensor.requires_grad and _state.grad_enabled:
                raise RuntimeError(
                    f"{self.qualname}(): argument '{name}' requires grad and the op writes it "
                    "in place (mutates_args); autograd does not support that here"
                )
        tracer = _state.tracer
        if tracer is not None:
            tracer.unsupported(
                f"custom op {self.qualname} writes its arguments {list(self._mutated)} in "
                "place (mutates_args), which tk.jit does not capture"
            )
        result = apply(self.opdef, *tensors, **attrs)
        for _, tensor in mutated:
            tensor.bump_version(self.qualname)
        return None if self.schema.returns == 0 else result

    def _forward(self, xp: Any, *arrays: Any, **attrs: Any) -> Any:
        """The OpDef's array forward: the user's function on tensors wrapping ``arrays``."""
        dev = _device_of(xp, arrays)
        kwargs = dict(attrs)
        for name, array in zip(self._tensor_names, arrays, strict=True):
            kwargs[name] = None if array is None else wrap(array, dev)
        tracer, _state.tracer = _state.tracer, None
        try:
            with no_grad():
                result = self.fn(**kwargs)
        finally:
            _state.tracer = tracer
        return self._result_arrays(result, kwargs)

    def _result_arrays(self, result: Any, kwargs: dict) -> Any:
        schema = self.schema
        if schema.returns == 0:
            if result is not None:
                raise RuntimeError(
                    f"{self.qualname}: the function is annotated to return None but returned "
                    f"{type(result).__name__}"
                )
            # the OpDef needs an array: the first mutated tensor's, which the op wrote
            return kwargs[self._mutated[0]]._data if self._mutated else None
        results = result if schema.returns_tuple else (result,)
        if not isinstance(results, tuple | list) or len(results) != schema.returns:
            raise RuntimeError(
                f"{self.qualname}: the function must return {schema.text().split('-> ')[1]}, "
                f"got {_describe(result)}"
            )
        inputs = {id(t) for t in kwargs.values() if isinstance(t, Tensor)}
        arrays = []
        for nr, out in enumerate(results):
            if not isinstance(out, Tensor):
                raise RuntimeError(
                    f"{self.qualname}: output {nr} must be a Tensor, got {type(out).__name__}"
                )
            if id(out) in inputs:
                raise RuntimeError(
                    f"{self.qualname}: output {nr} is one of the op's inputs; a custom op must "
                    "return new tensors (return x.clone())"
                )
            arrays.append(out._data)
        return tuple(arrays) if schema.returns_tuple else arrays[0]

    # ------------------------------------------------------------------ registration
    def register_fake(self, fn: Callable) -> Callable:
        """Give the op's output shapes and dtypes without running it: ``fn`` takes the same
        arguments (tensors of the right shape, dtype and device whose values are not to be
        read) and returns new tensors such as ``tk.empty_like(x)``."""
        if not callable(fn):
            raise TypeError(f"register_fake({self.qualname}): expected a function, got {fn!r}")
        self.fake_fn = fn
        return fn

    def register_autograd(
        self, backward: Callable, /, *, setup_context: Callable | None = None
    ) -> None:
        """Give the op a gradient: ``backward(ctx, *grads)`` returns one gradient (or None)
        per argument of the op; ``setup_context(ctx, inputs, output)`` saves what it needs
        with ``ctx.save_for_backward`` (and plain attributes on ``ctx``)."""
        if not callable(backward):
            raise TypeError(
                f"register_autograd({self.qualname}): expected the backward to be a function, "
                f"got {backward!r}"
            )
        if setup_context is not None and not callable(setup_context):
            raise TypeError(
                f"register_autograd({self.qualname}): expected setup_context to be a function, "
                f"got {setup_context!r}"
            )
        if self._mutated:
            raise RuntimeError(
                f"register_autograd({self.qualname}): the op writes its arguments in place "
                f"(mutates_args={list(self._mutated)}); tensorkit supports autograd only for "
                "functional custom ops"
            )
        self.backward_fn = backward
        self.setup_context_fn = setup_context

        def rule(node: Any, *grads: Any) -> tuple:
            return self._backward(node, *grads)

        # the stepper and the Tape describe the rule by the user's backward (name, doc, file)
        self.opdef.backward = functools.update_wrapper(rule, backward)
        self.opdef.saves = SAVE_NONE if setup_context is None else SAVE_BOTH

    def _no_autograd(self, node: Any, *grads: Any) -> tuple:
        raise RuntimeError(
            f"Trying to backward through {self.qualname} but no autograd formula was "
            "registered. Please use register_autograd to add one "
            f"(tk.library.register_autograd({self.qualname!r}, backward, setup_context=...)), "
            "or call the op under tk.no_grad()"
        )

    def _backward(self, node: Any, *grads: Any) -> tuple:
        """The OpDef's gradient rule: ``setup_context`` on the saved values, then the user's
        ``backward``; its gradients are mapped back to the tensor inputs."""
        schema = self.schema
        needs = dict(zip(self._tensor_names, node.needs_input_grad, strict=True))
        ctx = FunctionCtx(tuple(needs.get(p.name, False) for p in schema.params))
        if self.setup_context_fn is not None:
            saved = node.saved_tensors
            count = len(self._tensor_names)
            values = dict(zip(self._tensor_names, saved[:count], strict=True))
            values.update(node.attrs)
            outputs = saved[count:]
            inputs = tuple(values[p.name] for p in schema.params)
            output = tuple(outputs) if schema.returns_tuple else outputs[0]
            self.setup_context_fn(ctx=ctx, inputs=inputs, output=output)
        result = self.backward_fn(ctx, *grads)
        if not isinstance(result, tuple | list):
            result = (result,)
        if len(result) != len(schema.params):
            raise RuntimeError(
                f"{self.qualname}: the backward returned {len(result)} gradients, expected one "
                f"per argument of the op ({len(schema.params)}: "
                f"{[p.name for p in schema.params]}; None for those without one)"
            )
        by_name = {}
        for p, g in zip(schema.params, result, strict=True):
            if p.kind == "attr" and g is not None:
                raise RuntimeError(
                    f"{self.qualname}: the backward returned a gradient for '{p.name}', which "
                    f"is a {p.type_text}, not a Tensor (return None for it)"
                )
            if g is not None and not isinstance(g, Tensor):
                raise RuntimeError(
                    f"{self.qualname}: the backward's gradient for '{p.name}' must be a Tensor "
                    f"or None, got {type(g).__name__}"
                )
            by_name[p.name] = g
        return tuple(by_name[name] for name in self._tensor_names)


def _describe(value: Any) -> str:
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)}"
    return type(value).__name__


def _device_of(xp: Any, arrays: tuple) -> Any:
    """The device of an op's arrays (``xp`` NumPy: the CPU; else the CUDA device of the
    first CuPy array, or the current CUDA device)."""
    if xp is np:
        return make_device("cpu")
    for array in arrays:
        if array is not None and not isinstance(array, np.ndarray):
            return make_device("cuda", array.device.id)
    return make_device("cuda")


def custom_op(
    name: str,
    fn: Callable | None = None,
    /,
    *,
    mutates_args: Iterable[str] | str,
    device_types: Any = None,
    schema: str | None = None,
) -> Any:
    """Declare the typed function ``fn`` as the op ``name`` ("namespace::name"), as
    ``torch.library.custom_op`` does; use it as a decorator or call it with ``fn``.

    ``mutates_args`` names the tensor parameters the function writes in place (``()`` for
    none). ``device_types`` and ``schema`` are accepted for PyTorch's sake: tensorkit infers
    the schema from the annotations and runs the one function on every device.
    """
    if schema is not None:
        raise ValueError(
            "custom_op: tensorkit infers the schema from the function's annotations; pass "
            "schema=None"
        )
    del device_types  # one function for every device

    def decorate(fn: Callable) -> CustomOpDef:
        parse_qualname(name)
        if name in _REGISTRY or name in OPS:
            existing = _REGISTRY.get(name)
            text = existing.schema.text() if existing is not None else "(built-in)"
            raise RuntimeError(
                f"Tried to register an operator ({name}{text}) with the same name and "
                "overload name multiple times (tk.library.custom_op was called twice for "
                f"{name!r}; pick another name, or reuse the existing op)"
            )
        inferred = infer_schema(fn, mutates_args=mutates_args)
        if inferred.returns == 0 and not any(p.mutated for p in inferred.params):
            raise ValueError(
                f"custom_op({name!r}): the function returns None and mutates no argument, so "
                "the op would do nothing (return a Tensor, or name what it writes in "
                "mutates_args)"
            )
        op = CustomOpDef(name, fn, inferred)
        _REGISTRY[name] = op
        return op

    return decorate if fn is None else decorate(fn)


def get_op(op: str | CustomOpDef) -> CustomOpDef:
    """The custom op ``op`` names (or ``op`` itself)."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, str):
        found = _REGISTRY.get(op)
        if found is not None:
            return found
        raise ValueError(
            f"no custom op named {op!r} (tk.library.custom_op registers them; known: "
            f"{sorted(_REGISTRY) or 'none'})"
        )
    raise TypeError(f"expected a custom op or its name, got {type(op).__name__}")


def unregister(op: str | CustomOpDef) -> None:
    """Forget a custom op (for tests and notebooks that redefine one)."""
    op = get_op(op)
    del _REGISTRY[op.qualname]
    del OPS[op.qualname]
