"""Plain, JSON-serializable data models for notebook views of the autograd machinery.

Each view is a data model built here plus a thin front end: the widget modules
(:mod:`~tensorkit.notebook.widgets`, :mod:`~tensorkit.notebook.stepper_widget`,
:mod:`~tensorkit.notebook.profile_widget`) are the only ones that import anywidget and
ipywidgets. They are imported lazily, so this package works without them.
"""

from .. import _notebook_hooks
from .check import check_graph, check_node
from .graph_model import build_graph, to_text
from .rank_model import build_ranks
from .recording import Recording, RecordingError, open_recording, save_tape
from .recording_html import to_html
from .replay import PassRecorder
from .stepper import BackwardStepper

__all__ = [
    "BackwardStepper",
    "Recording",
    "RecordingError",
    "open",
    "open_recording",
    "to_html",
    "build_graph",
    "build_ranks",
    "check_graph",
    "check_node",
    "show",
    "show_compiled",
    "show_ranks",
    "step_backward",
    "to_text",
]


def open(path: str) -> Recording:  # noqa: A001 - tk.notebook.open, as the workbench names it
    """Load a recording written by ``Tape.save`` (plain JSON; nothing in it is executed); a
    file that does not fit the schema raises :class:`RecordingError` naming the field."""
    return open_recording(path)


def show(source, **kwargs):
    """A graph widget of a Tape or a tensor's backward graph (needs anywidget); see
    :func:`tensorkit.notebook.widgets.show`."""
    from .widgets import show as _show

    return _show(source, **kwargs)


def show_compiled(source, **kwargs):
    """A graph widget of a tk.jit graph: a ``tk.jit.trace`` or ``tk.compile`` result, a
    ``tk.jit.explain`` result or a ``tk.jit.Graph`` (needs anywidget); see
    :func:`tensorkit.notebook.jit_graph.show_compiled`."""
    from .jit_graph import show_compiled as _show_compiled

    return _show_compiled(source, **kwargs)


def show_ranks(traces, **kwargs):
    """The per-rank view of a distributed run's traces (needs anywidget); see
    :func:`tensorkit.notebook.profile_widget.show_ranks`."""
    from .profile_widget import show_ranks as _show_ranks

    return _show_ranks(traces, **kwargs)


def step_backward(loss, **kwargs):
    """A backward stepper widget over ``loss`` (needs anywidget); see
    :func:`tensorkit.notebook.stepper_widget.step_backward`."""
    from .stepper_widget import step_backward as _step_backward

    return _step_backward(loss, **kwargs)


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext tensorkit.notebook``: register ``%%tape``, ``%%profile`` and ``%gradcheck``
    (see :mod:`tensorkit.notebook.magics`)."""
    from .magics import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext tensorkit.notebook``: remove the magics."""
    from .magics import unload_ipython_extension as _unload

    _unload(ipython)


def _show_profile(profile, **kwargs):
    from .profile_widget import show_profile

    return show_profile(profile, **kwargs)


# The core's Tape and profiler call these through tensorkit._notebook_hooks (it never imports
# this package itself).
_notebook_hooks.register("tape.show", show)
_notebook_hooks.register("tape.save", save_tape)
_notebook_hooks.register("tape.to_html", to_html)
_notebook_hooks.register("tape.pass_recorder", PassRecorder)
_notebook_hooks.register("profile.show", _show_profile)
_notebook_hooks.register("jit.show", show_compiled)
