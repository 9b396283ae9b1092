"""Shareable recordings of a Tape: one JSON file, and a standalone HTML page.

:func:`save_tape` writes a Tape's entries, backward steps, call-site snippets, graph model
(:func:`~tensorkit.notebook.build_graph`), for a Tape recorded inside a profiler the
profile model (:func:`~tensorkit.notebook.profile_model.build_profile`: times, memory
timeline) and the described backward steps with each pass's leaves
(:mod:`~tensorkit.notebook.replay`) as one JSON file, atomically. :func:`open_recording`
reads it back as a :class:`Recording` (validated, plain data; nothing in the file is ever
executed; version 1 files (no profile) and 2 (no replay) still open). :func:`to_html` writes a
page that needs no kernel and no network: the models as JSON, the graph, profile and replay
widgets' bundles and CSS inlined, the graph's and profile's selections linked, and text tables
of the entries.
"""

from __future__ import annotations

import contextlib
import html
import json
import linecache
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from .._callsite import display_site
from ..autograd.tape import Tape
from .graph_model import build_graph
from .profile_model import build_profile, selection_links
from .replay import replay_passes, steps_table, validate_replay

__all__ = ["FORMAT", "VERSION", "Recording", "open_recording", "save_tape", "to_html"]

FORMAT = "tensorkit.recording"
VERSION = 3  # 2 added "profile", 3 "backward_passes" and the steps' replay descriptions
READABLE_VERSIONS = (1, 2, 3)
STATIC = Path(__file__).parent / "static"
CONTEXT_LINES = 2
_REQUIRED = ("format", "version", "entries", "backward_steps", "snippets", "graph")
_ENTRY_KEYS = ("index", "name", "phase", "inputs", "outputs", "call_site")
_PROFILE_KEYS = {"timing_mode": str, "total_ops": int, "rows": list, "modules": list}
_ROW_KEYS = {"index": int, "name": str, "phase": str, "host_time_ns": int}


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
        }

    def show(self) -> Any:
        """A ``GraphWidget`` of the graph (linked to a ``ProfileWidget`` when the recording
        has a profile; above a ``ReplayWidget`` of the backward steps when it has some) when
        anywidget is importable, else static HTML."""
        try:
            import ipywidgets

            from .profile_widget import linked_view
            from .replay_widget import ReplayWidget
            from .widgets import GraphWidget
        except ImportError:
            return self._repr_html_()
        if self.profile is None:
            view = GraphWidget(graph=self.graph)
        else:
            view = linked_view(self.graph, self.profile, self.entries)
        if not self.replay:
            return view
        return ipywidgets.VBox([view, ReplayWidget(passes=self.replay)])

    def _repr_html_(self) -> str:
        try:
            from .profile_widget import profile_html
            from .widgets import graph_svg
        except ImportError:
            static = ""
        else:
            static = graph_svg(self.graph)
            if self.profile is not None:
                static += profile_html(self.profile)
        return static + _steps_tables(self.replay) + _entries_table(self.entries, self.snippets)


# --------------------------------------------------------------------------------- saving
def save_tape(tape: Tape, path: str | os.PathLike) -> Path:
    """Write ``tape`` as one JSON recording at ``path`` (atomically); returns the path."""
    path = Path(path)
    _write_atomic(path, json.dumps(_clean(_tape_data(tape)), allow_nan=False))
    return path


def _tape_data(tape: Tape) -> dict:
    entries = [entry.to_dict() for entry in tape.entries]
    return {
        "format": FORMAT,
        "version": VERSION,
        "entries": entries,
        "backward_steps": list(tape.backward_steps),
        "snippets": _snippets(e["call_site"] for e in entries),
        "graph": build_graph(tape),
        "profile": _profile(tape),
        "backward_passes": list(tape.backward_passes),
    }


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
    """Write ``text`` to a temp file beside ``path``, then ``os.replace`` it into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -------------------------------------------------------------------------------- loading
def open_recording(path: str | os.PathLike) -> Recording:
    """Read and validate a recording written by :func:`save_tape`; raises ValueError."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not a tensorkit recording: invalid JSON ({error})") from None
    _validate(data, str(path))
    return Recording(data, path)


