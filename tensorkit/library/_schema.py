"""A custom op's schema, inferred from its Python function's annotations (as
``torch.library.infer_schema`` does): which parameters are tensors, which are attributes,
what it returns, and the schema text ``(Tensor x, float alpha=1.0) -> Tensor``."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any

from ..tensor import Tensor

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Annotation -> schema type name, for the attribute (non-tensor) parameters.
_SCALARS: dict[Any, str] = {int: "SymInt", float: "float", bool: "bool", str: "str"}
_VALID = (
    "Tensor, Tensor | None, int, float, bool, str, Sequence[int], Sequence[float], "
    "Sequence[bool] (and their | None forms)"
)


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is "tensor" or "attr"; ``type_text`` its schema type."""

    name: str
    kind: str
    type_text: str
    default: Any
    keyword_only: bool
    mutated: bool

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty


@dataclass(frozen=True)
class Schema:
    """What ``infer_schema`` finds: the parameters and how many tensors the op returns
    (``returns`` is 1 for one Tensor, n for a tuple of n, 0 for None)."""

    params: tuple[Param, ...]
    returns: int
    returns_tuple: bool
    signature: inspect.Signature

    @property
    def tensor_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind == "tensor")

    def text(self) -> str:
        parts = []
        star = False
        alias = 0
        for p in self.params:
            if p.keyword_only and not star:
                parts.append("*")
                star = True
            type_text = p.type_text
            if p.mutated:
                type_text = f"Tensor(a{alias}!)" + type_text[len("Tensor") :]
                alias += 1
            default = "" if not p.has_default else f"={_default_text(p.default)}"
            parts.append(f"{type_text} {p.name}{default}")
        if self.returns == 0:
            result = "()"
        elif not self.returns_tuple:
            result = "Tensor"
        else:
            result = "(" + ", ".join(["Tensor"] * self.returns) + ")"
        return f"({', '.join(parts)}) -> {result}"


def _default_text(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_default_text(v) for v in value) + "]"
    return repr(value)


def parse_qualname(qualname: Any) -> tuple[str, str]:
    """``"mylib::name"`` as (namespace, name); raises for anything else."""
    if not isinstance(qualname, str):
        raise TypeError(f"custom_op: name must be a str, got {type(qualname).__name__}")
    namespace, sep, name = qualname.partition("::")
    if not sep:
        raise ValueError(
            f"Expected there to be a namespace in {qualname}, i.e. The operator name should "
            "look something like ns::foo"
        )
    if not _NAME.fullmatch(namespace) or not _NAME.fullmatch(name):
        raise ValueError(
            f"custom_op: {qualname!r} is not of the form 'namespace::name' with identifiers "
            "(letters, digits, underscores)"
        )
    return namespace, name


def infer_schema(fn: Callable, *, mutates_args: Iterable[str] | str) -> Schema:
    """The schema of ``fn`` from its type annotations; ``mutates_args`` names the tensor
    parameters it writes in place (or is "unknown", which tensorkit does not support)."""
    if mutates_args == "unknown":
        raise ValueError(
            'infer_schema(func): mutates_args="unknown" is not supported by tensorkit: name '
            "the tensor arguments the function writes in place (or pass mutates_args=())"
        )
    if isinstance(mutates_args, str):
        raise TypeError(
            f"infer_schema(func): mutates_args must be an iterable of argument names, got the "
            f"str {mutates_args!r} (write ({mutates_args!r},))"
        )
    mutated = set(mutates_args)
    signature = inspect.signature(fn)
    hints = _type_hints(fn)
    params = []
    for p in signature.parameters.values():
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ValueError(
                f"infer_schema(func): Parameter {p.name} cannot be *args or **kwargs (a "
                "custom op has a fixed list of named parameters)"
            )
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ValueError(f"infer_schema(func): Parameter {p.name} cannot be positional-only")
        if p.name not in hints:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type annotation.")
        kind, type_text = _param_type(p.name, hints[p.name])
        if p.name in mutated and kind != "tensor":
            raise ValueError(
                f"infer_schema(func): mutates_args names {p.name!r}, which is a {type_text}, "
                "not a Tensor"
            )
        params.append(
            Param(
                p.name,
                kind,
                type_text,
                p.default,
                p.kind is inspect.Parameter.KEYWORD_ONLY,
                p.name in mutated,
            )
        )
    unknown = mutated - {p.name for p in params}
    if unknown:
        raise ValueError(
            f"infer_schema(func): mutates_args names {sorted(unknown)}, which are not "
            f"parameters of the function (it takes {[p.name for p in params]})"
        )
    if not any(p.kind == "tensor" for p in params):
        raise ValueError("infer_schema(func): a tensorkit custom op needs a Tensor parameter")
    returns, returns_tuple = _return_type(hints.get("return", inspect.Parameter.empty))
    return Schema(tuple(params), returns, returns_tuple, signature)


def _type_hints(fn: Callable) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except NameError as error:
        raise ValueError(f"infer_schema(func): cannot resolve an annotation: {error}") from None


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is UnionType:
        members = [a for a in typing.get_args(annotation) if a is not NoneType]
        if len(members) == 1 and len(typing.get_args(annotation)) == 2:
            return members[0], True
    return annotation, False


def _param_type(name: str, annotation: Any) -> tuple[str, str]:
    inner, optional = _strip_optional(annotation)
    suffix = "?" if optional else ""
    if inner is Tensor:
        return "tensor", "Tensor" + suffix
    if inner in _SCALARS:
        return "attr", _SCALARS[inner] + suffix
    origin = typing.get_origin(inner)
    if origin in (list, tuple, Sequence, typing.Sequence):
        args = typing.get_args(inner)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            args = args[:1]
        if len(args) == 1 and args[0] in (int, float, bool):
            return "attr", f"{_SCALARS[args[0]]}[]{suffix}"
    raise ValueError(
        f"infer_schema(func): Parameter {name} has unsupported type {annotation}. The valid "
        f"types are: {_VALID}."
    )


def _return_type(annotation: Any) -> tuple[int, bool]:
    if annotation is None or annotation is NoneType:
        return 0, False
    if annotation is Tensor:
        return 1, False
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (tuple, list) and args and all(a is Tensor for a in args):
        return len(args), True
    if annotation is inspect.Parameter.empty:
        raise ValueError("infer_schema(func): the return must have a type annotation.")
    raise ValueError(
        f"infer_schema(func): Return has unsupported type {annotation}. The valid types are: "
        "Tensor, tuple[Tensor, ...] (a fixed number of tensors), None."
    )
