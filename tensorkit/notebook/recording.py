"""Shareable recordings of a Tape: one JSON file (its HTML page is
:mod:`~tensorkit.notebook.recording_html`'s).

:func:`save_tape` writes a Tape's entries, backward steps, call-site snippets, graph model
(:func:`~tensorkit.notebook.build_graph`), for a Tape recorded inside a profiler the
profile model (:func:`~tensorkit.notebook.profile_model.build_profile`: times, memory
timeline) and the described backward steps with each pass's leaves
(:mod:`~tensorkit.notebook.replay`) as one JSON file, atomically, with the ``view`` that the
JupyterLab extension draws when the file is opened in a tab
(:func:`~tensorkit.notebook.recorded.file_view`). :func:`open_recording` reads it back as a
:class:`Recording` (plain data; nothing in the file is ever executed; version 1 files (no
profile) and 2 (no replay) still open), after checking all of it against the schema
(:mod:`~tensorkit.notebook.recording_schema`): a file that is not UTF-8, not JSON, nested too
deeply or with any field of the wrong type raises :class:`RecordingError` naming the file and
the field. The file gets the mode of the user's other new files (0666 less the umask), as
the HTML page does.
"""

from __future__ import annotations

import json
import linecache
import math
import os
from pathlib import Path
from typing import Any

from .._callsite import display_site
from ..autograd.tape import Tape
from ..serialization._files import atomic_write
from .graph_model import build_graph
from .profile_model import build_profile
from .recording_schema import SchemaError, check, recording_schema
from .replay import replay_passes, validate_replay

__all__ = [
    "FORMAT",
    "VERSION",
    "Recording",
    "RecordingError",
    "open_recording",
    "save_tape",
]

FORMAT = "tensorkit.recording"
VERSION = 3  # 2 added "profile", 3 "backward_passes" and the steps' replay descriptions
READABLE_VERSIONS = (1, 2, 3)
STATIC = Path(__file__).parent / "static"
CONTEXT_LINES = 2


class Recording:
    """A recording read from disk: the graph model, the entries, call-site snippets, the
    profile model (None when the Tape was not profiled or the file is version 1) and the
    backward passes to replay (``replay``: empty when no step was described or the file is
    older than version 3)."""

    def __init__(self, data: dict, path: str | os.PathLike | None = None) -> None:
        self.path = None if path is None else Path(path)
        self.version: int = data["version"]
        self.graph: dict = data["graph"]
        self.entries: list[dict] = data["entries"]
        self.backward_steps: list[dict] = data["backward_steps"]
        self.snippets: dict[str, dict] = data["snippets"]
        self.profile: dict | None = data.get("profile")
        self.backward_passes: list[dict] = data.get("backward_passes", [])
        self.view: dict | None = data.get("view")  # what the JupyterLab extension draws
        self.replay: list[dict] = replay_passes(self.backward_steps, self.backward_passes)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        return f"<Recording{where}: {len(self.entries)} entries, {len(self.graph['nodes'])} nodes>"

    def to_dict(self) -> dict:
        """The recording as the plain data that :func:`save_tape` writes."""
        return {
            "format": FORMAT,
            "version": self.version,
            "entries": self.entries,
            "backward_steps": self.backward_steps,
            "snippets": self.snippets,
            "graph": self.graph,
            "profile": self.profile,
            "backward_passes": self.backward_passes,
            **({} if self.view is None else {"view": self.view}),
        }

    def show(self) -> Any:
        """A ``GraphWidget`` of the graph (linked to a ``ProfileWidget`` when the recording
        has a profile; above a ``ReplayWidget`` of the backward steps when it has some) when
        anywidget is importable, else static HTML."""
        try:
            from .profile_widget import linked_view
            from .recorded import recording_of
            from .replay_widget import ReplayWidget
            from .widgets import GraphWidget, RecordedBox
        except ImportError:
            return self._repr_html_()
        if self.profile is None:
            view = GraphWidget(graph=self.graph)
        else:
            view = linked_view(self.graph, self.profile, self.entries)
        if not self.replay:
            return view
        replay = ReplayWidget(passes=self.replay)
        return RecordedBox([view, replay], recording=recording_of(self.to_dict()))

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        """The recording (drawn by the JupyterLab extension) and :meth:`_repr_html_`."""
        from .recorded import MIME_TYPE, recording_of

        return {
            "text/plain": repr(self),
            MIME_TYPE: recording_of(self.to_dict()),
            "text/html": self._repr_html_(),
        }

    def _repr_html_(self) -> str:
        """The recorded view (graph, profile, replay: a script, no kernel needed), then the
        backward steps and the entries as tables."""
        from .recorded import recorded_html, recording_of
        from .recording_html import entries_table, steps_tables

        view = recorded_html(recording_of(self.to_dict()))
        return view + steps_tables(self.replay) + entries_table(self.entries, self.snippets)


