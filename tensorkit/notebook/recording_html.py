"""The HTML renderings of a recording (the data model of :mod:`~tensorkit.notebook.recording`):
:func:`to_html` writes a page that needs no kernel and no network (the models as JSON, the
graph, profile and replay widgets' bundles and CSS inlined, the graph's and profile's
selections linked, and text tables of the entries); :func:`entries_table` and
:func:`steps_table` are the static tables it and ``Recording._repr_html_`` show.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any

from .._callsite import display_site
from ..autograd.tape import Tape
from .profile_model import selection_links
from .recording import STATIC, Recording, _clean, _tape_data, _write_atomic
from .replay import replay_passes

__all__ = ["entries_table", "steps_table", "steps_tables", "to_html"]

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
        table=entries_table(data["entries"], data["snippets"]),
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


def entries_table(entries: list[dict], snippets: dict[str, dict]) -> str:
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


def steps_tables(passes: list[dict]) -> str:
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


def steps_table(model: dict) -> str:
    """One pass's steps as a static HTML table: step, node, rule, gradient shapes and targets."""
    rows = ["<tr><th>step</th><th>node</th><th>rule</th><th>incoming</th><th>produced</th></tr>"]
    for number, step in enumerate(model["steps"], 1):
        incoming = ", ".join(_grad_shape_text(g) for g in step["grads_in"])
        produced = ", ".join(
            f"{_grad_shape_text(g['grad'])} \u2192 {g['to'] or 'none'}" for g in step["grads_out"]
        )
        rule = step.get("rule") or {}
        cells = [
            str(number),
            f"{step['node']['id']}: {step['node']['name']}",
            rule.get("function") or rule.get("op") or "",
            incoming,
            produced or "into .grad",
        ]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return '<table class="tk-replay-steps">\n' + "\n".join(rows) + "\n</table>"


def _grad_shape_text(payload: dict | None) -> str:
    if payload is None:
        return "none"
    return "x".join(map(str, payload["shape"])) or "scalar"