def _validate(data: Any, where: str) -> None:
    def fail(problem: str) -> None:
        raise ValueError(f"{where} is not a valid tensorkit recording: {problem}")

    if not isinstance(data, dict):
        fail(f"expected a JSON object at the top level, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        fail(f"'format' is {data.get('format')!r}, expected {FORMAT!r}")
    version = data.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise ValueError(
            f"{where}: unsupported recording version {version!r} (this tensorkit reads "
            f"versions {', '.join(map(str, READABLE_VERSIONS))})"
        )
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        fail(f"missing key(s): {', '.join(missing)}")
    for key, kind in (("entries", list), ("backward_steps", list), ("snippets", dict)):
        if not isinstance(data[key], kind):
            fail(f"'{key}' must be a {kind.__name__}, got {type(data[key]).__name__}")
    for i, entry in enumerate(data["entries"]):
        if not isinstance(entry, dict):
            fail(f"entries[{i}] must be an object")
        absent = [key for key in _ENTRY_KEYS if key not in entry]
        if absent:
            fail(f"entries[{i}] is missing key(s): {', '.join(absent)}")
    graph = data["graph"]
    if not isinstance(graph, dict):
        fail("'graph' must be an object")
    for key in ("nodes", "edges"):
        if not isinstance(graph.get(key), list):
            fail(f"'graph.{key}' must be a list")
    if not all(isinstance(n, dict) and isinstance(n.get("id"), str) for n in graph["nodes"]):
        fail("every graph node must be an object with a string 'id'")
    if version >= 2:
        if "profile" not in data:
            fail("missing key(s): profile")
        if data["profile"] is not None:
            _validate_profile(data["profile"], fail)
    if version >= 3:
        validate_replay(data, fail)


def _validate_profile(profile: Any, fail: Any) -> None:
    """Check the fields that the profile views read (types, not values)."""
    if not isinstance(profile, dict):
        fail(f"'profile' must be an object or null, got {type(profile).__name__}")
    for key, kind in _PROFILE_KEYS.items():
        if not isinstance(profile.get(key), kind) or isinstance(profile.get(key), bool):
            fail(f"'profile.{key}' must be a {kind.__name__}")
    for i, row in enumerate(profile["rows"]):
        if not isinstance(row, dict):
            fail(f"profile.rows[{i}] must be an object")
        for key, kind in _ROW_KEYS.items():
            if not isinstance(row.get(key), kind) or isinstance(row.get(key), bool):
                fail(f"profile.rows[{i}].{key} must be a {kind.__name__}, got {row.get(key)!r}")
    for i, module in enumerate(profile["modules"]):
        ok = (
            isinstance(module, dict)
            and isinstance(module.get("module"), str)
            and isinstance(module.get("host_ns"), dict)
            and all(_is_int(v) for v in [module.get("count"), *module["host_ns"].values()])
        )
        if not ok:
            fail(f"profile.modules[{i}] must be an object with module, count and host_ns times")
    for key in ("memory", "blocks"):
        if profile.get(key) is not None and not isinstance(profile[key], dict):
            fail(f"'profile.{key}' must be an object or null")
    memory = profile.get("memory")
    if memory is not None:
        if not _is_int(memory.get("peak_bytes")):
            fail("'profile.memory.peak_bytes' must be an int")
        for key in ("index", "allocated", "reserved", "peak"):
            if not isinstance(memory.get(key), list):
                fail(f"'profile.memory.{key}' must be a list")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
<div id="tk-graph"></div>
<script type="application/json" id="tk-graph-model">{model}</script>
{profile}
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

_PROFILE_SECTION = """<h2>Profile</h2>
<div id="tk-profile"></div>
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
