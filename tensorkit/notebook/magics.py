"""IPython magics: ``%load_ext tensorkit.notebook`` registers ``%%tape``, ``%%profile`` and
``%gradcheck``.

- ``%%tape [--name NAME]`` runs the cell inside a :class:`~tensorkit.autograd.Tape`, stores the
  tape as ``_tape`` (or ``NAME``) in the user namespace and displays its graph widget (its text
  rendering where anywidget is missing).
- ``%%profile [--name NAME]`` runs the cell inside ``tk.profiler.profile(record_shapes=True,
  record_memory=True, with_stack=True)`` and a Tape, stores the profile as ``_prof`` (or
  ``NAME``) and the tape as ``_prof_tape`` (``NAME_tape``), and displays the profile view
  linked to the cell's graph (the ``key_averages`` table where anywidget is missing).
- ``%gradcheck EXPR`` evaluates ``EXPR`` to a ``(function, inputs)`` pair and runs
  :func:`~tensorkit.autograd.gradcheck` on it, printing the verdict.

This module imports IPython; :mod:`tensorkit.notebook` imports it only when the extension loads.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..autograd.gradcheck import GradcheckError, gradcheck
from ..autograd.tape import Tape
from ..profiler import profile

__all__ = ["TensorkitMagics", "load_ipython_extension", "unload_ipython_extension"]


class _Text:
    """Plain text shown verbatim by IPython's display (no quotes, unlike a ``str``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _tape_view(tape: Tape) -> Any:
    """The graph widget of ``tape``, or its text rendering when anywidget can't be imported."""
    try:
        from .widgets import show
    except ImportError:
        return _Text(tape.to_text())
    return show(tape)


def _profile_view(prof: profile, tape: Tape) -> Any:
    """The profile view linked to ``tape``'s graph, or the ``key_averages`` table as text when
    anywidget can't be imported."""
    try:
        from .profile_widget import show_profile
    except ImportError:
        return _Text(prof.key_averages().table())
    return show_profile(prof, tape=tape)


@magics_class
class TensorkitMagics(Magics):
    """The ``%%tape``, ``%%profile`` and ``%gradcheck`` magics."""

    def _run_cell_body(self, cell: str) -> bool:
        """Run ``cell`` in the user namespace (IPython shows any traceback); True on success."""
        return self.shell.run_cell(cell, store_history=False).success

    @magic_arguments()
    @argument("--name", default="_tape", help="variable to store the Tape in (default: _tape)")
    @cell_magic
    def tape(self, line: str, cell: str) -> None:
        """Run the cell inside a Tape, store it as ``_tape`` (or ``--name``) and show its graph."""
        args = parse_argstring(self.tape, line)
        tape = Tape()
        try:
            with tape:
                self._run_cell_body(cell)
        finally:
            self.shell.user_ns[args.name] = tape
        display(_tape_view(tape))

    @magic_arguments()
    @argument("--name", default="_prof", help="variable to store the profile in (default: _prof)")
    @cell_magic
    def profile(self, line: str, cell: str) -> None:
        """Profile the cell (shapes, memory, call sites) and record it on a Tape; store them as
        ``_prof`` and ``_prof_tape`` (or ``--name`` and ``NAME_tape``) and show the profile
        view linked to the cell's graph."""
        args = parse_argstring(self.profile, line)
        prof = profile(record_shapes=True, record_memory=True, with_stack=True)
        tape = Tape()
        try:
            with prof, tape:
                self._run_cell_body(cell)
        finally:
            self.shell.user_ns[args.name] = prof
            self.shell.user_ns[f"{args.name}_tape"] = tape
        display(_profile_view(prof, tape))

    @line_magic
    def gradcheck(self, line: str) -> bool:
        """``%gradcheck EXPR``: check analytical against numerical gradients.

        ``EXPR`` is evaluated in the user namespace and must give a ``(function, inputs)`` pair,
        ``inputs`` a tensor or a tuple of them (the ones to check with ``requires_grad=True``,
        ideally float64), e.g. ``%gradcheck (f, (x, y))``. Prints ``gradcheck passed`` or the
        reason it failed, and returns the verdict as a bool.
        """
        try:
            value = self.shell.ev(line)
        except Exception as exc:  # a bad expression is reported, not raised at the user
            print(f"gradcheck: could not evaluate {line.strip()!r}: {type(exc).__name__}: {exc}")
            return False
        if not (isinstance(value, tuple) and len(value) == 2 and callable(value[0])):
            print("gradcheck: EXPR must evaluate to a (function, inputs) pair")
            return False
        func, inputs = value
        try:
            gradcheck(func, inputs)
        except (GradcheckError, ValueError, RuntimeError) as exc:
            print(f"gradcheck failed: {exc}")
            return False
        print("gradcheck passed")
        return True


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics with ``ipython`` (``%load_ext tensorkit.notebook``)."""
    ipython.register_magics(TensorkitMagics)


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics registered by :func:`load_ipython_extension`."""
    table = ipython.magics_manager.magics
    for kind, names in (("cell", ("tape", "profile")), ("line", ("gradcheck",))):
        for name in names:
            table[kind].pop(name, None)
    ipython.magics_manager.registry.pop(TensorkitMagics.__name__, None)
