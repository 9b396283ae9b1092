"""The recorded view that every widget output carries, for notebooks reopened with no kernel.

Each widget's display bundle holds, next to the live widget view,

- ``application/vnd.tensorkit.recording+json`` (:data:`MIME_TYPE`): a recording in the
  format of :func:`~tensorkit.notebook.recording.save_tape` (``format``, ``version``,
  ``graph``, ``profile``), limited to what the output shows, plus ``view``: the ``sections``
  to show ("graph", "profile", "replay"), the graph's ``collapsed`` groups, ``color_by`` and
  ``show_backward``, the ``replay`` passes (:func:`~tensorkit.notebook.replay.replay_passes`
  models) with the ``pass_index`` and ``position`` to open at, and the profile's ``links``
  (:func:`~tensorkit.notebook.profile_model.selection_links`). The JupyterLab extension
  (``extensions/``) renders it when the widget's model is gone;
- ``text/html``: the same view as a self-contained page fragment (the viewer bundle, its CSS
  and the recording inlined, gzip-compressed and base64-encoded, decoded in the browser), for
  ``jupyter nbconvert --to html``, the docs and any front end without the extension.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import gzip
import json
import secrets
from typing import Any

from ..autograd.graph import AccumulateGrad
from ..autograd.tape import Tape
from .profile_model import selection_links
from .recording import FORMAT, STATIC, VERSION, _clean
from .replay import replay_passes
from .stepper import BackwardStepper
from .walk import backward_nodes, root_nodes

__all__ = [
    "MIME_TYPE",
    "SECTIONS",
    "file_view",
    "recorded_html",
    "recording_of",
    "recording_payload",
    "stepper_replay",
]

MIME_TYPE = "application/vnd.tensorkit.recording+json"
SECTIONS = ("graph", "profile", "replay")
#: Steps of a stepper's pass described for its recorded view (as Tape's ``step_details``).
STEP_DETAILS = 200


def recording_payload(
    sections: list[str],
    *,
    graph: dict | None = None,
    profile: dict | None = None,
    replay: list[dict] | None = None,
    links: dict | None = None,
    collapsed: list[str] | None = None,
    color_by: str = "none",
    show_backward: bool = True,
    pass_index: int = 0,
    position: int = 0,
) -> dict:
    """The recording an output carries: ``sections`` in order, each with its data."""
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown recorded section(s) {unknown}; expected some of {SECTIONS}")
    given = {"graph": graph, "profile": profile, "replay": replay}
    absent = [s for s in sections if not given[s]]
    if absent:
        raise ValueError(f"recorded section(s) {absent} have no data")
    view: dict[str, Any] = {"sections": list(sections)}
    if graph is not None:
        view.update(
            collapsed=list(graph.get("collapsed", []) if collapsed is None else collapsed),
            color_by=color_by,
            show_backward=show_backward,
        )
    if replay:
        view.update(replay=replay, pass_index=pass_index, position=position)
    if links is not None:
        view["links"] = links
    payload = {"format": FORMAT, "version": VERSION, "graph": graph, "profile": profile}
    return _clean({**payload, "view": view})


def recording_of(data: dict) -> dict:
    """The recording to show for a recording's data (as :func:`~tensorkit.notebook.recording.
    save_tape` writes it): its graph, profile (linked to the graph) and replay."""
    replay = replay_passes(data["backward_steps"], data["backward_passes"])
    links = None
    if data["profile"] is not None:
        links = selection_links(data["entries"], (n["id"] for n in data["graph"]["nodes"]))
    sections = [
        s for s, present in zip(SECTIONS, (True, links is not None, replay), strict=True) if present
    ]
    return recording_payload(
        sections, graph=data["graph"], profile=data["profile"], replay=replay, links=links
    )


def file_view(data: dict) -> dict:
    """The ``view`` that :func:`~tensorkit.notebook.recording.save_tape` writes into a
    recording file, so that the JupyterLab extension opens the file in a tab as the outputs
    show it."""
    return recording_of(data)["view"]


def stepper_replay(stepper: BackwardStepper, limit: int = STEP_DETAILS) -> list[dict]:
    """The replay model of ``stepper``'s whole pass (its first ``limit`` steps described), as a
    Tape records it: the pass is run again on the retained graph under a Tape, then the
    leaves' ``.grad`` are put back, so the stepper and the leaves are as they were. A pass that
    fails is described up to the failing step."""
    loss = stepper.loss
    if loss.grad_fn is None:
        return []
    leaves = [
        node.variable for node in backward_nodes(root_nodes(loss)) if type(node) is AccumulateGrad
    ]
    grads = [leaf.grad for leaf in leaves]
    tape = Tape(summaries=False, call_sites=False, step_details=limit)
    try:
        with tape, contextlib.suppress(Exception):  # a failing pass: its steps so far
            loss.backward(stepper.gradient, retain_graph=True)
    finally:
        for leaf, grad in zip(leaves, grads, strict=True):
            leaf.grad = grad
    return replay_passes(tape.backward_steps, tape.backward_passes)


def recorded_html(payload: dict) -> str:
    """A self-contained HTML fragment drawing ``payload`` (a :func:`recording_payload`) with
    the viewer bundle: no kernel, no network. The viewer and its CSS are decoded once per page
    (later outputs reuse them); each fragment carries its own compressed copy."""
    element = f"tk-recorded-{secrets.token_hex(6)}"
    data = _packed(json.dumps(payload, allow_nan=False, separators=(",", ":")))
    viewer, css = _viewer()
    return _FRAGMENT.format(element=element, data=data, viewer=viewer, css=css)


@functools.cache
def _viewer() -> tuple[str, str]:
    """The compressed viewer bundle and widget CSS (read once per process)."""
    bundle = (STATIC / "recording_view.js").read_text(encoding="utf-8")
    css = (STATIC / "widgets.css").read_text(encoding="utf-8")
    return _packed(bundle), _packed(css)


def _packed(text: str) -> str:
    """``text`` gzip-compressed (reproducibly: no timestamp) and base64-encoded."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


# The fragment: a placeholder (what shows where scripts do not run), then a script that
# decodes the viewer and CSS unless an earlier output did, and draws the recording.
_FRAGMENT = """<div id="{element}" class="tk-recorded-output"><div class="tk-recorded-note">\
tensorkit recording: open this notebook in JupyterLab or Notebook 7 with tensorkit installed, \
or view this page with JavaScript on, to see the graph, backward steps and profile.</div></div>
<script>
(async function () {{
  const el = document.getElementById("{element}");
  const unpack = async (text) => {{
    const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }};
  try {{
    if (!window.tensorkitRecordingView) {{
      window.tensorkitRecordingView = (async () => {{
        const style = document.createElement("style");
        style.textContent = await unpack("{css}");
        document.head.append(style);
        return new Function(await unpack("{viewer}") + "\\nreturn tensorkitRecordingView;")();
      }})();
    }}
    const viewer = await window.tensorkitRecordingView;
    const recording = JSON.parse(await unpack("{data}"));
    el.replaceChildren();
    viewer.renderRecording(el, recording, {{ note: viewer.STATIC_NOTE }});
  }} catch (error) {{
    el.firstChild.textContent = "tensorkit recording could not be shown: " + error;
  }}
}})();
</script>"""
