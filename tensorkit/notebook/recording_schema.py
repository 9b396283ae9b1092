"""The schema of a recording file, as tables, and the check of a parsed file against it.

A schema is a Python value: a :class:`Kind` (``STR``, ``INT``, ``NUMBER``, ``BOOL``, ``NULL``,
``ANY``), :class:`Obj` (an object's required and optional keys; keys not listed are allowed, so
newer writers may add fields), :class:`ByKind` (an object's schema chosen by its ``"kind"``),
:class:`ListOf`, :class:`MapOf` (an object of any keys to one schema), or :class:`OneOf` (the
first that fits). :func:`check` walks the data with the schema and raises :class:`SchemaError`
naming the field as a JSON path (``graph.nodes[3].kind``). The walk recurses only where the
schema does, so its depth is the schema's; inside ``ANY`` values :func:`check_depth` bounds
the nesting without recursion.

The tables list what the readers use (the HTML page, the recorded view, the widgets): what they
index is required, what they ``get`` is optional but typed when present. The replay fields of
``backward_steps`` and ``backward_passes`` are checked by
:func:`~tensorkit.notebook.replay.validate_replay`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SchemaError", "check", "check_depth", "recording_schema"]

MAX_DEPTH = 100  # JSON nesting levels; a recording's deepest legitimate value is far less


class SchemaError(Exception):
    """A field that does not fit its schema; ``path`` is where (a JSON path), ``problem`` what
    is wrong."""

    def __init__(self, problem: str, parts: tuple[str, ...] = ()) -> None:
        self.problem = problem
        self.parts = list(parts)  # innermost last; filled in while the walk unwinds
        super().__init__(problem)

    @property
    def path(self) -> str:
        return "".join(self.parts).lstrip(".")

    def __str__(self) -> str:
        return f"{self.path or 'the top level'}: {self.problem}"


@dataclass(frozen=True)
class Kind:
    """A JSON scalar (or anything, for ``ANY``): ``types`` are the Python types JSON parses it
    to; bool is never an int or a number here."""

    name: str
    types: tuple[type, ...]

    def fits(self, value: Any) -> bool:
        if isinstance(value, bool):
            return bool in self.types or object in self.types
        return isinstance(value, self.types)


STR = Kind("a string", (str,))
INT = Kind("an integer", (int,))
NUMBER = Kind("a number", (int, float))
BOOL = Kind("true or false", (bool,))
NULL = Kind("null", (type(None),))
ANY = Kind("any JSON value", (object,))


@dataclass(frozen=True)
class Obj:
    required: dict[str, Any]
    optional: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ListOf:
    item: Any


@dataclass(frozen=True)
class MapOf:
    value: Any


@dataclass(frozen=True)
class OneOf:
    options: tuple[Any, ...]

    def __init__(self, *options: Any) -> None:
        object.__setattr__(self, "options", options)


@dataclass(frozen=True)
class ByKind:
    """An object whose schema depends on its ``"kind"``: ``kinds[kind]``, else ``default``."""

    kinds: dict[str, Obj]
    default: Obj


def nullable(schema: Any) -> OneOf:
    return OneOf(schema, NULL)


def describe(schema: Any) -> str:
    """What a schema expects, in words."""
    if isinstance(schema, Kind):
        return schema.name
    if isinstance(schema, Obj | ByKind):
        return "an object"
    if isinstance(schema, ListOf):
        return "a list"
    if isinstance(schema, MapOf):
        return "an object"
    return " or ".join(describe(option) for option in schema.options)


def _got(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "a list"
    names = {str: "a string", int: "an integer", float: "a number"}
    text = repr(value)
    return f"{names.get(type(value), type(value).__name__)} {text[:40]}"


def check(value: Any, schema: Any, depth: int = 0) -> None:
    """Raise :class:`SchemaError` at the first field of ``value`` that ``schema`` refuses, or
    where ``value`` (at ``depth``) nests deeper than :data:`MAX_DEPTH` levels. Paths are built
    only on the way out of an error, so a valid file costs one walk."""
    if isinstance(schema, Kind):
        if not schema.fits(value):
            raise SchemaError(f"expected {schema.name}, got {_got(value)}")
        if schema is ANY and isinstance(value, dict | list):
            check_depth(value, MAX_DEPTH - depth)
    elif isinstance(schema, Obj):
        if not isinstance(value, dict):
            raise SchemaError(f"expected an object, got {_got(value)}")
        for key, item in schema.required.items():
            if key not in value:
                raise SchemaError(f"missing (expected {describe(item)})", (f".{key}",))
            _inside(value[key], item, depth, f".{key}")
        for key, item in schema.optional.items():
            if key in value:
                _inside(value[key], item, depth, f".{key}")
    elif isinstance(schema, ByKind):
        kind = value.get("kind") if isinstance(value, dict) else None
        check(value, schema.kinds.get(kind, schema.default), depth)
    elif isinstance(schema, ListOf):
        if not isinstance(value, list):
            raise SchemaError(f"expected a list, got {_got(value)}")
        for index, item in enumerate(value):
            _inside(item, schema.item, depth, index)
    elif isinstance(schema, MapOf):
        if not isinstance(value, dict):
            raise SchemaError(f"expected an object, got {_got(value)}")
        for key, item in value.items():
            _inside(item, schema.value, depth, f"[{key!r}]")
    else:
        errors = []
        for option in schema.options:
            if _outer_fits(value, option):
                try:
                    check(value, option, depth)
                except SchemaError as error:
                    errors.append(error)
                else:
                    return
        if errors:  # of the options of its JSON type, report the first one's problem
            raise errors[0]
        raise SchemaError(f"expected {describe(schema)}, got {_got(value)}")


def _inside(value: Any, schema: Any, depth: int, step: str | int) -> None:
    """:func:`check` one level down; an error from there gets ``step`` (``.key``, ``[key]``
    or a list index) put in front of its path."""
    try:
        check(value, schema, depth + 1)
    except SchemaError as error:
        error.parts.insert(0, f"[{step}]" if isinstance(step, int) else step)
        raise


def _outer_fits(value: Any, schema: Any) -> bool:
    """Whether ``value`` is of the JSON type that ``schema`` wants (a scalar kind, an object,
    a list), whatever it holds."""
    if isinstance(schema, Kind):
        return schema.fits(value)
    if isinstance(schema, Obj | MapOf | ByKind):
        return isinstance(value, dict)
    if isinstance(schema, ListOf):
        return isinstance(value, list)
    return any(_outer_fits(value, option) for option in schema.options)


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise :class:`SchemaError` where ``value`` nests lists and objects deeper than
    ``limit`` (iteratively: any depth is safe to check)."""
    stack: list[tuple[Any, int, tuple]] = [(value, 0, ())]
    while stack:
        item, depth, where = stack.pop()
        if depth > limit:
            parts = []
            while where:  # (step, parent's where) links, innermost first
                step, where = where
                parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
            raise SchemaError(f"nested deeper than {MAX_DEPTH} levels", tuple(reversed(parts)))
        if isinstance(item, dict):
            stack.extend((v, depth + 1, (k, where)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, depth + 1, (i, where)) for i, v in enumerate(item))


