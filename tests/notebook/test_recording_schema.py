"""tk.notebook.open checks the whole recording on open: one error type, the file and the field.

The issue's cases are written out; every other field is tested from the schema tables
themselves: each field present in a rich recording, given a value of the wrong JSON type (and
each required one removed), must be refused with its JSON path; a recording stripped of every
optional field must still open and render.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tensorkit as tk
from tensorkit.notebook import build_graph, recording_schema
from tensorkit.notebook.recording import RecordingError, _clean, _tape_data, open_recording
from tensorkit.notebook.recording_html import to_html
from tensorkit.notebook.recording_schema import ANY, ByKind, Kind, ListOf, MapOf, Obj, OneOf

PREFIX = " is not a valid tensorkit recording: "


def _rich_tape() -> tk.autograd.Tape:
    """Modules, a loss, backward, the profiler with memory, call sites in this file."""
    tk.manual_seed(0)
    model = tk.nn.Sequential(tk.nn.Linear(3, 4), tk.nn.ReLU(), tk.nn.Linear(4, 1))
    x = tk.randn(5, 3)
    with tk.profiler.profile(record_memory=True), tk.autograd.Tape() as tape:
        loss = tk.nn.functional.mse_loss(model(x), tk.zeros(5, 1))
        loss.backward()
    return tape


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(_clean(value), allow_nan=False))


@pytest.fixture(scope="module")
def samples() -> dict[str, dict]:
    """Recordings as saved, with the gradient band in the graph, and with modules folded."""
    tape = _rich_tape()
    saved = _plain(_tape_data(tape))
    return {
        "saved": saved,
        "backward band": {**saved, "graph": _plain(build_graph(tape, include_backward=True))},
        "folded": {
            **saved,
            "graph": _plain(build_graph(tape, include_backward=True, max_nodes=10)),
        },
    }


def _write(tmp_path: Path, data: Any, name: str = "run.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _refused(path: Path) -> str:
    with pytest.raises(RecordingError) as caught:
        open_recording(path)
    assert isinstance(caught.value, ValueError) and tk.notebook.RecordingError is RecordingError
    message = str(caught.value)
    assert message.startswith(str(path)), message
    return message


def test_samples_open_and_render(samples: dict[str, dict], tmp_path: Path) -> None:
    for name, data in samples.items():
        rec = open_recording(_write(tmp_path, data))
        assert rec.profile is not None and rec.replay and rec.snippets, name
        assert "<table" in rec._repr_html_()
        assert to_html(rec, tmp_path / "page.html").stat().st_size > 1000
    assert any(n["kind"] == "group" for n in samples["folded"]["graph"]["nodes"])
    assert any(n.get("band") for n in samples["backward band"]["graph"]["nodes"])


def _site(data: dict) -> str:
    return next(iter(data["snippets"]))


def _node_index(data: dict, kind: str) -> int:
    return next(i for i, n in enumerate(data["graph"]["nodes"]) if n["kind"] == kind)


# Each case: (what it does to the recording, the message after "...recording: ").
ISSUE_CASES = {
    "inputs = 5": (
        lambda d: d["entries"][0].__setitem__("inputs", 5),
        "entries[0].inputs: expected a list, got an integer 5",
    ),
    "outputs = null": (
        lambda d: d["entries"][1].__setitem__("outputs", None),
        "entries[1].outputs: expected a list, got null",
    ),
    "a node without kind": (
        lambda d: d["graph"]["nodes"][3].pop("kind"),
        "graph.nodes[3].kind: missing (expected a string)",
    ),
    "a snippet without lines": (
        lambda d: d["snippets"][_site(d)].pop("lines"),
        "snippets[{site!r}].lines: missing (expected a list)",
    ),
    "a snippet line without text": (
        lambda d: d["snippets"][_site(d)]["lines"][0].pop("text"),
        "snippets[{site!r}].lines[0].text: missing (expected a string)",
    ),
    "an input that is neither tensor nor value": (
        lambda d: d["entries"][0]["inputs"].__setitem__(0, {"shape": "3"}),
        "entries[0].inputs[0].shape: expected a list, got a string '3'",
    ),
    "a shape with a float": (
        lambda d: d["entries"][0]["outputs"][0].__setitem__("shape", [2, 1.5]),
        "entries[0].outputs[0].shape[1]: expected an integer, got a number 1.5",
    ),
    "a boolean index": (
        lambda d: d["entries"][2].__setitem__("index", True),
        "entries[2].index: expected an integer, got true",
    ),
    "an edge without a target": (
        lambda d: d["graph"]["edges"][0].pop("target"),
        "graph.edges[0].target: missing (expected a string)",
    ),
    "node shapes not an object": (
        lambda d: d["graph"]["nodes"][0].__setitem__("shapes", [[2, 3]]),
        "graph.nodes[0].shapes: expected an object, got a list",
    ),
    "a metric that is text": (
        lambda d: d["graph"]["nodes"][0]["metrics"].__setitem__("grad_norm", "big"),
        "graph.nodes[0].metrics['grad_norm']: expected a number or true or false or null, got a "
        "string 'big'",
    ),
    "a group whose children are not a list": (
        lambda d: d["graph"]["groups"]["Sequential"].__setitem__("children", "Sequential.0"),
        "graph.groups['Sequential'].children: expected a list, got a string 'Sequential.0'",
    ),
    "a layout layer of numbers": (
        lambda d: d["graph"]["layout"]["layers"].__setitem__(0, [1]),
        "graph.layout.layers[0][0]: expected a string, got an integer 1",
    ),
    "a backward step's node not a string": (
        lambda d: d["backward_steps"][0].__setitem__("node", 3),
        "backward_steps[0].node: expected a string, got an integer 3",
    ),
    "entries not a list": (
        lambda d: d.__setitem__("entries", {"0": {}}),
        "entries: expected a list, got an object",
    ),
    "graph missing": (lambda d: d.pop("graph"), "graph: missing (expected an object)"),
    "snippets missing": (lambda d: d.pop("snippets"), "snippets: missing (expected an object)"),
    "a profile row's time as text": (
        lambda d: d["profile"]["rows"][0].__setitem__("host_time_ns", "1"),
        "profile.rows[0].host_time_ns: expected an integer, got a string '1'",
    ),
    "a replay leaf without an id (checked by replay.validate_replay)": (
        lambda d: d["backward_passes"][0]["leaves"][0].pop("id"),
        "backward_passes[0].leaves[0] must be an object with a string 'id'",
    ),
}


@pytest.mark.parametrize(("change", "expected"), ISSUE_CASES.values(), ids=ISSUE_CASES.keys())
def test_wrong_fields_are_refused_naming_the_file_and_field(
    samples: dict[str, dict], tmp_path: Path, change: Any, expected: str
) -> None:
    data = copy.deepcopy(samples["saved"])
    change(data)
    path = _write(tmp_path, data)
    message = _refused(path)
    assert message == f"{path}{PREFIX}{expected.format(site=_site(samples['saved']))}"


def test_non_utf8_bytes(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"format": "tensorkit.recording", "note": "caf\xe9"}')
    message = _refused(path)
    assert message == (
        f"{path} is not a tensorkit recording: it is not UTF-8 text (invalid continuation byte "
        "at byte 46)"
    )


def test_json_too_deep_for_the_parser(tmp_path: Path) -> None:
    path = _write(tmp_path, "[" * 200_000 + "]" * 200_000)
    assert _refused(path) == (
        f"{path} is not a tensorkit recording: its JSON nests deeper than Python can parse"
    )


def test_deeply_nested_values_are_refused_without_recursion(
    samples: dict[str, dict], tmp_path: Path
) -> None:
    data = copy.deepcopy(samples["saved"])
    deep: Any = 0
    for _ in range(300):
        deep = [deep]
    data["entries"][0]["attrs"]["deep"] = deep
    path = _write(tmp_path, data)
    message = _refused(path)
    assert message.startswith(f"{path}{PREFIX}entries[0].attrs['deep'][0][0]")
    assert message.endswith(": nested deeper than 100 levels")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", " is not a tensorkit recording: invalid JSON (Expecting property name"),
        ('{"a": NaN}', " is not a tensorkit recording: invalid JSON (NaN is not a JSON value"),
        ("[1, 2]", f"{PREFIX}expected a JSON object at the top level, got list"),
        ('{"format": "other"}', f"{PREFIX}'format' is 'other', expected 'tensorkit.recording'"),
        (
            '{"format": "tensorkit.recording", "version": 99}',
            ": unsupported recording version 99 (this tensorkit reads versions 1, 2, 3)",
        ),
    ],
    ids=["invalid JSON", "NaN", "not an object", "format", "version"],
)
def test_files_that_are_no_recording(tmp_path: Path, text: str, expected: str) -> None:
    path = _write(tmp_path, text)
    assert _refused(path).startswith(f"{path}{expected}")


# ------------------------------------------------------------------- from the tables
def _steps(path: tuple) -> str:
    """A JSON path in the messages' notation: ``graph.nodes[3].kind``, ``snippets['a:1']``."""
    text = ""
    for kind, key in path:
        if kind == "index":
            text += f"[{key}]"
        elif kind == "map":
            text += f"[{key!r}]"
        else:
            text += f".{key}" if text else key
    return text