# --------------------------------------------------------------------------------- saving
def save_tape(tape: Tape, path: str | os.PathLike) -> Path:
    """Write ``tape`` as one JSON recording at ``path`` (atomically); returns the path."""
    path = Path(path)
    _write_atomic(path, json.dumps(_clean(_tape_data(tape)), allow_nan=False))
    return path


def _tape_data(tape: Tape) -> dict:
    from .recorded import file_view  # it builds on this module

    entries = [entry.to_dict() for entry in tape.entries]
    data = {
        "format": FORMAT,
        "version": VERSION,
        "entries": entries,
        "backward_steps": list(tape.backward_steps),
        "snippets": _snippets(e["call_site"] for e in entries),
        "graph": build_graph(tape),
        "profile": _profile(tape),
        "backward_passes": list(tape.backward_passes),
    }
    return {**data, "view": file_view(data)}


def _profile(tape: Tape) -> dict | None:
    """The profile model of a Tape recorded inside a profiler, else None."""
    if not any(e.records.get("profiler_index") is not None for e in tape.entries):
        return None
    return build_profile(tape)


def _snippets(call_sites: Any) -> dict[str, dict]:
    """For each distinct ``file:line``, the source line with context, where readable."""
    snippets: dict[str, dict] = {}
    for site in call_sites:
        if not site or site in snippets or ":" not in site:
            continue
        filename, _, number = site.rpartition(":")
        if not number.isdigit():
            continue
        line = int(number)
        if not linecache.getline(filename, line):
            continue
        first = max(1, line - CONTEXT_LINES)
        lines = [
            {"line": n, "text": linecache.getline(filename, n).rstrip("\n")}
            for n in range(first, line + CONTEXT_LINES + 1)
            if linecache.getline(filename, n)
        ]
        shown = display_site(site)
        snippets[site] = {"file": filename, "line": line, "lines": lines, "display": shown}
    return snippets


def _clean(value: Any) -> Any:
    """Strict JSON data: non-finite floats become None, tuples lists, unknown objects repr."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return repr(value)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` atomically (a temporary file beside it, renamed), with
    the mode a new file of the user's gets (0666 less the umask; a replaced file keeps its)."""
    atomic_write(path, lambda stream: stream.write(text.encode("utf-8")))


# -------------------------------------------------------------------------------- loading
class RecordingError(ValueError):
    """A file that is not a readable tensorkit recording; the message names the file and,
    where one is to blame, the field (a JSON path such as ``graph.nodes[3].kind``)."""


def open_recording(path: str | os.PathLike) -> Recording:
    """Read a recording written by :func:`save_tape` and check all of it against the schema
    (:mod:`~tensorkit.notebook.recording_schema`), so that what opens also renders; raises
    :class:`RecordingError` (a ValueError) for anything else."""
    where = os.fspath(path)
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RecordingError(
            f"{where} is not a tensorkit recording: it is not UTF-8 text ({error.reason} at "
            f"byte {error.start})"
        ) from None
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise RecordingError(
            f"{where} is not a tensorkit recording: invalid JSON ({error})"
        ) from None
    except RecursionError:
        raise RecordingError(
            f"{where} is not a tensorkit recording: its JSON nests deeper than Python can parse"
        ) from None
    _validate(data, where)
    return Recording(data, path)


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON value", name, 0)


def _validate(data: Any, where: str) -> None:
    def fail(problem: str) -> None:
        raise RecordingError(f"{where} is not a valid tensorkit recording: {problem}")

    if not isinstance(data, dict):
        fail(f"expected a JSON object at the top level, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        fail(f"'format' is {data.get('format')!r}, expected {FORMAT!r}")
    version = data.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise RecordingError(
            f"{where}: unsupported recording version {version!r} (this tensorkit reads "
            f"versions {', '.join(map(str, READABLE_VERSIONS))})"
        )
    try:
        check(data, recording_schema(version))
    except SchemaError as error:
        fail(str(error))
    if version >= 3:
        validate_replay(data, fail)