# ----------------------------------------------------------------------------- the tables
SHAPE = ListOf(INT)
MODULE_PATH = nullable(STR)
TENSOR_INFO = Obj(
    {"shape": SHAPE},
    {
        "id": INT,
        "dtype": STR,
        "device": STR,
        "requires_grad": BOOL,
        "is_leaf": BOOL,
        "nbytes": INT,
        "summary": nullable(MapOf(nullable(NUMBER))),
    },
)
ENTRY = Obj(
    {
        "index": INT,
        "name": STR,
        "phase": STR,
        "inputs": ListOf(OneOf(TENSOR_INFO, Obj({"value": ANY}))),
        "outputs": ListOf(TENSOR_INFO),
        "call_site": nullable(STR),
    },
    {
        "attrs": MapOf(ANY),
        "module_path": MODULE_PATH,
        "grad_fn": nullable(STR),
        "backward_of": nullable(INT),
        "duration_ns": nullable(INT),
        "records": MapOf(ANY),
        "scopes": ListOf(STR),
    },
)
SNIPPET = Obj(
    {"file": STR, "line": INT, "lines": ListOf(Obj({"line": INT, "text": STR}))},
)
NODE = Obj(
    {
        "id": STR,
        "kind": STR,
        "op": nullable(STR),
        "module": STR,
        "shapes": Obj({"in": ListOf(nullable(SHAPE)), "out": ListOf(nullable(SHAPE))}),
    },
    {
        "phase": STR,
        "label": STR,
        "group": STR,
        "dtypes": ListOf(nullable(STR)),
        "device": nullable(STR),
        "call_site": OneOf(STR, NULL, MapOf(ANY)),
        "scopes": ListOf(STR),
        "summary": nullable(MapOf(nullable(NUMBER))),
        "records": MapOf(ANY),
        "grad_fn": nullable(STR),
        "requires_grad": BOOL,
        "attrs": MapOf(ANY),
        "band": INT,
        "backward_of": nullable(STR),
        "grad_of": nullable(STR),
        "metrics": MapOf(OneOf(NUMBER, BOOL, NULL)),  # read as numbers (a flag counts as 0 or 1)
        "depth": INT,
    },
)
GROUP_NODE = Obj(  # a folded module: what the graph draws in its box
    {**NODE.required, "count": INT}, {**NODE.optional, "members": ListOf(STR), "ops": MapOf(INT)}
)
EDGE = Obj({"source": STR, "target": STR, "position": INT}, {"shape": nullable(SHAPE)})
GROUP = Obj(
    {"path": STR, "children": ListOf(STR), "nodes": ListOf(STR), "count": INT},
    {"parent": nullable(STR), "kind": STR, "label": STR, "module": STR},
)
LAYERS = ListOf(ListOf(STR))
GRAPH = Obj(
    {"nodes": ListOf(ByKind({"group": GROUP_NODE}, NODE)), "edges": ListOf(EDGE)},
    {
        "source": STR,
        "links": ListOf(Obj({"source": STR, "target": STR})),
        "groups": MapOf(GROUP),
        "collapsed": ListOf(STR),
        "layout": Obj({}, {"layers": LAYERS, "bands": ListOf(LAYERS)}),
        "omitted": INT,
    },
)
TIMES = MapOf(INT)
PROFILE_ROW = Obj(
    {"index": INT, "name": STR, "phase": STR, "host_time_ns": INT},
    {
        "forward_index": nullable(INT),
        "module": MODULE_PATH,
        "input_shapes": ListOf(nullable(SHAPE)),
        "output_shapes": ListOf(nullable(SHAPE)),
        "input_dtypes": ListOf(nullable(STR)),
        "output_dtypes": ListOf(nullable(STR)),
        "device": nullable(STR),
        "call_site": nullable(STR),
        "function": nullable(STR),
        **{
            key: nullable(INT)
            for key in (
                "gpu_time_ns",
                "alloc_bytes",
                "free_bytes",
                "live_bytes",
                "peak_bytes",
                "reserved_bytes",
            )
        },
    },
)
PROFILE = Obj(
    {
        "timing_mode": STR,
        "total_ops": INT,
        "rows": ListOf(PROFILE_ROW),
        "modules": ListOf(Obj({"module": STR, "count": INT, "host_ns": TIMES}, {"gpu_ns": TIMES})),
    },
    {
        "has": MapOf(BOOL),
        "max_rows": INT,
        "omitted": MapOf(INT),
        "functions": ListOf(
            Obj({"function": STR, "count": INT, "host_ns": TIMES}, {"gpu_ns": TIMES})
        ),
        "memory": nullable(
            Obj(
                {
                    "peak_bytes": INT,
                    "index": ListOf(INT),
                    "allocated": ListOf(INT),
                    "reserved": ListOf(INT),
                    "peak": ListOf(INT),
                }
            )
        ),
        "blocks": nullable(MapOf(ANY)),
        "ranks": nullable(
            Obj(
                {
                    "span_ns": INT,
                    "ranks": ListOf(
                        Obj(
                            {"rank": INT, "compute": ListOf(ANY), "comm": ListOf(ANY)},
                            {"hidden_share": nullable(NUMBER)},
                        )
                    ),
                }
            )
        ),
    },
)
BACKWARD_STEP = Obj({}, {"index": INT, "node": STR, "forward_entry": nullable(INT)})


def recording_schema(version: int) -> Obj:
    """The schema of a recording of ``version`` (2 added ``profile``, 3 ``backward_passes``;
    the steps' replay fields are :func:`~tensorkit.notebook.replay.validate_replay`'s)."""
    required = {
        "format": STR,
        "version": INT,
        "entries": ListOf(ENTRY),
        "backward_steps": ListOf(BACKWARD_STEP),
        "snippets": MapOf(SNIPPET),
        "graph": GRAPH,
    }
    if version >= 2:
        required["profile"] = nullable(PROFILE)
    if version >= 3:
        required["backward_passes"] = ListOf(ANY)
    return Obj(required)
