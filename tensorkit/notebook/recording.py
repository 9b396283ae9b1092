"""Shareable recordings of a Tape: one JSON file, and a standalone HTML page.

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
the field. :func:`to_html` writes a page that needs no kernel and no network: the models as
JSON, the graph, profile and replay widgets' bundles and CSS inlined, the graph's and
profile's selections linked, and text tables of the entries. Both files get the mode of the
user's other new files (0666 less the umask).
"""

from __future__ import annotations

import html
import json
import linecache
import math
import os
import re
from pathlib import Path
from typing import Any

from .._callsite import display_site
from ..autograd.tape import Tape
from ..serialization._files import atomic_write
from .graph_model import build_graph
from .profile_model import build_profile, selection_links
from .recording_schema import SchemaError, check, recording_schema
from .replay import replay_passes, steps_table, validate_replay

__all__ = [
    "FORMAT",
    "VERSION",
    "Recording",
    "RecordingError",
    "open_recording",
    "save_tape",
    "to_html",
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

        view = recorded_html(recording_of(self.to_dict()))
        return view + _steps_tables(self.replay) + _entries_table(self.entries, self.snippets)


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


# ----------------------------------------------------------------------------------- HTML
_BOOTSTRAP = """
function widgetModel(id) {
  const state = JSON.parse(document.getElementById(id).textContent);
  const listeners = {};
  const pending = new Set();
  return {
    get: (name) => state[name],
    set: (name, value) => { state[name] = value; pending.add(name); },
    on: (event, fn) => { (listeners[event] = listeners[event] || []).push(fn); },
    off: (event, fn) => {
      listeners[event] = (listeners[event] || []).filter((f) => f !== fn);
    },
    save_changes: () => {
      const names = [...pending];
      pending.clear();
      for (const name of names) for (const fn of listeners["change:" + name] || []) fn();
    },
  };
}
const graphModel = widgetModel("tk-graph-model");
if (typeof replay_default !== "undefined") {
  const replayModel = widgetModel("tk-replay-model");
  replay_default.render({ model: replayModel, el: document.getElementById("tk-replay") });
}
graph_default.render({ model: graphModel, el: document.getElementById("tk-graph") });
if (typeof profile_default !== "undefined") {
  const profileModel = widgetModel("tk-profile-model");
  profile_default.render({ model: profileModel, el: document.getElementById("tk-profile") });
  const links = JSON.parse(document.getElementById("tk-profile-links").textContent);
  let syncing = false;
  const follow = (target, name, value) => {
    if (syncing) return;
    syncing = true;
    try {
      target.set(name, value);
      target.save_changes();
    } finally {
      syncing = false;
    }
  };
  profileModel.on("change:selected", () =>
    follow(graphModel, "selected", links.node_of[profileModel.get("selected")] || ""));
  graphModel.on("change:selected", () => {
    const index = links.index_of[graphModel.get("selected")];
    follow(profileModel, "selected", index === undefined ? -1 : index);
  });
}
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
{css}
body {{ font-family: system-ui, sans-serif; margin: 1rem; }}
.tk-recording-entries {{ border-collapse: collapse; font-size: 12px; margin-top: 1rem; }}
.tk-recording-entries td, .tk-recording-entries th {{
  border-top: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top;
}}
.tk-recording-entries pre {{ margin: 0; }}
</style>
</head>
<body>
<h1>{title}</h1>
<div class="tk-side-by-side">
<div id="tk-graph"></div>
{profile}
</div>
<script type="application/json" id="tk-graph-model">{model}</script>
{replay}
<script>
(function () {{
{bundles}
{bootstrap}
}})();
</script>
<h2>Entries</h2>
{table}
</body>
</html>
"""

_PROFILE_SECTION = """<div id="tk-profile"></div>
<script type="application/json" id="tk-profile-model">{model}</script>
<script type="application/json" id="tk-profile-links">{links}</script>"""

_REPLAY_SECTION = """<h2>Backward steps</h2>
<div id="tk-replay"></div>
<script type="application/json" id="tk-replay-model">{model}</script>"""


def to_html(
    source: Tape | Recording, path: str | os.PathLike, *, title: str = "tensorkit recording"
) -> Path:
    """Write a standalone HTML page (no kernel, no network) of a Tape or a Recording: the
    graph, the profile (when recorded) with its sortable table, the backward steps (when
    described) to replay with Next / Previous / Reset / Run to end, and the entries."""
    data = _clean(_tape_data(source)) if isinstance(source, Tape) else source.to_dict()
    model = {
        "graph": data["graph"],
        "selected": "",
        "collapsed": data["graph"].get("collapsed", []),  # large graphs open folded
        "color_by": "none",
        "show_backward": True,
    }
    bundles = [_inline_bundle("graph")]
    profile = ""
    if data.get("profile") is not None:
        bundles.append(_inline_bundle("profile"))
        node_ids = (node["id"] for node in data["graph"]["nodes"])
        profile = _PROFILE_SECTION.format(
            model=_script_json({"model": data["profile"], "selected": -1}),
            links=_script_json(selection_links(data["entries"], node_ids)),
        )
    passes = replay_passes(data["backward_steps"], data["backward_passes"])
    replay = ""
    if passes:
        bundles.append(_inline_bundle("replay"))
        replay = _REPLAY_SECTION.format(
            model=_script_json({"passes": passes, "pass_index": 0, "position": 0})
        )
    page = _PAGE.format(
        title=html.escape(title),
        css=(STATIC / "widgets.css").read_text(encoding="utf-8"),
        model=_script_json(model),
        profile=profile,
        replay=replay,
        bundles="\n".join(bundles),
        bootstrap=_BOOTSTRAP,
        table=_entries_table(data["entries"], data["snippets"]),
    )
    path = Path(path)
    _write_atomic(path, page)
    return path


def _script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``<``, ``>`` or ``&`` characters)."""
    text = json.dumps(value, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _inline_bundle(name: str) -> str:
    """The ``name`` widget's ES module bundle as a plain script that defines ``<name>_default``
    (its final ``export {...}`` statement removed, its other names kept in a function scope)."""
    source = (STATIC / f"{name}.js").read_text(encoding="utf-8")
    default = f"{name}_default"
    stripped, count = re.subn(r"\bexport\s*\{[^}]*\}\s*;?\s*$", "", source.rstrip())
    if count != 1 or default not in stripped:
        raise ValueError(f"unexpected {name} bundle: cannot find its default export")
    if "</script" in stripped.lower():
        raise ValueError(f"the {name} bundle contains '</script' and cannot be inlined")
    return f"const {default} = (function () {{\n{stripped}\nreturn {default};\n}})();"


def _entries_table(entries: list[dict], snippets: dict[str, dict]) -> str:
    """An HTML table, one row per entry, with the call site's source lines."""
    rows = [
        "<tr><th>#</th><th>phase</th><th>op</th><th>shapes</th><th>module</th>"
        "<th>call site</th></tr>"
    ]
    for entry in entries:
        shapes_in = ", ".join(_shape_text(i) for i in entry.get("inputs", []))
        shapes_out = ", ".join(_shape_text(o) for o in entry.get("outputs", []))
        site = entry.get("call_site") or ""
        snippet = snippets.get(site)
        code = ""
        if snippet:
            code = "\n".join(
                f"{'>' if line['line'] == snippet['line'] else ' '} {line['line']:>5}  "
                f"{line['text']}"
                for line in snippet["lines"]
            )
        cells = [
            str(entry.get("index", "")),
            entry.get("phase", ""),
            entry.get("name", ""),
            f"{shapes_in} -> {shapes_out}",
            entry.get("module_path", "") or "",
        ]
        tds = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
        shown = (snippet or {}).get("display") or display_site(site) or ""  # as saved
        site_cell = html.escape(shown) + (f"<pre>{html.escape(code)}</pre>" if code else "")
        rows.append(f"<tr>{tds}<td>{site_cell}</td></tr>")
    return '<table class="tk-recording-entries">\n' + "\n".join(rows) + "\n</table>"


def _steps_tables(passes: list[dict]) -> str:
    """Each replayable pass's steps as a static table, under a heading."""
    return "".join(
        f"<h3>Backward steps, pass {model['pass']}</h3>" + steps_table(model) for model in passes
    )


def _shape_text(info: Any) -> str:
    if isinstance(info, dict) and "shape" in info:
        return "x".join(map(str, info["shape"])) or "scalar"
    if isinstance(info, dict):
        return str(info.get("value"))
    return str(info)