def _fields(value: Any, schema: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any, bool]]:
    """``(path, schema, required)`` of every object field in ``value`` that ``schema``
    describes, the first item of each list and map standing for the rest."""
    if isinstance(schema, Obj) and isinstance(value, dict):
        for key, item in {**schema.optional, **schema.required}.items():
            if key in value:
                where = (*path, ("key", key))
                yield where, item, key in schema.required
                yield from _fields(value[key], item, where)
    elif isinstance(schema, ByKind) and isinstance(value, dict):
        yield from _fields(value, schema.kinds.get(value.get("kind"), schema.default), path)
    elif isinstance(schema, ListOf) and isinstance(value, list) and value:
        if isinstance(schema.item, ByKind):  # the first item of each kind
            firsts = {item.get("kind"): index for index, item in reversed(list(enumerate(value)))}
            for index in sorted(firsts.values()):
                yield from _fields(value[index], schema.item, (*path, ("index", index)))
            return
        yield from _fields(value[0], schema.item, (*path, ("index", 0)))
    elif isinstance(schema, MapOf) and isinstance(value, dict) and value:
        key = next(iter(value))
        yield from _fields(value[key], schema.value, (*path, ("map", key)))
    elif isinstance(schema, OneOf):
        for option in schema.options:
            try:
                recording_schema.check(value, option)
            except recording_schema.SchemaError:
                continue
            yield from _fields(value, option, path)
            return


def _wrong_value(schema: Any) -> Any:
    """A value whose JSON type ``schema`` refuses outright (None where it takes anything)."""
    for candidate in (5, "text", None, [], {}, True, 1.5):
        if not recording_schema._outer_fits(candidate, schema):
            return candidate
    return None


def _at(data: Any, path: tuple) -> tuple[Any, Any]:
    *parents, (_, last) = path
    for _, key in parents:
        data = data[key]
    return data, last


def test_every_field_of_the_schema_is_checked(samples: dict[str, dict], tmp_path: Path) -> None:
    covered: set[str] = set()
    cases = 0
    for sample in (samples["backward band"], samples["folded"]):  # "saved" has no other fields
        schema = recording_schema.recording_schema(sample["version"])
        for path, item, required in _fields(sample, schema):
            if item is ANY or path[0][1] in ("format", "version"):
                continue  # anything goes; format and version have messages of their own
            name = _steps(path)
            covered.add(".".join(str(key) for kind, key in path if kind == "key"))
            changes = [("wrong type", _wrong_value(item))] + [("missing", None)] * required
            parent, key = _at(sample, path)
            original = parent[key]
            for what, wrong in changes:  # in place, then put back: the samples are large
                if what == "missing":
                    del parent[key]
                    expected = f"{name}: missing (expected "
                else:
                    parent[key] = wrong
                    expected = f"{name}: expected "
                try:
                    message = _refused(_write(tmp_path, sample))
                finally:
                    parent[key] = original
                assert message.startswith(f"{tmp_path / 'run.json'}{PREFIX}{expected}"), (
                    what,
                    name,
                )
                cases += 1
    assert cases > 250
    required_keys = {
        "entries.inputs.shape",
        "graph.nodes.kind",
        "graph.nodes.shapes.out",
        "graph.edges.position",
        "graph.groups.children",
        "snippets.lines.text",
        "profile.rows.host_time_ns",
        "profile.memory.peak",
        "profile.functions.host_ns",
        "graph.nodes.count",
        "graph.links.source",
        "graph.layout.bands",
    }
    assert required_keys <= covered, sorted(required_keys - covered)


def _without_optional(value: Any, schema: Any) -> Any:
    """``value`` with every optional field of ``schema`` removed, at every level."""
    if isinstance(schema, Obj) and isinstance(value, dict):
        kept = {key: value[key] for key in schema.required if key in value}
        kept.update({k: v for k, v in value.items() if k not in schema.optional})
        return {
            key: _without_optional(item, schema.required.get(key, ANY))
            for key, item in kept.items()
        }
    if isinstance(schema, ByKind) and isinstance(value, dict):
        return _without_optional(value, schema.kinds.get(value.get("kind"), schema.default))
    if isinstance(schema, ListOf) and isinstance(value, list):
        return [_without_optional(item, schema.item) for item in value]
    if isinstance(schema, MapOf) and isinstance(value, dict):
        return {key: _without_optional(item, schema.value) for key, item in value.items()}
    if isinstance(schema, OneOf):
        for option in schema.options:
            if not isinstance(option, Kind) and recording_schema._outer_fits(value, option):
                try:
                    recording_schema.check(value, option)
                except recording_schema.SchemaError:
                    continue
                return _without_optional(value, option)
    return value


def test_a_recording_with_only_required_fields_opens_and_renders(
    samples: dict[str, dict], tmp_path: Path
) -> None:
    for name, sample in samples.items():
        schema = recording_schema.recording_schema(sample["version"])
        bare = _without_optional(sample, schema)
        bare["backward_steps"] = sample["backward_steps"]  # replay.validate_replay's fields
        bare["backward_passes"] = sample["backward_passes"]
        assert "attrs" not in bare["entries"][0] and "metrics" not in bare["graph"]["nodes"][0]
        rec = open_recording(_write(tmp_path, bare))
        assert "<table" in rec._repr_html_(), name
        page = to_html(rec, tmp_path / "bare.html").read_text()
        assert "graph_default.render" in page, name
